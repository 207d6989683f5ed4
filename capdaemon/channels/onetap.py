"""Telegram one-tap for tier-2 PRs: post the request, act on a tap within seconds, expire it.

GitHub stays the place of record: the `decision:one-tap` issue is opened first (the safety
net's tiers), and its entry in safety.json is what the merge step reads. This module mirrors
a pending entry into one Telegram message with two HMAC-bound buttons, and turns a verified
tap by a mapped owner into that entry's outcome (approve → merge at the bound head; reject →
a full ballot). Everything else (unknown user, forged or replayed data, another message, an
expired request, a moved head) is refused, answered and audited under the PR of the message
it was pressed on. Taps are read by the tick itself (`tick --once` under cron) or, under `run`,
by the poll job (capdaemon.channels.tgjob). State: `bot-state/telegram.json`, owner-only (the
getUpdates offset, the requests, and until when a 429 asked us to wait). Every state change
happens under the Ticker's busy lock, so a tap and a tick never write at the same time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from capdaemon.channels import callback, tgtext
from capdaemon.channels.config import one_tap_ttl
from capdaemon.channels.telegram import Tap, TelegramClient, TelegramError
from capdaemon.channels.tgstore import APPROVED, CLOSED, LIVE, TelegramStore
from capdaemon.config.channels import TelegramConfig
from capdaemon.logging import get_logger
from capdaemon.timefmt import parse_utc, utc_iso

KEEP_CLOSED = timedelta(days=7)

if TYPE_CHECKING:
    from capdaemon.audit import AuditLog
    from capdaemon.config import Config
    from capdaemon.forge.port import ForgePort
    from capdaemon.report import Report
    from capdaemon.stores.botstate import PRRecord, PRStore
    from capdaemon.stores.safety_state import SafetyStore

log = get_logger("capdaemon.telegram")


class SafetyView(Protocol):
    """What the desk uses of the safety net: its store (one-tap entries and tiers)."""

    @property
    def store(self) -> SafetyStore:
        """safety.json."""
        ...


class DeskHost(Protocol):
    """What the desk uses of the daemon it serves (the Ticker)."""

    config: Config
    prs: PRStore
    forge: ForgePort
    actions_log: AuditLog
    busy: threading.Lock  # held while a tick runs: a tap is handled between ticks
    clock: Callable[[], datetime]

    @property
    def safety(self) -> SafetyView:
        """The safety net."""
        ...

    @property
    def decision_repo(self) -> str | None:
        """Where decision issues go."""
        ...

    def tick(self) -> object:
        """Run one tick now."""
        ...


def _binding(rid: str, req: Mapping[str, Any]) -> callback.Binding:
    return callback.Binding(
        rid, str(req["pr"]), str(req["head_sha"]), int(req["chat_id"]), str(req["expires_at"])
    )


def _approved_outcome(
    req: Mapping[str, Any], rec: PRRecord | None, ref: str, title: str
) -> str | None:
    """What a request approved by a tap says once its PR moved on (None: not yet merged)."""
    by, sha = str(req.get("decided_by")), str(req["head_sha"])
    if rec is not None and rec.state == "merged":
        return tgtext.merged(ref, title, by, sha)
    if rec is None or rec.state != "open":
        return tgtext.void(ref, title, f"Approved by {by}, but the PR was closed unmerged.")
    if rec.head_sha != sha:
        return tgtext.void(ref, title, "Approved, but the head moved before the merge.")
    return None


def _why_not(
    t: DeskHost,
    req: Mapping[str, Any],
    rec: PRRecord | None,
    entry: Mapping[str, Any] | None,
    login: str,
) -> str | None:
    """Why a verified tap by a mapped owner still does not count (None: it counts)."""
    if rec is None or rec.state != "open":
        return "the PR is not open"
    try:  # the head right now, not as of the last tick: a push voids the tap at once
        status = t.forge.pull_status(rec.repo, rec.number)
    except Exception as exc:
        return f"could not read the PR to check its head ({type(exc).__name__})"
    if status.state != "open":
        return "the PR is not open"
    moved = f"the PR head moved from {str(req['head_sha'])[:7]}; the tap is void"
    if status.head_sha != req["head_sha"] or rec.head_sha != req["head_sha"]:
        return moved
    if not entry or entry["head_sha"] != req["head_sha"]:
        return moved
    if entry.get("state") != "pending":
        return f"the one-tap is already {entry.get('state')}"
    if login not in t.config.owners_for(rec.repo):
        return f"{login} is not an owner of {rec.repo}"
    if rec.author and login == rec.author.lower():
        return "the PR author's tap never counts"
    return None


class TelegramDesk:
    """One daemon's Telegram side: the client, the HMAC key, the config and telegram.json."""

    def __init__(
        self, config: TelegramConfig, client: TelegramClient, key: bytes, state_dir: Path
    ) -> None:
        self.config = config
        self.client = client
        self._key = key
        self.store = TelegramStore(state_dir)
        self.client.paused_until = max(client.paused_until, self.store.paused_until)
        self.errors = 0  # Telegram calls that failed (retried next tick)
        self.reads_in_tick = True  # False once the poll job (`run`) reads the updates
        self.on_live: Callable[[], None] | None = None  # wakes the poll job: a request is live
        self._lock = threading.Lock()  # one getUpdates at a time (a second one is a 409)

    # ------------------------------------------------------------------ from the tick
    def read_taps(self, t: DeskHost, now: datetime, report: Report | None = None) -> None:
        """At the start of a tick (unless the poll job reads them): the taps pressed since the
        last one, without waiting, so the tick that reads a tap also merges what it approves."""
        if self.reads_in_tick and not self._paused(report):
            self._read_pending(t, now, report)

    def sync(self, t: DeskHost, now: datetime, report: Report | None = None) -> None:
        """Close requests whose one-tap moved on, then post one for every pending one-tap head
        that has none. Runs inside the tick (busy lock held); a 429 stops it until its
        retry_after has passed."""
        if self._paused(report):
            return
        self.announce(t, report)
        self._prune(now)
        for ref, entry in sorted(t.safety.store["one_tap"].items()):
            rec = t.prs.records.get(ref)
            if (
                rec is None
                or rec.state != "open"
                or entry.get("state") != "pending"
                or entry.get("head_sha") != rec.head_sha
                or self.store.for_head(ref, rec.head_sha) is not None
            ):
                continue
            if self._paused(report):
                return
            self._open(t, ref, rec, entry, now, report)

    def announce(self, t: DeskHost, report: Report | None = None) -> None:
        """Edit each open request whose one-tap moved on (void, expired, merged) to say so."""
        one_tap = t.safety.store["one_tap"]
        for _rid, req in sorted(self.store.requests.items()):
            if req.get("state") not in (LIVE, APPROVED) or self._paused(report):
                continue
            outcome = self._outcome(req, t.prs.records.get(req["pr"]), one_tap.get(req["pr"]))
            if outcome is not None:
                self._close(req, outcome, report)

    @staticmethod
    def _outcome(
        req: Mapping[str, Any], rec: PRRecord | None, entry: Mapping[str, Any] | None
    ) -> str | None:
        """What a request's message should now say (None: unchanged)."""
        ref, title = str(req["pr"]), str(req.get("title") or (rec.title if rec else ""))
        if req.get("state") == APPROVED:
            return _approved_outcome(req, rec, ref, title)
        if rec is None or rec.state != "open":
            return tgtext.void(ref, title, "The PR is no longer open: this request is void.")
        if rec.head_sha != req["head_sha"] or not entry or entry["head_sha"] != rec.head_sha:
            return tgtext.void(ref, title, "The PR head moved: a new request follows.")
        if entry.get("state") == "expired":
            return tgtext.expired(ref, title, str(entry.get("reason") or ""))
        if entry.get("state") == "approved":
            how = entry.get("reason") or "by an owner"
            return tgtext.void(ref, title, f"Approved on GitHub: {how}.")
        return None

    def _read_pending(self, t: DeskHost, now: datetime, report: Report | None) -> None:
        """The taps pressed since the last read, without waiting (no long poll)."""
        if not self.store.live() or not self._lock.acquire(blocking=False):
            return
        try:
            taps = self.client.updates(self.store.offset, 0)
        except TelegramError as exc:
            self._failed(report, exc)
            return
        finally:
            self._lock.release()
        for tap in taps:
            self.take(t, tap, now)

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
        expires = utc_iso(parse_utc(str(entry["opened_at"]), "opened_at") + one_tap_ttl(t.config))
        if now >= parse_utc(expires, "expires_at"):
            return  # the tick expires it; no request to post
        rid = callback.new_request_id()
        req = {
            "pr": ref,
            "title": rec.title,
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
        text = tgtext.request_text(
            ref, rec.title, rec.quadrant or "", rec.head_sha, tier, issue, expires
        )
        try:
            req["message_id"] = self.client.send(
                self.config.chat_id,
                text,
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
        if self.on_live is not None:
            self.on_live()  # its taps are read from now on, not at the next idle look
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

    def _close(self, req: dict[str, Any], outcome: str, report: Report | None) -> None:
        try:
            self.client.edit(int(req["chat_id"]), int(req["message_id"]), outcome)
        except TelegramError as exc:
            self._failed(report, exc, pr=req["pr"])  # the buttons stay refused; edit retried
            if req.get("state") == APPROVED:
                return  # still approved: the "merged" edit is retried next tick
        else:
            req["edited"] = True
        req.update(state=CLOSED, outcome=outcome)
        self.store.save()

    def _paused(self, report: Report | None) -> bool:
        """True while a 429's retry_after holds the client (said once per tick)."""
        left = self.client.pause_left()
        if left > 0 and report is not None:
            line = f"telegram: paused {left:.0f} s more (the Bot API answered 429)"
            if line not in report.errors:
                report.errors.append(line)
        return left > 0

    def _failed(self, report: Report | None, exc: TelegramError, **kv: Any) -> None:
        self.errors += 1
        if self.client.paused_until > self.store.paused_until:
            self.store.paused_until = self.client.paused_until  # the next process waits too
            self.store.save()
        if report is not None:
            report.errors.append(str(exc))
        log.warning("telegram.failed", error=str(exc), **kv)

    # ------------------------------------------------------------------ the poll job
    def poll(self, t: DeskHost, now: Callable[[], datetime] | None = None) -> int:
        """Long-poll getUpdates while a request is live (none live → no request at all) and
        handle each tap under the Ticker's busy lock; the number of taps that counted."""
        if not self.store.live() or self.client.pause_left() > 0:
            return 0
        with self._lock:
            try:
                taps = self.client.updates(self.store.offset, self.config.poll_seconds)
            except TelegramError as exc:
                with t.busy:  # it may write telegram.json (a 429's pause)
                    self._failed(None, exc)
                return 0
            counted = 0
            for tap in taps:
                with t.busy:
                    counted += self.take(t, tap, (now or t.clock)())
            return counted

    def take(self, t: DeskHost, tap: Tap, now: datetime) -> bool:
        """Handle one update (a tap, or one that cannot be read: skipped and audited) and move
        the offset past it, whatever happened; True when a tap decided a one-tap."""
        try:
            if tap.error:
                self._skip(t, tap, now)
                return False
            return self.handle(t, tap, now)
        finally:
            self.store.offset = max(self.store.offset, tap.update_id + 1)
            self.store.save()

    def _skip(self, t: DeskHost, tap: Tap, now: datetime) -> None:
        """An update that is not a readable callback query: audited (under the PR of the
        message it came from, when that is one of ours), answered when it can be."""
        rid = self.store.by_message(tap.chat_id, tap.message_id)
        ref = self.store.requests[rid]["pr"] if rid else None
        t.actions_log.append(
            {
                "action": "telegram_update_skipped",
                "pr": ref,
                "request": rid,
                "update_id": tap.update_id,
                "kind": tap.kind,
                "reason": tap.error,
            },
            now=now,
        )
        log.warning("telegram.update_skipped", update_id=tap.update_id, reason=tap.error)
        if tap.query_id:
            self._answer(tap, "Not counted: the tap could not be read")

    def handle(self, t: DeskHost, tap: Tap, now: datetime) -> bool:
        """Count or refuse one tap (audited either way, under the PR of the message it was
        pressed on); True when it decided a one-tap."""
        login = self.config.login_of(tap.user_id)
        rid = self.store.by_message(tap.chat_id, tap.message_id)
        ref: str | None = self.store.requests[rid]["pr"] if rid else None

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
        if rid is None:  # not pressed on one of our messages: filed under the request it names
            named = self.store.requests.get(cb.request_id)
            rid, ref = (cb.request_id, str(named["pr"])) if named else (None, None)
            return refuse(
                "the button is not on this request's message" if named else "unknown request"
            )
        req = self.store.requests[rid]
        if cb.request_id != rid:
            return refuse("the button is not on this request's message")
        try:
            callback.verify(self._key, cb, _binding(rid, req))
        except callback.CallbackError as exc:
            return refuse(str(exc))
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
        why_not = _why_not(t, req, rec, entry, login)
        if why_not is not None or rec is None or entry is None:
            return refuse(why_not or "the PR is not open")
        if action == "approve":
            state, reason, by = "approved", f"Telegram tap by {login} at {utc_iso(now)}", login
            outcome, req_state = tgtext.approved(ref, rec.title, login, rec.head_sha), APPROVED
        else:
            state, reason, by = "expired", f"rejected on Telegram by {login}", None
            outcome, req_state = tgtext.rejected(ref, rec.title, login), CLOSED
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
        # republish L1.C3 (and merge) on the next tick, which runs at once
        t.prs.change(rec, fingerprint="")
        req.update(state=req_state, outcome=outcome, decided_by=login)
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
                entry["issue_closed"] = True  # the tick's close-out step need not ask again
                s.save()
            except Exception as exc:  # the record is in the log; the tick retries nothing here
                log.warning("telegram.issue_close_failed", pr=ref, error=str(exc)[:200])
        log.info("telegram.tap_counted", pr=ref, by=login, action=action)
        return True

    def _answer(self, tap: Tap, text: str) -> None:
        try:
            self.client.answer(tap.query_id, text)
        except TelegramError as exc:
            self._failed(None, exc)
