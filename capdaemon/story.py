"""How one audit record is told in words: `capdaemon why` and the dashboard's PR page."""

from __future__ import annotations

from typing import Any

_SKIP = frozenset({"ts", "seq", "prev", "hash", "pr", "action"})
# an action's fields told first, in this order, after its name
_DETAILS = ("who", "by", "actor", "user", "vote", "command", "counted", "reason", "why")


def _short(sha: Any) -> str:
    return str(sha)[:10] if sha else "?"


def rules_that_voted(rules: Any) -> str:
    """`rule=vote` for each rule that voted (`rule=ERROR` for one that failed); "" for none."""
    parts = []
    for r in rules if isinstance(rules, list) else ():
        if not isinstance(r, dict):
            continue
        if r.get("result") == "error":
            parts.append(f"{r.get('rule')}=ERROR")
        elif r.get("vote"):
            parts.append(f"{r.get('rule')}={r['vote']}")
    return ", ".join(parts)


def _value(v: Any) -> str:
    if isinstance(v, list | tuple):
        return ", ".join(_value(x) for x in v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_value(x)}" for k, x in v.items()) + "}"
    return str(v)


def describe(rec: dict[str, Any]) -> list[str]:
    """The lines telling one audit record (classification or action)."""
    ts = str(rec.get("ts", "?"))
    if len(ts) > 20 and ts.endswith("Z"):
        ts = ts[:19] + "Z"  # whole seconds are enough to read a story
    if "action" not in rec and "quadrant" in rec:
        return _classified(ts, rec)
    action = rec.get("action", "event")
    details = [f"{key}: {_value(rec[key])}" for key in _DETAILS if key in rec]
    if "head_sha" in rec:
        details.append(f"head {_short(rec['head_sha'])}")
    if "sha" in rec:
        details.append(f"sha {_short(rec['sha'])}")
    shown = {*_DETAILS, "head_sha", "sha", *_SKIP}
    rest = [f"{k}: {_value(v)}" for k, v in rec.items() if k not in shown]
    line = f"{ts}  {str(action).replace('_', ' ')}"
    if details:
        line += " — " + "; ".join(details)
    lines = [line]
    if rest:
        lines.append(f"{'':22}" + "; ".join(rest))
    return lines


def _classified(ts: str, rec: dict[str, Any]) -> list[str]:
    """The lines telling a classification: its quadrant and reasoning, the rules that voted
    and each finding."""
    lines = [
        f"{ts}  classified {rec.get('quadrant')} at {_short(rec.get('head_sha'))}"
        f": {rec.get('reasoning', '')}",
        f"{'':22}rules that voted: {rules_that_voted(rec.get('rules_fired')) or 'none'}",
    ]
    for f in rec.get("findings") or ():
        if isinstance(f, dict):
            lines.append(
                f"{'':22}finding {f.get('severity')} {f.get('validator')}: {f.get('message')}"
            )
    return lines


def _same_as(rec: dict[str, Any]) -> str:
    """What makes two records tell the same thing: everything but the log's bookkeeping."""
    keep = {k: v for k, v in rec.items() if k not in ("ts", "seq", "prev", "hash", "fingerprint")}
    return repr(sorted(keep.items(), key=lambda kv: kv[0]))


# What a re-check writes again when a check run or a label changes at the same head (the
# verdict and the violation it implies): only these fold. Everything else is an event of its
# own (a tap, a vote, a command, a merge) and is told each time, with its time and reason.
_REDERIVED = frozenset({"classified", "scope_violation"})


def tell(records: list[dict[str, Any]]) -> list[str]:
    """The lines of a PR's story: a classification or a scope violation that repeats the last
    one of its kind at the same head (a PR re-checked because a check run or a label changed,
    with the same verdict) is folded into it, which then says how often and when it was last
    seen; any other record (a refused tap, a vote) is told on its own line, however often."""
    groups: list[tuple[dict[str, Any], list[str]]] = []
    last: dict[str, tuple[str, int]] = {}  # record kind → (its last record's key, its group)
    for rec in records:
        kind, key = str(rec.get("action", "classified")), _same_as(rec)
        if kind in _REDERIVED and kind in last and last[kind][0] == key:
            groups[last[kind][1]][1].append(str(rec.get("ts", "?")))
            continue
        last[kind] = (key, len(groups))
        groups.append((rec, []))
    lines: list[str] = []
    for rec, again in groups:
        lines += describe(rec)
        if again:
            what = "re-checked" if "action" not in rec else "recorded again"
            lines.append(
                f"{'':22}{what} {len(again)} more time(s) at the same head with the same "
                f"outcome (a check run or a label changed), last at {again[-1]}"
            )
    return lines
