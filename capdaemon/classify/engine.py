"""The max-vote engine: built-in rules, then user rules; errors count as D; nothing lowers."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime

from capdaemon.classify.budget import DEFAULT_BUDGET, Budget, classify_files
from capdaemon.classify.compiled import compile_classifier
from capdaemon.classify.rules import BUILTIN_RULES, RuleContext
from capdaemon.classify.trailers import commit_agent_session
from capdaemon.classify.user_rules import UserRule, run_user_rule
from capdaemon.config import Config
from capdaemon.model import (
    FileVerdict,
    Finding,
    PRSnapshot,
    Quadrant,
    RuleOutcome,
    RuleResult,
    Severity,
    Verdict,
)

AGENT_REGISTRY_VALIDATOR = "validator_agent_registry"
REPO_POLICY_RULE = "repo_policy"
MAX_REASONING_FILES = 5
MAX_REASONING_CHARS = 2000
_SEVERITY_ORDER = {Severity.P0: 0, Severity.P1: 1, Severity.P2: 2}


def classify(
    snapshot: PRSnapshot,
    config: Config,
    *,
    now: datetime,
    user_rules: Sequence[UserRule] = (),
    agent_severity: Mapping[str, Severity] | None = None,
    budget: Budget = DEFAULT_BUDGET,
    policy_error: str | None = None,
) -> Verdict:
    """Classify one PR snapshot (pure apart from user rules' worker threads).

    `config` is the effective config: the central one with the repo's base-branch
    `.capdaemon.yml` already applied (SPEC 2.9; the caller parses it once). When that policy
    does not parse, `policy_error` says why and the PR is D (never a silent fallback).

    The quadrant is the maximum (D > B > C > A) over every vote; an erroring rule counts as
    D. `skills.disabled_rules` can switch off only built-ins that never vote D.
    `agent_severity` maps an agent id `tool/model` to a severity floor for the registry check
    (the daemon's burn-in promotion); the more severe of it and skills.yml applies.
    Files past the size or time `budget` are critical and irreversible (never a stall).
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be timezone-aware")
    compiled = compile_classifier(config.classifier)
    files = classify_files(snapshot.files, compiled, budget)
    ctx = RuleContext(now=now, files=files, compiled=compiled)
    disabled = {n.strip() for n in config.skills.disabled_rules}
    outcomes: list[RuleOutcome] = []
    for rule in BUILTIN_RULES:
        if rule.name in disabled and rule.can_disable:
            outcomes.append(
                RuleOutcome(rule.name, RuleResult.ABSTAIN, None, "disabled in skills.yml")
            )
            continue
        try:
            outcome = rule.func(snapshot, config, ctx)
        except Exception as exc:  # a built-in bug fails closed
            outcome = RuleOutcome(
                rule.name, RuleResult.ERROR, Quadrant.D, f"rule {rule.name} failed: {exc!r}"[:300]
            )
        outcomes.append(outcome)
    if policy_error is not None:
        reason = f"repo policy invalid, failing closed: {policy_error}"[:300]
        outcomes.append(RuleOutcome(REPO_POLICY_RULE, RuleResult.ERROR, Quadrant.D, reason))
    if user_rules:
        frozen_copy = copy.deepcopy(snapshot)  # no rule can alter what the daemon acts on
        timeout = config.classifier.user_rule_timeout_seconds
        outcomes.extend(run_user_rule(r, frozen_copy, timeout) for r in user_rules)
    quadrant = Quadrant.highest(_votes(outcomes), default=Quadrant.D)
    findings = validate_agent_registry(snapshot, config, agent_severity)
    return Verdict(
        quadrant=quadrant,
        reasoning=reasoning(quadrant, files, outcomes),
        files=files,
        rules=tuple(outcomes),
        findings=findings,
    )


def _votes(outcomes: Sequence[RuleOutcome]) -> list[Quadrant]:
    out: list[Quadrant] = []
    for o in outcomes:
        if o.result is RuleResult.ERROR:
            out.append(Quadrant.D)
        elif o.result is RuleResult.VOTE and o.vote is not None:
            out.append(o.vote)
    return out


def validate_agent_registry(
    snapshot: PRSnapshot,
    config: Config,
    agent_severity: Mapping[str, Severity] | None = None,
) -> tuple[Finding, ...]:
    """One finding per unregistered agent (tool/model) found in the commits' trailers."""
    base = config.skills.severity(AGENT_REGISTRY_VALIDATOR)
    commits_by_agent: dict[str, list[str]] = {}
    for c in snapshot.commits:
        session, _why = commit_agent_session(c.message)
        if session is None or config.registry.knows(session.tool, session.model):
            continue
        commits_by_agent.setdefault(session.agent_id, []).append(c.sha[:12])
    findings: list[Finding] = []
    for agent, shas in commits_by_agent.items():
        severity = base
        floor = (agent_severity or {}).get(agent)
        if floor is not None and _SEVERITY_ORDER[floor] < _SEVERITY_ORDER[severity]:
            severity = floor
        more = f" (+{len(shas) - 3} more)" if len(shas) > 3 else ""
        findings.append(
            Finding(
                validator=AGENT_REGISTRY_VALIDATOR,
                severity=severity,
                message=f"agent {agent} is not in the agent registry "
                f"(commits {', '.join(shas[:3])}{more}): registered tools and models are "
                "listed in the config's agent_registry.yml (adding one is an owner's change)",
                subject=agent,
            )
        )
    return tuple(findings)


def _first(f: FileVerdict, prefix: str) -> str | None:
    return next((r[len(prefix) :] for r in f.reasons if r.startswith(prefix)), None)


def file_phrase(f: FileVerdict) -> str:
    """`path status (critical: why); why (irreversible)` for one file, as in SPEC 6.1."""
    if f.critical:
        why = _first(f, "critical: ")
        cr = f"critical: {why}" if why else "critical"
    else:
        why = _first(f, "non-critical: ")
        cr = f"non-critical: {why}" if why else "non-critical"
    if f.irreversible:
        ir = f"{_first(f, 'irreversible: ') or 'irreversible change'} (irreversible)"
    else:
        ir = "revertable file edit (reversible)"
    moved = f" from {f.previous_path}" if f.previous_path else ""
    return f"{f.path} {f.status.value}{moved} ({cr}); {ir}"


def _decided(o: RuleOutcome, quadrant: Quadrant) -> bool:
    """Whether a rule's outcome is told in the reasoning: an error, or a vote for the quadrant
    decided (the path classifier's default is told by the files instead)."""
    if o.rule == "path_classifier_default":
        return False
    voted = o.result is RuleResult.VOTE and o.vote is not None and o.vote is quadrant
    return o.result is RuleResult.ERROR or voted


def reasoning(
    quadrant: Quadrant, files: Sequence[FileVerdict], outcomes: Sequence[RuleOutcome]
) -> str:
    """A concise human-readable account: deciding rules first, then deciding files, then a tally."""
    parts = [
        f"{o.rule}: {o.reason or o.result.value} ({(o.vote or Quadrant.D).value})"
        for o in outcomes
        if _decided(o, quadrant)
    ]
    ranked = sorted(files, key=lambda f: -f.quadrant.rank)
    for f in ranked[:MAX_REASONING_FILES]:
        parts.append(file_phrase(f))
    if len(ranked) > MAX_REASONING_FILES:
        tally = Counter(f.quadrant.value for f in ranked[MAX_REASONING_FILES:])
        counts = ", ".join(f"{q}: {tally[q]}" for q in "DBCA" if tally[q])
        parts.append(f"and {len(ranked) - MAX_REASONING_FILES} more files ({counts})")
    if not parts:
        parts.append("no files")
    text = "; ".join(parts)
    if len(text) > MAX_REASONING_CHARS:
        text = text[: MAX_REASONING_CHARS - 1].rstrip() + "…"
    return text
