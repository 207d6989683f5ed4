"""The switch from shadow to enforce mode: an explicit moment, reported before anything merges.

The mode the daemon last ran in is kept in bot-state (safety.json's `mode`). The first full
tick in enforce mode after shadow merges nothing: in place of step 4 it judges again, under
enforce mode and on what GitHub shows now, every open PR that shadow mode approved ("would
merge") and every other PR that would merge now, posts ONE summary issue in the decision repo
listing each with its verdict, audits `mode.switched`, logs it, and only then records the new
mode. Merges start at the next tick (each judged again there, as always). Until the summary
is posted (the issue could not be written, or only targeted ticks ran) nothing merges.
"""

from __future__ import annotations

from dataclasses import dataclass

from capdaemon.daemon.core.context import Tick, TickDeps
from capdaemon.daemon.core.tickdata import _iso
from capdaemon.daemon.merging.merge import rejudge
from capdaemon.daemon.polling.tickpr import TickPR
from capdaemon.decide._text import md, ref, short_sha
from capdaemon.forge.errors import ForgeError
from capdaemon.stores.prrecord import PRRecord

KIND = "mode-switch"  # the summary issue's marker kind and the audit record's kind
MODE_KEY = "mode"  # safety.json: the mode the daemon last ran in ("": never recorded)


@dataclass(frozen=True)
class Judged:
    """One PR in the switch summary: what shadow mode said of it and what enforce says now."""

    ref: str
    quadrant: str
    shadow_head: str  # the head shadow mode approved ("": it did not)
    head: str  # the head now ("": not read this tick)
    ready: bool
    reasons: tuple[str, ...]

    def verdict(self) -> str:
        """The verdict in words."""
        if not self.head:
            return "not read in this tick: judged again before it can merge"
        moved = bool(self.shadow_head) and self.shadow_head != self.head
        lead = f"head moved to {short_sha(self.head)} since shadow approved it; " if moved else ""
        if self.ready:
            return lead + "merges at the next tick (judged again there)"
        return lead + "waits: " + "; ".join(md(r) for r in self.reasons)

    def to_json(self) -> dict[str, object]:
        """The audit record's entry."""
        return {
            "pr": self.ref,
            "quadrant": self.quadrant,
            "shadow_head": self.shadow_head,
            "head_sha": self.head,
            "ready": self.ready,
            "reasons": list(self.reasons),
        }


def switching_from(deps: TickDeps) -> str | None:
    """ "shadow" while a switch to enforce mode has not been reported yet, else None. A state
    that never recorded a mode (written by an older version) counts as shadow when an open PR
    carries a shadow approval: fail closed."""
    if deps.config.mode != "enforce":
        return None
    last = str(deps.safety.store[MODE_KEY])
    if last == "shadow":
        return last
    if not last and any(_shadow_approved(r) for r in deps.prs.records.values()):
        return "shadow"
    return None


def _shadow_approved(rec: PRRecord) -> bool:
    return rec.state == "open" and bool(rec.would_merge_head)


def holds_merges(t: Tick) -> bool:
    """Step 4's gate: True when nothing may merge in this tick (a switch to enforce mode not
    reported yet; a full tick reports it here). Otherwise records the mode and returns False."""
    deps = t.deps
    came_from = switching_from(deps)
    if came_from is None:
        deps.safety.store[MODE_KEY] = deps.config.mode
        return False
    if t.only is not None:  # a targeted tick: the next full tick reports the switch first
        deps.log.info("merge.held", reason=f"switch from {came_from} to enforce not reported yet")
        return True
    report_switch(t, came_from)
    return True


