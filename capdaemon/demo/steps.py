"""The demo's steps: config and tasks written, agents pushing PRs, the owner's ballot, a tick."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from capdaemon.capability.taskfile import parse_task
from capdaemon.classify.user_rules import UserRule, load_user_rules, rule_dir
from capdaemon.config import Config, load_config
from capdaemon.daemon.service.runner import open_ticker, run_once
from capdaemon.demo.scenario import AGENT_SESSION, BOT_REPO, OWNER, PRS, REPO, TASKS
from capdaemon.filenames import MAIN_CONFIG_FILE
from capdaemon.forge.markers import parse_marker
from capdaemon.logging import configure_logging
from capdaemon.resources import demo_config_dir
from capdaemon.stores.registry import dispatch
from ghsandbox import testing as std
from ghsandbox.rest import RestClient, RestError
from ghsandbox.server import Sandbox


def _git(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    """Run git quietly; raise with stderr on failure."""
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:2])} failed: {proc.stderr.strip()[:300]}")
    return proc.stdout


def write_config(config_dir: Path, *, base_url: str, key_file: Path) -> None:
    """Copy the demo's config and point it at the sandbox (App auth, demo repos, the hard wall)."""
    sample = demo_config_dir()
    if (sample / MAIN_CONFIG_FILE).is_file():
        shutil.copytree(
            sample, config_dir, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
        )
    config_dir.mkdir(parents=True, exist_ok=True)
    main = config_dir / MAIN_CONFIG_FILE
    data: dict[str, Any] = yaml.safe_load(main.read_text(encoding="utf-8")) if main.exists() else {}
    data = data or {}
    data["github"] = {
        "base_url": base_url,
        "app_id": std.APP_ID,
        "private_key_file": str(key_file),
        "installation_id": std.INSTALLATION_ID,
    }
    data["bot"] = {**(data.get("bot") or {}), "login": f"{std.APP_SLUG}[bot]", "own_repo": BOT_REPO}
    data["canonical_app"] = {"slug": std.APP_SLUG, "id": std.APP_ID}
    data["owners"] = [OWNER, std.SECOND_OWNER]
    data["mode"] = "enforce"
    repo = (data.get("repos") or [{}])[0]
    repo.update({"name": REPO, "base": "main", "require_capability": True})
    data["repos"] = [repo]
    header = "# capdaemon.yml for `capdaemon demo`: the demo's config pointed at the sandbox.\n"
    main.write_text(header + yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def dispatch_tasks(state_dir: Path, now: datetime) -> None:
    """Dispatch every demo task (the capability snapshots the hard wall checks PRs against)."""
    for task_id, paths in TASKS.items():
        cap = parse_task(
            {
                "task_id": task_id,
                "title": f"demo task {task_id}",
                "level": 1,
                "allowed_resources": {
                    "paths": paths,
                    "forbidden_paths": [".github/**"],
                    "merge_policy": "auto",
                    "ttl_hours": 48,
                },
            }
        )
        dispatch(state_dir, cap, now, source="capdaemon demo")


def as_user(sb: Sandbox, login: str) -> RestClient:
    """The sandbox's REST API as one standard user."""
    return RestClient(sb.base_url, std.token_for(login))


def open_pull(sb: Sandbox, agent: str, title: str, body: str, head: str, label: str | None) -> int:
    """The agent opens its PR over REST (and labels it itself when `label` is set)."""
    api = as_user(sb, agent)
    pull = {"title": title, "body": body, "head": head, "base": "main"}
    number = int(api.post(f"/repos/{REPO}/pulls", pull)["number"])
    if label:
        with contextlib.suppress(RestError):  # 422 when the label already exists
            api.post(f"/repos/{REPO}/labels", {"name": label, "color": "d73a4a"})
        api.post(f"/repos/{REPO}/issues/{number}/labels", {"labels": [label]})
    return number


def push_agent_prs(sb: Sandbox, work: Path, say: Callable[[str], None]) -> dict[str, int]:
    """Agents clone over HTTP, commit with Agent-Session/Task-Id trailers, push, open their PRs."""
    numbers: dict[str, int] = {}
    clones: dict[str, Path] = {}
    for i, pr in enumerate(PRS):
        token = std.token_for(pr.agent)
        clone = clones.get(pr.agent)
        if clone is None:
            clone = clones[pr.agent] = work / pr.agent
            _git(work, "clone", "--quiet", sb.git_url(REPO, token), pr.agent)
            _git(clone, "config", "user.name", pr.agent)
            _git(clone, "config", "user.email", f"{pr.agent}@agents.example.com")
        _git(clone, "checkout", "--quiet", "-B", pr.branch, "origin/main")
        for path, text in pr.files.items():
            target = clone / path
            if text is None:
                _git(clone, "rm", "--quiet", path)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
                _git(clone, "add", path)
        session = AGENT_SESSION.format(session=f"sess-{pr.key}-{i:04d}")
        message = f"{pr.title}\n\nAgent-Session: {session}\nTask-Id: {pr.task}\n"
        _git(clone, "commit", "--quiet", "-m", message)
        _git(clone, "push", "--quiet", "origin", pr.branch)
        number = open_pull(sb, pr.agent, pr.title, f"Task {pr.task}.", pr.branch, pr.self_label)
        numbers[pr.key] = number
        say(f"  {pr.agent} pushed {pr.branch} → PR #{number} {pr.title!r}")
    return numbers


def approve_ballot(sb: Sandbox, pr_ref: str, command: str = "/approve A") -> int:
    """The owner finds the ballot of `pr_ref` in the bot repo and answers it (REST as alice)."""
    api = as_user(sb, OWNER)
    for issue in api.pages(
        f"/repos/{BOT_REPO}/issues", state="open", labels="decision:pending-owner"
    ):
        marker = parse_marker(issue.get("body"))
        if marker and marker.get("pr") == pr_ref:
            api.post(f"/repos/{BOT_REPO}/issues/{issue['number']}/comments", {"body": command})
            return int(issue["number"])
    raise RuntimeError(f"no open ballot issue for {pr_ref}")


@contextlib.contextmanager
def daemon_logs(path: Path) -> Iterator[None]:
    """Send the daemon's structlog events (JSON) to a file for the duration of the demo."""
    with open(path, "a", encoding="utf-8") as fh:
        configure_logging("json", "info", stream=fh)
        try:
            yield
        finally:
            configure_logging("json", "info", stream=sys.stderr)


def config_and_rules(config_dir: Path) -> tuple[Config, tuple[UserRule, ...]]:
    """The demo's config and its user rules, read as `capdaemon tick --config DIR` reads them."""
    return load_config(config_dir), load_user_rules(rule_dir(config_dir))


def run_tick(config_dir: Path, state_dir: Path) -> dict[str, Any]:
    """One tick exactly as `capdaemon tick --once --config DIR --state DIR` runs it."""
    config, rules = config_and_rules(config_dir)
    with open_ticker(config, state_dir, rules=rules) as ticker:
        return run_once(ticker)
