"""Telegram one-tap for tier-2 PRs: post the request, act on a tap within seconds, expire it.

GitHub stays the place of record: the `decision:one-tap` issue is opened first (the safety
net's tiers), and its entry in safety.json is what the merge step reads. This module mirrors
a pending entry into one Telegram message with two HMAC-bound buttons, and turns a verified
tap by a mapped owner into that entry's outcome (approve → merge at the bound head; reject →
a full ballot). Everything else (unknown user, forged or replayed data, another message, an
expired request, a moved head) is refused, answered and audited. State:
`bot-state/telegram.json` (the getUpdates offset and the requests). Every state change happens
under the Ticker's busy lock, so a tap and a tick never write at the same time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from capdaemon.channels import callback
from capdaemon.channels.config import read_secret
from capdaemon.channels.telegram import Tap, TelegramClient, TelegramError
from capdaemon.config.channels import TelegramConfig
from capdaemon.filenames import TELEGRAM_FILE
from capdaemon.logging import get_logger
from capdaemon.state import StateError, atomic_write_json, read_json
from capdaemon.timefmt import parse_utc, utc_iso

VERSION = 1
LIVE = "live"
CLOSED = "closed"
KEEP_CLOSED = timedelta(days=7)

if TYPE_CHECKING:
    from apscheduler.schedulers.base import BaseScheduler

    from capdaemon.audit import AuditLog
    from capdaemon.config import Config
    from capdaemon.daemon.botstate import PRRecord, PRStore
    from capdaemon.daemon.safety import SafetyNet
    from capdaemon.daemon.safety.common import Report
    from capdaemon.forge.port import ForgePort

log = get_logger("capdaemon.telegram")


class DeskHost(Protocol):
    """What the desk uses of the daemon it serves (the Ticker)."""

    config: Config
    prs: PRStore
    forge: ForgePort
    actions_log: AuditLog
    safety: SafetyNet
    busy: threading.Lock  # held while a tick runs: a tap is handled between ticks
    clock: Callable[[], datetime]

    @property
    def decision_repo(self) -> str | None:
        """Where decision issues go."""
        ...

    def tick(self) -> object:
        """Run one tick now."""
        ...


class TelegramStore:
    """`bot-state/telegram.json`: {"version", "offset", "requests": {id: request}}."""

    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / TELEGRAM_FILE
        raw = read_json(self.path, None) or {"version": VERSION, "offset": 0, "requests": {}}
        ok = (
            isinstance(raw, dict)
            and raw.get("version") == VERSION
            and isinstance(raw.get("offset"), int)
            and isinstance(raw.get("requests"), dict)
            and all(isinstance(r, dict) for r in raw["requests"].values())
        )
        if not ok:
            raise StateError(f"{self.path}: not a capdaemon telegram.json (version {VERSION})")
        self.offset: int = raw["offset"]
        self.requests: dict[str, dict[str, Any]] = raw["requests"]

    def save(self) -> None:
        """Write it atomically."""
        atomic_write_json(
            self.path, {"version": VERSION, "offset": self.offset, "requests": self.requests}
        )

    def live(self) -> list[tuple[str, dict[str, Any]]]:
        """Requests whose buttons still count (sorted by id)."""
        snapshot = self.requests.copy()  # one C-level copy: safe against the tick's writes
        return sorted((k, r) for k, r in snapshot.items() if r.get("state") == LIVE)

    def for_head(self, pr: str, head_sha: str) -> dict[str, Any] | None:
        """The request (live or not) opened for one PR head."""
        for r in self.requests.values():
            if r.get("pr") == pr and r.get("head_sha") == head_sha:
                return r
        return None


def _binding(rid: str, req: Mapping[str, Any]) -> callback.Binding:
    return callback.Binding(
        rid, str(req["pr"]), str(req["head_sha"]), int(req["chat_id"]), str(req["expires_at"])
    )


def request_text(ref: str, rec: PRRecord, tier: Mapping[str, Any], issue: str, expires: str) -> str:
    """The message owners see: PR, quadrant, tier reasons, files and size, deadline."""
    reasons = "\n".join(f"• {r}" for r in tier.get("reasons") or ()) or "• tier 2"
    size = f"{tier.get('files', '?')} files, {tier.get('lines', '?')} changed lines"
    return (
        f"One-tap approval: {ref}\n{rec.title}\n"
        f"Quadrant {rec.quadrant or '?'}, tier {tier.get('tier', 2)}:\n{reasons}\n"
        f"{size}; head {str(rec.head_sha)[:7]}\n"
        f"Record: {issue}\n"
        f"Approve or reject before {expires[:16].replace('T', ' ')} UTC; after that it becomes "
        f"a full owner ballot on GitHub."
    )


class TelegramDesk:
    """One daemon's Telegram side: the client, the HMAC key, the config and telegram.json."""

    def __init__(
        self, config: TelegramConfig, client: TelegramClient, key: bytes, state_dir: Path
    ) -> None:
        self.config = config
        self.client = client
        self._key = key
        self.store = TelegramStore(state_dir)
        self.errors = 0  # Telegram calls that failed (retried next tick)
        self._lock = threading.Lock()
        self._quiet_until = 0.0  # monotonic time before which a 429's retry_after holds calls

    # ------------------------------------------------------------------ from the tick
    def sync(self, t: DeskHost, now: datetime, report: Report | None = None) -> None:
        """Close requests whose one-tap moved on (edit the message to say why), then post one
        for every pending one-tap head that has none. Runs inside the tick (busy lock held)."""
        if self._quiet():
            return  # the Bot API asked for a pause (429): the next tick catches up
        one_tap = t.safety.store["one_tap"]
        for _rid, req in self.store.live():
            rec = t.prs.records.get(req["pr"])
            entry = one_tap.get(req["pr"])
            if rec is None or rec.state != "open":
                outcome = "The PR is no longer open: this request is void."
            elif rec.head_sha != req["head_sha"] or not entry or entry["head_sha"] != rec.head_sha:
                outcome = "The PR head moved: this request is void (a new one follows)."
            elif entry.get("state") == "expired":
                outcome = f"Closed: {entry.get('reason') or 'expired'}. It is now a full ballot."
            elif entry.get("state") == "approved":
                outcome = f"Approved: {entry.get('reason') or 'by an owner'}."
            else:
                continue
            self._close(t, req, outcome, report)
        self._prune(now)
        for ref, entry in sorted(one_tap.items()):
            rec = t.prs.records.get(ref)
            if (
                rec is None
                or rec.state != "open"
                or entry.get("state") != "pending"
                or entry.get("head_sha") != rec.head_sha
                or self.store.for_head(ref, rec.head_sha) is not None
            ):
                continue
            self._open(t, ref, rec, entry, now, report)

    def _prune(self, now: datetime) -> None:
        """Forget closed requests a week past their deadline (their taps are long refused)."""
        old = [
            rid
            for rid, r in self.store.requests.items()
            if r.get("state") == CLOSED
            and parse_utc(str(r["expires_at"]), "expires_at") < now - KEEP_CLOSED
        ]
        for rid in old:
            del self.store.requests[rid]
        if old:
            self.store.save()

    def _open(
        self,
        t: DeskHost,
        ref: str,
        rec: PRRecord,
        entry: Mapping[str, Any],
        now: datetime,
        report: Report | None,
    ) -> None:
        from capdaemon.channels.config import one_tap_ttl

        expires = utc_iso(parse_utc(str(entry["opened_at"]), "opened_at") + one_tap_ttl(t.config))
        if now >= parse_utc(expires, "expires_at"):
            return  # the tick expires it; no request to post
        rid = callback.new_request_id()
        req = {
            "pr": ref,
            "head_sha": rec.head_sha,
            "chat_id": self.config.chat_id,
            "message_id": None,
            "expires_at": expires,
            "issue": entry.get("issue"),
            "state": LIVE,
        }
        b = _binding(rid, req)
        tier = t.safety.store["tiers"].get(ref) or {}
        issue = f"{t.decision_repo}#{entry.get('issue')}"
        try:
            req["message_id"] = self.client.send(
                self.config.chat_id,
                request_text(ref, rec, tier, issue, expires),
                [
                    ("✅ Approve", callback.sign(self._key, b, "approve")),
                    ("❌ Reject", callback.sign(self._key, b, "reject")),
                ],
            )
        except TelegramError as exc:
            self._failed(report, exc, pr=ref)
            return  # retried next tick; the GitHub one-tap issue still counts
        self.store.requests[rid] = req
        self.store.save()
        t.actions_log.append(
            {
                "action": "telegram_request",
                "pr": ref,
                "head_sha": rec.head_sha,
                "request": rid,
                "chat_id": self.config.chat_id,
                "message_id": req["message_id"],
                "expires_at": expires,
            },
            now=now,
        )

    def _close(self, t: DeskHost, req: dict[str, Any], outcome: str, report: Report | None) -> None:
        try:
            self.client.edit(int(req["chat_id"]), int(req["message_id"]), outcome)
        except TelegramError as exc:
            self._failed(report, exc, pr=req["pr"])  # the buttons stay refused; edit retried
        else:
            req["edited"] = True
        req.update(state=CLOSED, outcome=outcome)
        self.store.save()

    def _quiet(self) -> bool:
        """True while the Bot API asked us (429 retry_after) to wait."""
        return time.monotonic() < self._quiet_until

    def _failed(self, report: Report | None, exc: TelegramError, **kv: Any) -> None:
        self.errors += 1
        if exc.retry_after:
            self._quiet_until = time.monotonic() + exc.retry_after
        if report is not None:
            report.errors.append(str(exc))
        log.warning("telegram.failed", error=str(exc), **kv)

    # ------------------------------------------------------------------ the poll job
    def poll(self, t: DeskHost, now: Callable[[], datetime] | None = None) -> int:
        """Long-poll getUpdates while a request is live (none live → no request at all) and
        handle each tap under the Ticker's busy lock; the number of taps that counted."""
        if not self.store.live() or self._quiet():
            return 0
        with self._lock:
            try:  # 1 s shorter than the job's interval: the job never overruns it
                taps = self.client.updates(self.store.offset, max(1, self.config.poll_seconds - 1))
            except TelegramError as exc:
                self._failed(None, exc)
                return 0
            counted = 0
            for tap in taps:
                with t.busy:
                    when = (now or t.clock)()
                    counted += self.handle(t, tap, when)
                    self.store.offset = max(self.store.offset, tap.update_id + 1)
                    self.store.save()
            return counted

    def handle(self, t: DeskHost, tap: Tap, now: datetime) -> bool:
        """Count or refuse one tap (audited either way); True when it decided a one-tap."""
        if not tap.query_id:
            return False  # not a callback query (allowed_updates asks for those only)
        login = self.config.login_of(tap.user_id)
        ref: str | None = None
        rid: str | None = None

        def refuse(reason: str) -> bool:
            t.actions_log.append(
                {
                    "action": "telegram_tap",
                    "pr": ref,
                    "request": rid,
                    "user": tap.user_id,
                    "by": login,
                    "counted": False,
                    "reason": reason,
                },
                now=now,
            )
            log.warning("telegram.tap_refused", pr=ref, user=tap.user_id, reason=reason)
            self._answer(tap, f"Not counted: {reason}")
            return False

        try:
            cb = callback.parse(tap.data)
        except callback.CallbackError as exc:
            return refuse(str(exc))
        rid = cb.request_id
        req = self.store.requests.get(rid)
        if req is None:
            return refuse("unknown request")
        ref = str(req["pr"])
        try:
            callback.verify(self._key, cb, _binding(rid, req))
        except callback.CallbackError as exc:
            return refuse(str(exc))
        if (tap.chat_id, tap.message_id) != (req["chat_id"], req["message_id"]):
            return refuse("the button is not on this request's message")
        if login is None:
            return refuse(f"Telegram user {tap.user_id} is not mapped to an owner")
        if req.get("state") != LIVE:
            return refuse(f"the request is closed ({req.get('outcome', '')})")
        if now >= parse_utc(str(req["expires_at"]), "expires_at"):
            return refuse(f"the request expired at {req['expires_at']}")
        return self._count(t, tap, cb.action, rid, req, login, now, refuse)

    def _count(
        self,
        t: DeskHost,
        tap: Tap,
        action: str,
        rid: str,
        req: dict[str, Any],
        login: str,
        now: datetime,
        refuse: Callable[[str], bool],
    ) -> bool:
        ref = str(req["pr"])
        rec = t.prs.records.get(ref)
        s = t.safety.store
        entry = s["one_tap"].get(ref)
        if rec is None or rec.state != "open":
            return refuse("the PR is not open")
        try:  # the head right now, not as of the last tick: a push voids the tap at once
            status = t.forge.pull_status(rec.repo, rec.number)
        except Exception as exc:
            return refuse(f"could not read the PR to check its head ({type(exc).__name__})")
        if status.state != "open":
            return refuse("the PR is not open")
        if status.head_sha != req["head_sha"]:
            return refuse(f"the PR head moved from {str(req['head_sha'])[:7]}; the tap is void")
        if rec.head_sha != req["head_sha"] or not entry or entry["head_sha"] != req["head_sha"]:
            return refuse(f"the PR head moved from {str(req['head_sha'])[:7]}; the tap is void")
        if entry.get("state") != "pending":
            return refuse(f"the one-tap is already {entry.get('state')}")
        if login not in t.config.owners_for(rec.repo):
            return refuse(f"{login} is not an owner of {rec.repo}")
        if rec.author and login == rec.author.lower():
            return refuse("the PR author's tap never counts")
        if action == "approve":
            state, reason, by = "approved", f"Telegram tap by {login} at {utc_iso(now)}", login
            outcome = f"Approved by {login} (Telegram): merging head {rec.head_sha[:7]}."
        else:
            state, reason, by = "expired", f"rejected on Telegram by {login}", None
            outcome = f"Rejected by {login} (Telegram): it is now a full owner ballot."
        head = {"head_sha": rec.head_sha, "request": rid, "user": tap.user_id}
        t.actions_log.append(
            {"action": "telegram_tap", "pr": ref, **head, "by": login, "counted": True,
             "reason": f"{action} by owner {login}"},
            now=now,
        )  # fmt: skip
        t.actions_log.append(
            {"action": "one_tap", "pr": ref, "head_sha": rec.head_sha, "status": state,
             "by": by, "reason": reason, "channel": "telegram"},
            now=now,
        )  # fmt: skip
        entry.update(state=state, reason=reason, by=by)
        s.save()
        rec.fingerprint = ""  # republish L1.C3 (and merge) on the next tick, which runs at once
        t.prs.save(rec)
        req.update(state=CLOSED, outcome=outcome, decided_by=login)
        self.store.save()
        self._answer(tap, outcome)
        try:
            self.client.edit(int(req["chat_id"]), int(req["message_id"]), outcome)
            req["edited"] = True
        except TelegramError as exc:
            self._failed(None, exc, pr=ref)
        if entry.get("issue") and t.decision_repo:
            try:
                t.forge.close_issue(t.decision_repo, int(entry["issue"]), f"{outcome}")
            except Exception as exc:  # the record is in the log; the tick retries nothing here
                log.warning("telegram.issue_close_failed", pr=ref, error=str(exc)[:200])
        log.info("telegram.tap_counted", pr=ref, by=login, action=action)
        return True

    def _answer(self, tap: Tap, text: str) -> None:
        try:
            self.client.answer(tap.query_id, text)
        except TelegramError as exc:
            self._failed(None, exc)


