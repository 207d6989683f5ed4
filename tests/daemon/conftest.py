"""Daemon test helpers: a config dir for the sandbox, a live Ticker, PR builders, ballot answers."""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import github
import pytest
import yaml

from capdaemon.audit import log_paths
from capdaemon.commands._common import load_config_and_rules
from capdaemon.daemon.core.tick import Ticker, TickReport
from capdaemon.daemon.service.reload import Reloader
from capdaemon.daemon.service.runner import open_ticker
from capdaemon.forge.markers import parse_marker
from ghsandbox import Sandbox
from ghsandbox.testing import user_github

T0 = datetime(2026, 5, 25, 3, 0, tzinfo=UTC)
SESSION = "Agent-Session: claude-code/claude-opus-4/sess-00000001"

BASE_FILES = {
    "src/multiagent_protocol/__init__.py": '"""Bot."""\n',
    "src/multiagent_protocol/router.py": "def route(msg, handlers):\n    return handlers[msg]\n",
    "src/multiagent_protocol/pr_validator.py": "def can_merge(pr):\n    return pr.ok\n",
    "examples/old.py": "print('v1')\n",
    "scripts/finish-task.sh": "#!/bin/sh\nexit 0\n",
    "cron_settings.json": '{"jobs": []}\n',
}


def write_config(
    directory: Path,
    sb: Sandbox,
    *,
    mode: str = "enforce",
    repo: Mapping[str, Any] | None = None,
    **extra: Any,
) -> Path:
    """A config dir pointing at the sandbox: App auth, owners alice+bob, acme/widgets supervised
    (plus `extra` top-level capdaemon.yml keys, e.g. random_review_share)."""
    directory.mkdir(parents=True, exist_ok=True)
    data = {
        "github": {
            "base_url": sb.base_url,
            "app_id": sb.app_id,
            "private_key_file": str(sb.app_key_path),
            "installation_id": sb.installation_id,
        },
        "bot": {"login": "capdaemon[bot]", "own_repo": sb.bot_repo},
        "canonical_app": {"slug": sb.app_slug, "id": sb.app_id},
        "owners": [sb.owner, sb.second_owner],
        "mode": mode,
        "repos": [{"name": sb.repo, "base": "main", "merge_method": "squash", **(repo or {})}],
        **extra,
    }
    (directory / "capdaemon.yml").write_text(
        yaml.safe_dump(data, sort_keys=False), encoding="utf-8"
    )
    return directory


