"""The daily digest (SPEC 7): its schedule and its Markdown (with a Mermaid pie of quadrants)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from capdaemon.anchors import Anchor
from capdaemon.decide._common import aware, dt_to_json
from capdaemon.decide._text import format_age, link, md, ref
from capdaemon.decide.breaker import BreakerState
from capdaemon.decide.burnin import BURN_IN_DAYS, BurnInState, BurnInStatus
from capdaemon.decide.reaction import ReactionStats, describe
from capdaemon.decide.targeted import TargetedCounts
from capdaemon.model import Quadrant

# ----------------------------------------------------------------------------- schedule


def _zone(tz: str) -> ZoneInfo:
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {tz!r}") from exc


def parse_digest_time(digest_time: str) -> time:
    """ "HH:MM" (24 h) → time, else ValueError."""
    m = re.fullmatch(r"([01]?\d|2[0-3]):([0-5]\d)", digest_time or "")
    if not m:
        raise ValueError(f"digest_time must be HH:MM (24 h), got {digest_time!r}")
    return time(int(m.group(1)), int(m.group(2)))


def digest_due(
    now: datetime, last_sent_date: date | None, digest_time: str, tz: str
) -> date | None:
    """The local date whose digest is due now, or None.

    Due when the local wall clock in `tz` is at or after `digest_time` and the digest
    for today's local date has not been sent. So a restart at 09:05 still sends it,
    it is never sent twice for one local date, and a missed day is not sent late the
    next morning before 09:00 (only today's digest is ever due). In a DST gap the
    first wall-clock time after `digest_time` counts.
    """
    local = aware(now, "now").astimezone(_zone(tz))
    at = parse_digest_time(digest_time)
    today = local.date()
    if last_sent_date is not None and last_sent_date >= today:
        return None
    return today if local.time().replace(tzinfo=None) >= at else None


def digest_period(day: date, digest_time: str, tz: str) -> tuple[datetime, datetime]:
    """The instants a digest for `day` covers: the previous day's digest time to this day's.

    23 or 25 hours long across a DST change. Both ends are aware (in `tz`).
    """
    zone = _zone(tz)
    at = parse_digest_time(digest_time)
    end = datetime.combine(day, at, tzinfo=zone)
    start = datetime.combine(day - timedelta(days=1), at, tzinfo=zone)
    return start, end


def digest_day(now: datetime, digest_time: str, tz: str, *, ended: bool) -> date:
    """The digest date whose period holds `now` (ended=False: the one in progress), or the
    latest whose period has ended (ended=True)."""
    local = now.astimezone(_zone(tz))
    passed = local.time().replace(tzinfo=None) >= parse_digest_time(digest_time)
    today = local.date()
    if ended:
        return today if passed else today - timedelta(days=1)
    return today + timedelta(days=1) if passed else today


# ----------------------------------------------------------------------------- facts


@dataclass(frozen=True)
class DigestMerge:
    """A PR merged (or, in `DigestFacts.would_merges`, that shadow mode would have merged)."""

    ref: str
    quadrant: Quadrant
    title: str = ""
    merged_at: datetime | None = None
    url: str = ""


@dataclass(frozen=True)
class DigestBallot:
    """An open owner ballot (or one-tap request) and when it opened."""

    ref: str
    opened_at: datetime
    url: str = ""
    title: str = ""
    kind: str = "ballot"  # ballot | one-tap | deferred
    issue: str = ""  # the ballot (or one-tap) issue, `owner/repo#N`


@dataclass(frozen=True)
class DigestItem:
    """A line about a PR or issue: auto-closed reviews, scope violations, escalations, attention."""

    ref: str
    detail: str = ""
    url: str = ""


@dataclass(frozen=True)
class RateUse:
    """GitHub rate-limit use at digest time."""

    remaining: int
    limit: int
    used: int | None = None


@dataclass(frozen=True)
class DigestFacts:
    """Everything the digest says, gathered by the daemon for one local date."""

    date: date
    timezone: str
    period: tuple[datetime, datetime] | None = None  # the instants covered (start, end)
    quadrant_counts: Mapping[Quadrant, int] = field(default_factory=dict)
    merges: tuple[DigestMerge, ...] = ()  # merged, for real
    would_merges: tuple[DigestMerge, ...] = ()  # shadow mode's "would merge", one per PR
    pending_ballots: tuple[DigestBallot, ...] = ()
    auto_closed: tuple[DigestItem, ...] = ()
    scope_violations: tuple[DigestItem, ...] = ()
    escalations: tuple[DigestItem, ...] = ()
    attention: tuple[DigestItem, ...] = ()  # P1 findings
    breaker: BreakerState = field(default_factory=BreakerState)
    burn_in: BurnInState = field(default_factory=BurnInState)
    burn_in_days: float = BURN_IN_DAYS
    errors: tuple[str, ...] = ()
    rate_limit: RateUse | None = None
    shadow: bool = False
    audit_anchors: tuple[Anchor, ...] = ()  # each log's newest entry at render time
    audit_notes: tuple[str, ...] = ()  # logs not anchored, and why ("actions.jsonl: no entries")
    clock_drift: str | None = None  # how far this machine's clock is off GitHub's, when it is
    reactions: tuple[ReactionStats, ...] = ()  # event → action per kind over the period
    targeted: TargetedCounts | None = None  # the change detector's ticks (None: never run)
    catch_up: bool = False  # posted at start-up: the daemon was not running at digest time


# ----------------------------------------------------------------------------- rendering


def _items(items: tuple[DigestItem, ...]) -> list[str]:
    if not items:
        return ["None."]
    out = []
    for i in items:
        if not i.ref:  # nothing to link (an escalation without a PR): the detail alone
            out.append(f"- {md(i.detail) or 'unnamed'}")
            continue
        head = link(i.ref, i.url) if i.url else ref(i.ref)
        out.append(f"- {head}" + (f": {md(i.detail)}" if i.detail else ""))
    return out


def _breaker_lines(b: BreakerState, tripped_first: bool) -> list[str]:
    if b.tripped:
        lines = [
            "## ⚠️ Circuit breaker TRIPPED" if tripped_first else "## Circuit breaker",
            "",
            f"Tripped at {dt_to_json(b.tripped_at)}. **No auto-merges** until an owner resets it "
            "(`/breaker reset` on the incident issue, or `capdaemon breaker reset`).",
            "",
        ]
    else:
        lines = ["## Circuit breaker", "", f"Closed. {len(b.incidents)} incident(s) in the window."]
        if b.reset_by:
            lines.append(f"Last reset by {md(b.reset_by)} at {dt_to_json(b.reset_at)}.")
        lines.append("")
    for i in b.incidents:
        detail = f": {md(i.detail)}" if i.detail else ""
        lines.append(f"- {dt_to_json(i.at)} {i.kind.value}{detail}")
    if b.incidents:
        lines.append("")
    return lines


def _pie(counts: Mapping[Quadrant, int]) -> list[str]:
    slices = [(q, counts.get(q, 0)) for q in (Quadrant.A, Quadrant.B, Quadrant.C, Quadrant.D)]
    if not any(n for _, n in slices):
        return ["No PR was classified in this period."]
    body = [f'    "{q.value}" : {n}' for q, n in slices if n]
    return ["```mermaid", "pie title Quadrants", *body, "```"]


ANCHORS_SENTENCE = (
    "These lines pin the newest entry of each audit log at the time of this digest; keep this "
    "issue (or its notification mail), because `capdaemon audit verify --anchors-from FILE` "
    "with this text fails if anyone later rewrites or cuts the logs on the host."
)


def _anchor_lines(facts: DigestFacts) -> list[str]:
    out = ["## Audit anchors", "", ANCHORS_SENTENCE, ""]
    if facts.audit_anchors:
        out += ["```text", *(a.line() for a in facts.audit_anchors), "```", ""]
    out += [f"- {md(n)}" for n in facts.audit_notes]
    if not facts.audit_anchors and not facts.audit_notes:
        out.append("No audit entries yet.")
    if facts.audit_notes or not facts.audit_anchors:
        out.append("")
    return out


def _local_time(when: datetime, tz: str) -> str:
    """`2026-05-25 12:03` in the digest's zone (its heading names the zone)."""
    return aware(when, "merged_at").astimezone(_zone(tz)).strftime("%Y-%m-%d %H:%M")


def _period_lines(facts: DigestFacts, now: datetime) -> list[str]:
    """What the digest covers; a period not over yet says so, and as of when."""
    if facts.period is None:
        return []
    start, end = (_local_time(t, facts.timezone) for t in facts.period)
    line = f"_Covers {start} to {end} {md(facts.timezone)}"
    if now < facts.period[1]:
        line += f"; in progress: so far, as of {_local_time(now, facts.timezone)}"
    return [line + "._", ""]


def _reaction_lines(facts: DigestFacts) -> list[str]:
    """Reaction times per kind: from the event that caused each action to the action."""
    out = ["## Reaction times", ""]
    if facts.targeted is not None:
        t = facts.targeted
        out += [
            f"Targeted ticks (run between full ticks on a change seen): {t.ticks}, "
            f"merging {t.merged} PR{'' if t.merged == 1 else 's'}.",
            "",
        ]
    if not facts.reactions:
        return [*out, "No action measured in this period.", ""]
    out += ["From the event that caused each action (a push, a vote, a check) to the action:"]
    return [*out, "", *(f"- {md(describe(s))}" for s in facts.reactions), ""]


def _clock_lines(facts: DigestFacts) -> list[str]:
    """The clock section, only when the host's clock is off GitHub's."""
    return ["## Clock", "", f"{md(facts.clock_drift)}.", ""] if facts.clock_drift else []


def _opening_lines(facts: DigestFacts, now: datetime) -> list[str]:
    """Heading, period, the shadow-mode note and a tripped breaker (which comes first)."""
    out = [f"# capdaemon digest — {facts.date.isoformat()} ({md(facts.timezone)})", ""]
    out += _period_lines(facts, now)
    if facts.catch_up:
        out += [
            "_Posted late, at start-up: capdaemon was not running at the digest time, and "
            "this digest had not been posted._",
            "",
        ]
    if facts.shadow:
        out += [
            "_Shadow mode: capdaemon merged and closed nothing; what enforce mode would have "
            'merged is listed under "Would merge", apart from merges._',
            "",
        ]
    if facts.breaker.tripped:
        out += _breaker_lines(facts.breaker, tripped_first=True)
    return out


def _quadrant_lines(counts: Mapping[Quadrant, int]) -> list[str]:
    total = sum(counts.get(q, 0) for q in Quadrant)
    out = ["## Quadrants", "", "| A | B | C | D | total |", "|---|---|---|---|---|"]
    quads = (Quadrant.A, Quadrant.B, Quadrant.C, Quadrant.D)
    out += ["| " + " | ".join(str(counts.get(q, 0)) for q in quads) + f" | {total} |", ""]
    return [*out, *_pie(counts), ""]


def _merge_lines(facts: DigestFacts) -> list[str]:
    out = [f"## Merges ({len(facts.merges)})", ""]
    for m in facts.merges or ():
        head = link(m.ref, m.url) if m.url else ref(m.ref)
        when = f" at {_local_time(m.merged_at, facts.timezone)}" if m.merged_at else ""
        title = f" {md(m.title)}" if m.title else ""
        out.append(f"- {head} ({m.quadrant.value}){title}{when}")
    out += [] if facts.merges else ["None."]
    out.append("")
    if not facts.would_merges and not facts.shadow:
        return out
    out += [f"## Would merge, shadow mode: not merged ({len(facts.would_merges)})", ""]
    for m in facts.would_merges:
        head = link(m.ref, m.url) if m.url else ref(m.ref)
        when = f" at {_local_time(m.merged_at, facts.timezone)}" if m.merged_at else ""
        title = f" {md(m.title)}" if m.title else ""
        out.append(f"- {head} ({m.quadrant.value}){title}: would merge, judged{when}")
    return out + ([] if facts.would_merges else ["None."]) + [""]


def _pending_ballot_lines(facts: DigestFacts, now: datetime) -> list[str]:
    ballots = sorted(facts.pending_ballots, key=lambda b: b.opened_at)
    out = [f"## Pending ballots ({len(ballots)})", ""]
    if not ballots:
        return [*out, "None.", ""]
    out += ["| PR | kind | age | ballot |", "|---|---|---|---|"]
    for b in ballots:
        age = format_age(now - aware(b.opened_at, "opened_at"))
        issue = link(b.issue or "issue", b.url) if b.url else ref(b.issue) if b.issue else "?"
        title = f" {md(b.title)}" if b.title else ""
        out.append(f"| {ref(b.ref)}{title} | {md(b.kind)} | {age} | {issue} |")
    return [*out, ""]


def _review_lines(facts: DigestFacts) -> list[str]:
    """Attention items, auto-closed reviews, scope violations and escalations."""
    out = ["## Attention (P1)", "", *_items(facts.attention), ""]
    out += [
        f"## Auto-closed reviews ({len(facts.auto_closed)})",
        "",
        *_items(facts.auto_closed),
        "",
    ]
    out += ["## Scope violations and escalations", ""]
    out += ["### Scope violations", "", *_items(facts.scope_violations), ""]
    return [*out, "### Escalations", "", *_items(facts.escalations), ""]


def _burn_in_lines(facts: DigestFacts, now: datetime) -> list[str]:
    out = ["## Burn-in clocks", ""]
    if not facts.burn_in.agents:
        return [*out, "No agent identities seen yet.", ""]
    out += ["| agent | status | first seen | clock since | days left | rejections |"]
    out += ["|---|---|---|---|---|---|"]
    for a in facts.burn_in.agents:
        status = "hard-block" if a.status is BurnInStatus.HARD_BLOCK else "burn-in"
        left = f"{a.days_left(now, facts.burn_in_days):.1f}"
        out.append(
            f"| {md(a.agent_id)} | {status} | {a.first_seen.date().isoformat()} | "
            f"{a.clock_start.date().isoformat()} | {left} | {a.rejections} |"
        )
    return [*out, ""]


def _error_and_rate_lines(facts: DigestFacts) -> list[str]:
    out = [f"## Errors ({len(facts.errors)})", ""]
    out += [f"- {md(e)}" for e in facts.errors] or ["None."]
    out += ["", "## Rate limit", ""]
    if facts.rate_limit is None:
        out.append("Not measured.")
    else:
        rl = facts.rate_limit
        used = rl.used if rl.used is not None else rl.limit - rl.remaining
        share = f" ({100 * used / rl.limit:.0f} %)" if rl.limit else ""
        out.append(f"{used} of {rl.limit} requests used{share}, {rl.remaining} remaining.")
    return [*out, ""]


def render_digest(facts: DigestFacts, now: datetime) -> str:
    """The digest as Markdown; a tripped breaker comes first, then every section in order."""
    aware(now, "now")
    out = _opening_lines(facts, now)
    out += _quadrant_lines(facts.quadrant_counts)
    out += _merge_lines(facts)
    out += _pending_ballot_lines(facts, now)
    out += _review_lines(facts)
    if not facts.breaker.tripped:
        out += _breaker_lines(facts.breaker, tripped_first=False)
    out += _burn_in_lines(facts, now)
    out += _error_and_rate_lines(facts)
    out += _reaction_lines(facts)
    out += _clock_lines(facts)
    out += _anchor_lines(facts)
    return "\n".join(out)