# ============================================================================ wiring
def build_desk(
    config: Config, state_dir: Path, env: Mapping[str, str] | None = None
) -> TelegramDesk | None:
    """The desk for a config with `telegram:` (None without). ValueError (one line) for a
    missing token or key or a token the API refuses (401); an unreachable API only warns."""
    tg: TelegramConfig | None = config.channels.telegram
    if tg is None:
        return None
    config_dir = Path(config.config_dir) if config.config_dir else None
    token, _where = read_secret(
        tg.token_file, tg.token_env, "telegram.token_file", "bot token", env, config_dir
    )
    key = callback.load_key(tg.hmac_key_file, tg.hmac_key_env, env=env, config_dir=config_dir)
    try:
        client = TelegramClient(tg.api_url, token.decode("utf-8"))
    except (TelegramError, UnicodeDecodeError) as exc:
        raise ValueError(f"telegram: {exc}") from None
    try:
        client.get_me()
    except TelegramError as exc:
        if exc.code == 401:
            raise ValueError(f"{exc} (telegram.token_file / {tg.token_env})") from None
        log.warning("telegram.unreachable", error=str(exc))
    return TelegramDesk(tg, client, key, Path(state_dir))


def add_poll_job(
    sched: BaseScheduler, ticker: DeskHost, *, interval_seconds: float | None = None
) -> None:
    """Schedule the getUpdates job on its own executor, every `telegram.poll_seconds`: idle
    (0 requests) when nothing is live, else one long poll 1 s shorter than the interval (so
    runs never overlap); a counted tap runs a tick at once so the merge follows in seconds."""
    desk = ticker.safety.channels.desk
    if desk is None:
        return
    from apscheduler.executors.pool import ThreadPoolExecutor

    sched.add_executor(ThreadPoolExecutor(1), "telegram")

    def job() -> None:
        try:
            if desk.poll(ticker):
                ticker.tick()
        except StateError:
            raise
        except Exception as exc:  # a dead channel never stops the daemon
            log.exception("telegram.poll_failed", error=f"{type(exc).__name__}: {exc}")

    interval = interval_seconds or float(desk.config.poll_seconds)
    sched.add_job(
        job,
        "interval",
        seconds=interval,
        id="telegram",
        executor="telegram",
        max_instances=1,
        coalesce=True,
        next_run_time=datetime.now(UTC) + timedelta(seconds=interval),
    )
