"""L4 burn-in: per-agent clocks in safety.json, checked once against the audit log."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from capdaemon.audit import AuditLog, log_paths
from capdaemon.config import Config
from capdaemon.daemon.safety.common import Report, SeenPR
from capdaemon.decide._common import Action
from capdaemon.decide.burnin import (
    BurnInState,
    BurnInStatus,
    advance,
    burn_in_raw,
    observe,
    record_rejection,
)
from capdaemon.decide.burnin import agent_severities as _burn_in_severities
from capdaemon.jsonl import read_records
from capdaemon.model import Severity
from capdaemon.state import StateError
from capdaemon.stores.botstate import Metrics, PRStore
from capdaemon.stores.safety_state import SafetyStore, new_actions


@dataclass
class BurnIn:
    """Observe agents, reset their clocks on rejections, promote them after the burn-in."""

    config: Config
    state_dir: Path
    store: SafetyStore
    metrics: Metrics
    actions_log: AuditLog
    prs: PRStore
    _checked: bool = field(default=False, init=False)  # the clocks were checked against the log

    def state(self) -> BurnInState:
        """The L4 burn-in clocks (safety.json, mirrored to tick_metrics.l4_burn_in).

        Checked once against the audit log: clocks are never silently reset."""
        raw = burn_in_raw(self.store.data, self.metrics.data)
        try:
            state = BurnInState.from_json(raw)
        except ValueError as exc:
            raise StateError(f"l4_burn_in is malformed: {exc}") from exc
        if not self._checked:
            _check_against_log(self.state_dir, state)
            self._checked = True
        return state

    def agent_severities(self) -> dict[str, Severity]:
        """Registry-check severity floors per agent id (P0 once hard-blocked), for classify()."""
        return _burn_in_severities(self.state())

    def step(self, seen: Sequence[SeenPR], now: datetime, report: Report | None = None) -> None:
        """Step 6: observe the open PRs' agent ids, reset clocks on rejections, promote after
        the burn-in (and reclassify the open PRs of a promoted agent)."""
        s = self.store
        state = self.state()
        actions: list[Action] = []
        ids = {a for item in seen for a in s["agents_by_pr"].get(item.rec.ref, ())}
        state, acts = observe(state, ids, now)
        actions += acts
        records, cursor = new_actions(self.state_dir, s["burn_in_cursor"])
        state, acts = self._rejections(state, records, now)
        actions += acts
        before = {a.agent_id for a in state.agents if a.status.value == "hard_block"}
        state, acts = advance(state, now, self.config.burn_in_days)
        actions += acts
        promoted = {a.agent_id for a in state.agents if a.status.value == "hard_block"} - before
        for a in actions:
            self.actions_log.append(dict(a.payload), now=now)
        self._reclassify(promoted)
        s["burn_in"] = state.to_json()
        s["burn_in_cursor"] = cursor
        s.save()
        self.metrics.update(l4_burn_in=state.to_json())

    def _rejections(
        self, state: BurnInState, records: Iterable[dict[str, Any]], now: datetime
    ) -> tuple[BurnInState, list[Action]]:
        """The burn-in clocks reset by the owners' rejections among the new audit records."""
        actions: list[Action] = []
        for r in records:
            if r.get("action") != "rejection":
                continue
            for agent in self.store["agents_by_pr"].get(str(r.get("pr")), ()):
                state, acts = record_rejection(state, agent, now)
                actions += [_with(a, pr=r.get("pr")) for a in acts]
        return state, actions

    def _reclassify(self, promoted: set[str]) -> None:
        """The open PRs of a promoted agent are classified again (their registry check is now
        P0)."""
        if not promoted:
            return
        for rec in list(self.prs.records.values()):
            if rec.state == "open" and promoted & set(self.store["agents_by_pr"].get(rec.ref, ())):
                self.prs.change(rec, fingerprint="")


def _with(action: Action, **extra: Any) -> Action:
    return Action(action.kind, {**action.payload, **extra})


def _check_against_log(state_dir: Path, state: BurnInState) -> None:
    """Refuse clocks that contradict the audit log (a deleted, reset or tampered safety.json):
    every agent the log observed must still have a clock, and every promotion must still hold."""
    seen: set[str] = set()
    promoted: set[str] = set()
    for r in read_records(log_paths(state_dir)[1]):
        agent = r.get("agent")
        if not isinstance(agent, str):
            continue
        if r.get("action") == "burn_in.observed":
            seen.add(agent)
        elif r.get("action") == "burn_in.promoted":
            promoted.add(agent)
    problems = [
        f"{a}: observed in the audit log but has no clock"
        for a in sorted(seen | promoted)
        if state.get(a) is None
    ]
    problems += [
        f"{a}: promoted in the audit log but not hard-blocked"
        for a in sorted(promoted)
        if (c := state.get(a)) is not None and c.status is not BurnInStatus.HARD_BLOCK
    ]
    if problems:
        raise StateError(
            "L4 burn-in clocks contradict actions.jsonl (safety.json reset or tampered?): "
            + "; ".join(problems)
            + ". Refusing to reset clocks silently: restore bot-state/safety.json."
        )