class Harness:
    """One daemon (a live Ticker holding the state lock) against one sandbox, plus helpers."""

    def __init__(self, sb: Sandbox, root: Path) -> None:
        self.sb = sb
        self.root = root
        self.config_dir = root / "config"
        self.state_dir = root / "bot-state"
        self._stack = contextlib.ExitStack()
        self.ticker: Ticker | None = None
        self._branch = 0
        sb.set_clock(T0)
        for path, text in BASE_FILES.items():
            sb.commit_files(sb.repo, "main", {path: text}, f"add {path}", author=sb.owner)

    # -- daemon --------------------------------------------------------------------------
    def configure(self, **kw: Any) -> Harness:
        """(Re)write the config dir (see write_config) and drop the current ticker."""
        self.stop()
        write_config(self.config_dir, self.sb, **kw)
        return self

    def start(self, reloader: Reloader | None = None) -> Ticker:
        """A Ticker built as `capdaemon tick` builds it (config dir, App key, state lock); with
        a `reloader`, as `capdaemon run` does (config edits apply at each tick)."""
        if not (self.config_dir / "capdaemon.yml").exists():
            self.configure()
        config, rules = load_config_and_rules(argparse.Namespace(config=str(self.config_dir)))
        self.ticker = self._stack.enter_context(
            open_ticker(config, self.state_dir, rules=rules, reloader=reloader)
        )
        return self.ticker

    def stop(self) -> None:
        """Release the ticker and its lock (a daemon restart)."""
        self._stack.close()
        self._stack = contextlib.ExitStack()
        self.ticker = None

    def tick(self, now: datetime | None = None) -> TickReport:
        """One tick at the sandbox's time (or `now`)."""
        ticker = self.ticker or self.start()
        return ticker.tick(now or self.sb.now())

    def advance(self, **delta: float) -> datetime:
        """Move the sandbox clock forward; returns the new time."""
        return self.sb.advance_clock(timedelta(**delta).total_seconds())

    # -- agents --------------------------------------------------------------------------
    def open_pr(
        self,
        files: Mapping[str, str | None],
        *,
        user: str = "agent-1",
        title: str = "An agent change",
        trailers: str = SESSION,
        branch: str | None = None,
    ) -> int:
        """Commit `files` on a new branch (real git in the sandbox) and open a PR; its number."""
        self._branch += 1
        branch = branch or f"{user}/change-{self._branch}"
        self.sb.commit_files(
            self.sb.repo,
            branch,
            dict(files),
            f"{title}\n\n{trailers}\n",
            author=user,
            parent_branch="main",
        )
        return self.sb.open_pr(self.sb.repo, branch, "main", title, "body", user)

    def push(self, number: int, files: Mapping[str, str | None], *, user: str = "agent-1") -> str:
        """Push one more commit onto a PR's branch; the new head sha."""
        pull = self.gh(self.sb.owner).get_repo(self.sb.repo).get_pull(number)
        return self.sb.commit_files(
            self.sb.repo, pull.head.ref, dict(files), f"More work\n\n{SESSION}\n", author=user
        )

    # -- GitHub as a person ----------------------------------------------------------------
    def gh(self, login: str) -> github.Github:
        """PyGithub as one of the sandbox users."""
        return user_github(self.sb.base_url, self.sb.tokens[login])

    def pull(self, number: int) -> Any:
        """The PR as PyGithub sees it."""
        return self.gh(self.sb.owner).get_repo(self.sb.repo).get_pull(number)

    def issues(self, kind: str | None = None, state: str = "all") -> list[Any]:
        """Decision issues in the bot repo carrying our marker, optionally of one kind."""
        out = []
        for issue in self.gh(self.sb.owner).get_repo(self.sb.bot_repo).get_issues(state=state):
            marker = parse_marker(issue.body) or {}
            if marker and (kind is None or marker.get("kind") == kind):
                out.append(issue)
        return out

    def issues_about_prs(self, state: str = "all") -> list[Any]:
        """Decision issues about a PR (not the repo-level ones: protection, incidents)."""
        return [i for i in self.issues(state=state) if (parse_marker(i.body) or {}).get("pr")]

    def issue_for(self, number: int, kind: str) -> Any:
        """The one decision issue of a kind for a PR (asserts there is exactly one)."""
        ref = f"{self.sb.repo}#{number}"
        found = [i for i in self.issues(kind) if (parse_marker(i.body) or {}).get("pr") == ref]
        assert len(found) == 1, f"expected one {kind} issue for {ref}, found {len(found)}"
        return found[0]

    def ballot(self, number: int, login: str) -> Any:
        """The PR's ballot issue, as `login` sees it (to comment or react)."""
        issue = self.issue_for(number, "ballot")
        return self.gh(login).get_repo(self.sb.bot_repo).get_issue(issue.number)

    def check(self, number: int) -> Any:
        """The newest L1.C3 check run on a PR's head."""
        pull = self.pull(number)
        runs = [
            r
            for r in self.gh(self.sb.owner)
            .get_repo(self.sb.repo)
            .get_commit(pull.head.sha)
            .get_check_runs()
            if r.name == "L1.C3"
        ]
        assert runs, f"no L1.C3 on #{number}"
        return runs[-1]

    # -- state ---------------------------------------------------------------------------
    def actions(self, action: str | None = None, pr: int | None = None) -> list[dict[str, Any]]:
        """Records of actions.jsonl, filtered by action and PR number."""
        path = log_paths(self.state_dir)[1]
        recs = (
            [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
            if path.exists()
            else []
        )
        ref = f"{self.sb.repo}#{pr}" if pr is not None else None
        return [
            r
            for r in recs
            if (action is None or r.get("action") == action) and (ref is None or r.get("pr") == ref)
        ]

    def classifications(self, pr: int) -> list[dict[str, Any]]:
        """Records of classifier_audit.jsonl for one PR."""
        path = log_paths(self.state_dir)[0]
        ref = f"{self.sb.repo}#{pr}"
        recs = (
            [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
            if path.exists()
            else []
        )
        return [r for r in recs if r.get("pr") == ref]

    def writes(self) -> dict[str, int]:
        """Non-GET requests since the last reset_counters (endpoint → count), except GraphQL
        queries (the forge sends no mutations: they are reads)."""
        endpoints = self.sb.counters()["endpoints"]
        return {
            k: v["requests"]
            for k, v in endpoints.items()
            if not k.startswith(("GET ", "POST /graphql")) and v.get("requests")
        }


@pytest.fixture
def daemon(sandbox: Sandbox, tmp_path: Path) -> Iterator[Harness]:
    """A Harness over the shared `sandbox` fixture (clock frozen at T0, bot source on main)."""
    h = Harness(sandbox, tmp_path)
    try:
        yield h
    finally:
        h.stop()
