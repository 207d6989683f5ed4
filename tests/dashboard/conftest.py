"""Dashboard fixtures: one bot-state produced by real ticks through the sandbox, per session."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from capdaemon.capability.taskfile import parse_task
from capdaemon.cli import main
from capdaemon.commands._common import load_config_from_args
from capdaemon.config import Config
from capdaemon.daemon.service import digest_job
from capdaemon.stores.registry import dispatch
from ghsandbox import testing as std
from tests.conftest import start_sandbox
from tests.daemon.conftest import SESSION, Harness

XSS_SCRIPT = "<script>window.__xss=1</script>"
XSS_PATH = "docs/<svg onload=window.__xss=3>.md"  # outside task-7's src/**
XSS_IMG = '"><img src=x onerror="window.__xss=2">'
# git refuses spaces in a ref name; "/" separates the attributes for the HTML parser instead
XSS_BRANCH = '"><img/src=x/onerror=window.__xss=4>'
WORKFLOW = {".github/workflows/ci.yml": "name: ci\non: [pull_request]\njobs: {}\n"}


@dataclass(frozen=True)
class DashState:
    """A state dir and config dir the daemon wrote, plus what the scenario did."""

    root: Path
    config_dir: Path
    state_dir: Path
    now: datetime
    prs: dict[str, int]  # name in the scenario → PR number

    def config(self) -> Config:
        """The config, loaded as the commands load it."""
        import argparse

        return load_config_from_args(argparse.Namespace(config=str(self.config_dir)))

    def copy(self, to: Path) -> DashState:
        """A private copy (to corrupt files in)."""
        shutil.copytree(self.root, to, symlinks=True)
        return DashState(to, to / "config", to / "bot-state", self.now, self.prs)


@pytest.fixture(scope="session")
def dash_state(
    tmp_path_factory: pytest.TempPathFactory, sandbox_keys: tuple[std.AppKeys, Path, Path]
) -> DashState:
    """The scenario: an A PR merged, a D PR whose title is a <script> waiting for its ballot,
    a D PR titled with an <img onerror> (its branch named like one too) approved by alice
    and merged, a task PR that steps out of its capability (scope violation), and a digest
    with the logs' anchors. The sandbox is stopped before any test runs: the dashboard never
    needs GitHub."""
    root = tmp_path_factory.mktemp("dash")
    sb = start_sandbox(root / "sandbox", sandbox_keys)
    h = Harness(sb, root)
    try:
        h.configure()
        cap = {"paths": ["src/**"], "forbidden_paths": ["cron_settings.json"]}
        dispatch(
            h.state_dir,
            parse_task(
                {
                    "task_id": "task-7",
                    "title": "<b>bold</b> task",
                    "level": 1,
                    "allowed_resources": cap,
                }
            ),
            sb.now(),
        )
        prs = {
            "typo": h.open_pr({"README.md": "# widgets\n"}, title="Fix a typo in the README"),
            "script": h.open_pr(WORKFLOW, title=XSS_SCRIPT),
            "img": h.open_pr(
                {".github/workflows/x.yml": "on: push\n"},
                title=XSS_IMG,
                branch=XSS_BRANCH,
                user="agent-2",  # agent-1 holds task-7 (manual), which binds its PRs
            ),
            "scope": h.open_pr(
                {"cron_settings.json": '{"jobs": [1]}\n'},
                title="Tune the cron",
                branch="task/task-7/cron",
                trailers=f"{SESSION}\nTask-Id: task-7",
            ),
        }
        h.tick()
        # the agent's local guard refuses an out-of-scope edit: an escalation record
        rc = main(["scope-guard", "--task", "task-7", "--state", str(h.state_dir), XSS_PATH])
        assert rc == 1
        h.advance(minutes=2)
        h.ballot(prs["img"], "alice").create_comment("/approve A")
        h.tick()
        h.advance(minutes=1)
        now = sb.now()
        config = h.ticker.config if h.ticker else None
        assert config is not None
        day = now.date()
        digest_job.write(h.state_dir, day, digest_job.render_for(config, h.state_dir, day, now))
    finally:
        h.stop()
        sb.stop()
    return DashState(root, h.config_dir, h.state_dir, now, prs)
