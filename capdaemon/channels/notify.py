"""Owner notifications through apprise: one URL per channel, at-most-once per channel and event.

What owners must not miss is read from actions.jsonl after the GitHub write it describes
succeeded (a D ballot or scope-violation issue opened, an escalation's issue opened, an
incident, the breaker tripped or reset, the daily digest posted); `finish-task` adds its
escalation directly. Each notification has an id (the audit record's, or the escalation's) and
lives in `bot-state/notifications.json` until every channel took it: a failed channel is logged,
counted and retried next tick, a channel that took it is never sent it again. Sends are bounded
(`notifications.timeout_seconds` per send) and never raise into the tick.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capdaemon.config.channels import NotificationsConfig
from capdaemon.decide.labels import IssueKind
from capdaemon.filenames import DIGEST_DIR, NOTIFICATIONS_FILE, NOTIFICATIONS_LOCK_FILE
from capdaemon.jsonl import AuditCorruptError
from capdaemon.logging import get_logger
from capdaemon.state import StateError, atomic_write_json, file_lock, read_json
from capdaemon.stores.safety_state import new_actions
from capdaemon.timefmt import utc_iso

VERSION = 1
KEEP_SENT = 2000  # ids of delivered notifications remembered (dedup window)

if TYPE_CHECKING:
    from capdaemon.config import Config
    from capdaemon.report import Report

log = get_logger("capdaemon.notify")


@dataclass(frozen=True)
class Notice:
    """One notification: a stable id, a title and a body."""

    id: str
    title: str
    body: str


def channel_id(url: str) -> str:
    """A channel's key in state: a hash of its URL (URLs hold secrets; never stored)."""
    return hashlib.sha256(url.encode("utf-8")).hexdigest()[:12]


def issue_link(ref: str, api_base: str) -> str:
    """A web link for `owner/repo#N` on github.com; the ref itself elsewhere."""
    if api_base.rstrip("/") != "https://api.github.com" or "#" not in ref:
        return ref
    repo, number = ref.rsplit("#", 1)
    return f"https://github.com/{repo}/issues/{number}"