def judge_all(t: Tick) -> list[Judged]:
    """Every PR shadow mode approved, and every other open PR that would merge now, judged
    again under enforce mode (nothing acts)."""
    out: list[Judged] = []
    seen: set[str] = set()
    for s in t.ctx.seen:
        rec = s.rec
        seen.add(rec.ref)
        shadow_head = rec.would_merge_head if _shadow_approved(rec) else ""
        ready, reasons = _judge(t, s)
        if shadow_head or ready:
            out.append(Judged(rec.ref, _q(rec), shadow_head, s.pr.head_sha, ready, reasons))
    for rec in t.deps.prs.records.values():  # approved in shadow, not listed this tick
        if rec.ref not in seen and _shadow_approved(rec):
            out.append(Judged(rec.ref, _q(rec), rec.would_merge_head, "", False, ()))
    return sorted(out, key=lambda j: j.ref)


def _q(rec: PRRecord) -> str:
    return rec.quadrant.value if rec.quadrant else "?"


def _judge(t: Tick, s: TickPR) -> tuple[bool, tuple[str, ...]]:
    try:
        return rejudge(t, s)
    except ForgeError as exc:  # unknown: it waits, and the summary says why
        return False, (f"could not be read: {str(exc)[:120]}",)


def summary_title(came_from: str, judged: list[Judged]) -> str:
    """The summary issue's title."""
    ready = sum(1 for j in judged if j.ready)
    return (
        f"Switched from {came_from} to enforce mode: {len(judged)} PR(s) judged again, "
        f"{ready} will merge from the next tick"
    )


def summary_body(came_from: str, judged: list[Judged]) -> str:
    """The summary issue's body: what the switch means, then one row per PR."""
    lines = [
        f"## capdaemon switched from {came_from} to enforce mode",
        "",
        "This tick merged nothing. It judged again, under enforce mode and on what GitHub "
        f'shows now, every open PR that {came_from} mode approved ("would merge") and every '
        "other PR that would merge now. From the next tick on, capdaemon merges by itself: "
        'each PR below marked "merges at the next tick" merges then, unless something '
        "changes first (a push, a failing check, an owner's `/reject`, the breaker).",
        "",
        "To hold one PR, add one of its repo's blocking labels (`do-not-merge` by default). "
        "To hold them all, set `mode: shadow` in capdaemon.yml again: `capdaemon run` reloads "
        "its config at the start of each tick (SIGHUP reloads it at once). This issue stays "
        "open until an owner closes it.",
        "",
    ]
    if not judged:
        return "\n".join([*lines, "No open PR was approved in shadow mode or is ready now.", ""])
    lines += ["| PR | quadrant | approved in shadow | verdict now |", "|---|---|---|---|"]
    for j in judged:
        approved = f"yes, at {short_sha(j.shadow_head)}" if j.shadow_head else "no"
        lines.append(f"| {ref(j.ref)} | {md(j.quadrant)} | {approved} | {j.verdict()} |")
    return "\n".join([*lines, ""])


def report_switch(t: Tick, came_from: str) -> None:
    """Post the summary, audit `mode.switched`, log it, then record enforce mode. When the
    summary cannot be posted nothing is recorded: the next tick holds merges and tries again."""
    deps, now = t.deps, t.now
    judged = judge_all(t)
    repo = deps.decision_repo
    issue = None
    if repo is not None:
        try:
            posted = deps.forge.ensure_issue(
                repo,
                {"kind": KIND, "key": f"{came_from}-enforce-{_iso(now)}"},
                summary_title(came_from, judged),
                summary_body(came_from, judged),
            )
        except ForgeError as exc:
            t.report.errors.append(f"mode switch summary: {exc}")
            deps.log.warning("mode.switch_report_failed", error=str(exc)[:200])
            return
        issue = f"{repo}#{posted.number}"
        t.report.issues.append(f"{KIND}:{issue}")
    deps.actions_log.append(
        {
            "action": "mode.switched",
            "from": came_from,
            "to": "enforce",
            "issue": issue,
            "prs": [j.to_json() for j in judged],
            "merges_from": "the next tick",
        },
        now=now,
    )
    deps.log.warning(
        "mode.switched",
        came_from=came_from,
        to="enforce",
        issue=issue,
        judged=len(judged),
        ready=sum(1 for j in judged if j.ready),
        merges="from the next tick",
    )
    deps.safety.store[MODE_KEY] = "enforce"
