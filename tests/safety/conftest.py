"""Safety-net test helpers: the daemon Harness plus config extras, tasks, CI results, state."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from capdaemon.daemon.core.steps import TickReader
from capdaemon.decide.breaker import BreakerState
from capdaemon.stores.safety_state import read_breaker
from ghsandbox import Sandbox
from tests.daemon.conftest import SESSION, T0, Harness, write_config

__all__ = ["SESSION", "T0", "SafetyHarness"]


class SafetyHarness(Harness):
    """The daemon Harness with safety-net helpers (config sections, tasks, CI results, state)."""

    def configure(self, *, repo: Mapping[str, Any] | None = None, **extra: Any) -> SafetyHarness:
        """Write the sandbox config plus extra top-level sections (post_merge, breaker, ...)."""
        self.stop()
        write_config(self.config_dir, self.sb, repo=repo)
        path = self.config_dir / "capdaemon.yml"
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        data.update(extra)
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        return self

    def task(self, task_id: str, level: int, policy: str = "tiered") -> None:
        """Dispatch a task allowing every path, at `level` with `merge_policy`."""
        from capdaemon.capability.taskfile import parse_task
        from capdaemon.stores.registry import dispatch

        cap = parse_task(
            {
                "task_id": task_id,
                "title": f"task {task_id}",
                "level": level,
                "allowed_resources": {"paths": ["**"], "merge_policy": policy, "ttl_hours": 480},
            }
        )
        dispatch(self.state_dir, cap, self.sb.now(), source="tests")

    def ci(self, sha: str, state: str = "failure", context: str = "ci/build") -> None:
        """CI reports a commit status on `sha` (as the owner)."""
        repo = self.gh(self.sb.owner).get_repo(self.sb.repo)
        repo.get_commit(sha).create_status(state=state, context=context)

    def merge_sha(self, number: int) -> str:
        """The merge commit of a PR capdaemon merged."""
        pull = self.pull(number)
        assert pull.merged, f"#{number} is not merged"
        return str(pull.merge_commit_sha)

    def breaker(self) -> BreakerState:
        """The breaker state in bot-state/breaker.json."""
        return read_breaker(self.state_dir).state

    def safety(self) -> dict[str, Any]:
        """bot-state/safety.json."""
        path = self.state_dir / "safety.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}

    def labels_of(self, number: int) -> list[str]:
        """Label names of a PR in the supervised repo."""
        return [lb.name for lb in self.pull(number).get_labels()]

    def open_prs(self) -> Sequence[Any]:
        """Open PRs of the supervised repo."""
        return list(self.gh(self.sb.owner).get_repo(self.sb.repo).get_pulls(state="open"))

    def step7(self, now: datetime | None = None) -> None:
        """Run the safety step 7 directly (idempotent; the tick calls it too once hooked)."""
        ticker = self.ticker or self.start()
        ticker.forge.new_tick()  # as at the start of a tick: the forge reads afresh
        now = now or self.sb.now()
        reads = TickReader(ticker.deps, ticker.new_context(now))  # as a tick reads, afresh
        ticker.safety.step_probes_and_breaker(now, reads)


@pytest.fixture
def safe(sandbox: Sandbox, tmp_path: Path) -> Iterator[SafetyHarness]:
    """A SafetyHarness over the shared sandbox (clock frozen at T0)."""
    h = SafetyHarness(sandbox, tmp_path)
    try:
        yield h
    finally:
        h.stop()


def decision_writer_warnings(err: str) -> dict[str, tuple[str, str, str]]:
    """login → (role, repo, found via) of each decision-repo writer `protect` warned about."""
    pattern = re.compile(
        r"^capdaemon protect: warning: (\S+) \((\w+)\) can write to the decision repo "
        r"(\S+) \(found via (\w+)\)"
    )
    out = {}
    for line in err.splitlines():
        if m := pattern.match(line):
            out[m[1]] = (m[2], m[3], m[4])
    return out