def _digest_summary(state_dir: Path | None, name: object) -> str:
    """The digest's section headings ("Merges (3)", ...), read from bot-state/digests/."""
    if state_dir is None or not isinstance(name, str) or "/" in name or name.startswith("."):
        return ""
    try:
        text = (Path(state_dir) / DIGEST_DIR / name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
    heads = [ln[3:].strip() for ln in text.splitlines() if ln.startswith("## ")]
    return "; ".join(h for h in heads if h != "Quadrants")


def notice_for(
    rec: Mapping[str, Any], state_dir: Path | None = None, api_base: str = ""
) -> Notice | None:
    """The notification an actions.jsonl record calls for (None: not one owners need)."""
    action = rec.get("action")
    seq = rec.get("seq")
    pr = rec.get("pr") or ""
    issue = issue_link(str(rec.get("issue") or ""), api_base)
    kind = rec.get("kind")
    if action == "issue_opened" and kind == IssueKind.BALLOT:
        return Notice(f"a{seq}", f"Owner ballot opened: {pr}", f"{pr} waits for an owner: {issue}")
    if action == "issue_opened" and kind == IssueKind.SCOPE_VIOLATION:
        return Notice(f"a{seq}", f"Scope violation: {pr}", f"{pr} changed paths outside its task's "
                      f"scope: {issue}")  # fmt: skip
    if action == "escalation_notified":
        esc = rec.get("escalation")
        return Notice(
            f"escalation:{esc}",
            f"Escalation: task {rec.get('task_id')}",
            f"Escalation {esc} of task {rec.get('task_id')}: {issue}",
        )
    if isinstance(action, str) and action.startswith("breaker."):
        return _breaker_notice(action, rec)
    if action == "digest" and issue:
        summary = _digest_summary(state_dir, rec.get("file"))
        return Notice(
            f"a{seq}",
            f"capdaemon digest {rec.get('date')}",
            f"The daily digest: {issue}" + (f"\n{summary}" if summary else ""),
        )
    return None


def _breaker_notice(action: str, rec: Mapping[str, Any]) -> Notice | None:
    """The notice of a circuit-breaker record (an incident, the trip, the reset)."""
    seq = rec.get("seq")
    if action == "breaker.incident":
        return Notice(
            f"a{seq}",
            f"Incident: {rec.get('incident_kind')}",
            f"{rec.get('detail', '')} ({rec.get('ref') or 'no ref'}); "
            f"{rec.get('in_window')} in the breaker window",
        )
    if action == "breaker.tripped":
        return Notice(
            f"a{seq}",
            "Circuit breaker tripped: merges stopped",
            f"{rec.get('incidents')} incidents in {rec.get('window_hours')} h; an owner resets "
            f"it on the incident issue or with `capdaemon breaker reset`",
        )
    if action == "breaker.reset":
        who = rec.get("actor") or "an owner"
        return Notice(f"a{seq}", "Circuit breaker reset: merges resume", f"Reset by {who}")
    return None


class Outbox:
    """`bot-state/notifications.json`: the actions cursor, pending notices, delivered ids.

    Read-modify-write under a side-file flock, so the daemon and `finish-task` (another
    process) never write it at once. A corrupt file raises StateError and is never overwritten.
    """

    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / NOTIFICATIONS_FILE
        self.lock_path = Path(state_dir) / NOTIFICATIONS_LOCK_FILE

    def _read(self) -> dict[str, Any]:
        raw = read_json(self.path, None)
        if raw is None:
            return {"version": VERSION, "cursor": None, "pending": {}, "sent": []}
        ok = (
            isinstance(raw, dict)
            and raw.get("version") == VERSION
            and isinstance(raw.get("pending"), dict)
            and isinstance(raw.get("sent"), list)
        )
        if not ok:
            raise StateError(f"{self.path}: not a capdaemon notifications.json (version {VERSION})")
        data: dict[str, Any] = raw
        return data

    def _write(self, data: dict[str, Any]) -> None:
        data["sent"] = data["sent"][-KEEP_SENT:]
        atomic_write_json(self.path, data)

    def _add(
        self, data: dict[str, Any], notices: Iterable[Notice], chans: list[str], now: datetime
    ) -> int:
        known = set(data["pending"]) | set(data["sent"])
        added = 0
        for n in notices:
            if n.id in known:
                continue
            data["pending"][n.id] = {
                "title": n.title,
                "body": n.body,
                "created_at": utc_iso(now),
                "channels": chans,
                "attempts": 0,
            }
            known.add(n.id)
            added += 1
        return added

    def enqueue(self, notices: Iterable[Notice], channels: Iterable[str], now: datetime) -> int:
        """Add notices not seen before (by id); the number added."""
        with file_lock(self.lock_path):
            data = self._read()
            added = self._add(data, notices, sorted(channels), now)
            if added:
                self._write(data)
        return added

    def pull_actions(
        self,
        state_dir: Path,
        channels: Iterable[str],
        now: datetime,
        api_base: str = "",
        *,
        start_only: bool = False,
    ) -> int:
        """Turn new actions.jsonl records into notices, and move the cursor past them, in one
        write (a crash loses nothing and repeats nothing). The first call only sets the
        cursor, so turning notifications on does not replay history. `start_only` sets the
        cursor when there is none and does nothing else: the daemon calls it before a tick's
        first write, so what the first tick records is notified at its end."""
        with file_lock(self.lock_path):
            data = self._read()
            cursor = data.get("cursor")
            if start_only and cursor is not None:
                return 0
            records, data["cursor"] = new_actions(state_dir, cursor or {"seq": 0, "offset": 0})
            added = 0
            if cursor is not None:
                found = (notice_for(r, state_dir, api_base) for r in records)
                notices = (n for n in found if n is not None)
                added = self._add(data, notices, sorted(channels), now)
            if added or data["cursor"] != cursor:
                self._write(data)
        return added

    def pending(self) -> dict[str, dict[str, Any]]:
        """The notices still owed to some channel."""
        with file_lock(self.lock_path):
            return dict(self._read()["pending"])

    def settle(self, nid: str, delivered: Iterable[str], error: str | None) -> None:
        """Record a send attempt: channels that took it are done; all done → delivered."""
        with file_lock(self.lock_path):
            data = self._read()
            item = data["pending"].get(nid)
            if item is None:
                return
            item["channels"] = [c for c in item["channels"] if c not in set(delivered)]
            item["attempts"] = int(item.get("attempts", 0)) + 1
            if error:
                item["last_error"] = error
            if not item["channels"]:
                del data["pending"][nid]
                data["sent"].append(nid)
            self._write(data)


class Notifier:
    """Sends the outbox through apprise; counts failures (retried next time)."""

    def __init__(self, config: NotificationsConfig, state_dir: Path, api_base: str = "") -> None:
        self.config = config
        self.api_base = api_base
        self.outbox = Outbox(state_dir)
        self.state_dir = Path(state_dir)
        self.failures = 0
        self.sent = 0
        self._channels = {channel_id(u): u for u in config.urls}

    @property
    def enabled(self) -> bool:
        """True when at least one channel is configured."""
        return bool(self._channels)

    def _send_one(self, url: str, title: str, body: str) -> bool:
        import apprise

        plugin = apprise.Apprise.instantiate(url, suppress_exceptions=True)
        if not plugin:
            return False
        timeout = float(self.config.timeout_seconds)
        for attr in ("socket_connect_timeout", "socket_read_timeout"):
            if hasattr(plugin, attr):
                setattr(plugin, attr, min(timeout, getattr(plugin, attr) or timeout))
        return bool(plugin.notify(body=body, title=title))

    def flush(
        self, budget_seconds: float | None = None, only: Iterable[str] | None = None
    ) -> list[str]:
        """Send what is pending (or only the ids given), channel by channel, within the
        budget; the ids fully delivered."""
        if not self.enabled:
            return []
        budget = budget_seconds if budget_seconds is not None else 3 * self.config.timeout_seconds
        started = time.monotonic()
        done: list[str] = []
        wanted = set(only) if only is not None else None
        for nid, item in sorted(self.outbox.pending().items()):
            if wanted is not None and nid not in wanted:
                continue
            if time.monotonic() - started > budget:
                break  # the rest goes next tick
            delivered, errors = [], []
            for ch in item.get("channels", []):
                url = self._channels.get(ch)
                if url is None:  # a channel removed from the config: nothing to owe it
                    delivered.append(ch)
                    continue
                try:
                    ok = self._send_one(url, str(item["title"]), str(item["body"]))
                except Exception as exc:  # a plugin bug never stops a tick
                    ok, err = False, f"{type(exc).__name__}"
                else:
                    err = "" if ok else "the channel refused or did not answer"
                if ok:
                    delivered.append(ch)
                    self.sent += 1
                else:
                    self.failures += 1
                    errors.append(f"{ch}: {err}")
                    log.warning("notify.failed", notification=nid, channel=ch, error=err)
            self.outbox.settle(nid, delivered, "; ".join(errors) or None)
            if not errors:
                done.append(nid)
        return done

    def start(self, now: datetime) -> None:
        """Before a tick's first write: start the actions cursor if notifications are new."""
        if self.enabled:
            self.outbox.pull_actions(self.state_dir, self._channels, now, start_only=True)

    def tick(self, now: datetime) -> list[str]:
        """The daemon's per-tick step: pull new events from the audit log, then flush."""
        if not self.enabled:
            return []
        self.outbox.pull_actions(self.state_dir, self._channels, now, self.api_base)
        return self.flush()

    def alert(self, notice: Notice, now: datetime) -> tuple[list[str], list[str]]:
        """Send one notice now (finish-task): (channels told, channels that failed — retried by
        the daemon's next tick)."""
        if not self.enabled:
            return [], []
        self.outbox.enqueue([notice], self._channels, now)
        self.flush(only=[notice.id])
        left = self.outbox.pending().get(notice.id, {}).get("channels", [])
        told = [c for c in self._channels if c not in left]
        return told, list(left)


def channel_names(urls: Iterable[str]) -> dict[str, str]:
    """channel id → a printable name (scheme and host, never the secret parts)."""
    from urllib.parse import urlsplit

    out = {}
    for u in urls:
        parts = urlsplit(u)
        out[channel_id(u)] = f"{parts.scheme}://{parts.hostname or ''}"
    return out


class NotifyStep:
    """The tick's last step for one daemon: its Notifier, built on first use."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.notifier: Notifier | None = None

    def _notifier(self, state_dir: Path) -> Notifier | None:
        cfg = self.config.channels.notifications
        if not cfg.urls:
            return None
        if self.notifier is None:
            self.notifier = Notifier(cfg, state_dir, self.config.github.base_url)
        return self.notifier

    def start(self, state_dir: Path, now: datetime) -> None:
        """At the start of a tick, before anything is recorded: the first tick with
        notifications on starts its cursor here, so none of that tick's notices is lost.
        Never raises but for a corrupt state file (the tick's own steps report the rest)."""
        notifier = self._notifier(state_dir)
        if notifier is None:
            return
        try:
            notifier.start(now)
        except StateError:
            raise
        except Exception as exc:  # a corrupt log is reported by the audit gate and run()
            log.warning("notify.start_failed", error=f"{type(exc).__name__}: {exc}"[:300])

    def run(self, state_dir: Path, now: datetime, report: Report | None = None) -> None:
        """Notify owners of what this tick (or the CLI) recorded. Bounded in time; never
        raises (a dead channel never stops a tick)."""
        notifier = self._notifier(state_dir)
        if notifier is None:
            return
        before = notifier.failures
        try:
            notifier.tick(now)
        except AuditCorruptError as exc:
            # The audit gate stops the tick on a corrupt log (incident, exit 3) and this step
            # runs after it even then: told here, not raised, so the gate's error is the one
            # the operator sees. The cursor stays before the bad line: nothing is skipped.
            log.error("notify.log_corrupt", error=str(exc)[:300])
            if report is not None:
                report.errors.append(f"notifications: {exc}")
            return
        except StateError:
            raise
        except Exception as exc:
            notifier.failures += 1
            log.warning("notify.step_failed", error=f"{type(exc).__name__}: {exc}"[:300])
        failed = notifier.failures - before
        if failed and report is not None:
            report.errors.append(f"notifications: {failed} send(s) failed; retried next tick")
