"""`capdaemon demo`: a throw-away sandbox, agent PRs via git, real ticks, results checked."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import yaml

from capdaemon.daemon.demo_output import Narrator, ballots_line, explain, outcome_table
from capdaemon.sandbox import testing as std

REPO = std.REPO
BOT_REPO = std.BOT_REPO
OWNER = std.OWNER
AGENT_SESSION = "claude-code/claude-opus-4/{session}"

# Files the supervised repo starts with (besides the standard README, src/widgets, docs, CI).
BASE_FILES: dict[str, str] = {
    "src/multiagent_protocol/__init__.py": '"""The multi-agent protocol bot."""\n',
    "src/multiagent_protocol/router.py": textwrap.dedent(
        '''\
        """Routes agent messages to their handlers."""


        def route_message(msg, handlers):
            """Find the handler for a message kind and call it."""
            h = handlers.get(msg["kind"])
            if h is None:
                return None
            return h(msg)
        '''
    ),
    "src/multiagent_protocol/pr_validator.py": textwrap.dedent(
        '''\
        """Decides whether an agent PR may merge."""


        def can_merge(pr):
            """A PR may merge when its checks passed and an owner approved it."""
            return pr.checks_passed and pr.owner_approved
        '''
    ),
    "src/multiagent_protocol/legacy_shim.py": '"""Shim for the v1 message format."""\n\n'
    'def upgrade(msg):\n    return {**msg, "v": 2}\n',
    "examples/old.py": '"""An outdated example."""\n\nprint("hello from v1")\n',
    "scripts/finish-task.sh": '#!/bin/sh\nexec capdaemon finish-task "$@"\n',
    "cron_settings.json": '{"jobs": [{"name": "nightly-digest", "at": "09:00"}]}\n',
}


@dataclass(frozen=True)
class DemoPR:
    """One agent PR of the demo and what capdaemon is expected to do with it."""

    key: str
    agent: str
    branch: str
    title: str
    files: Mapping[str, str | None]  # path → new text, None deletes
    task: str
    expect_quadrant: str
    expect: str  # merged | merged-after-approval | blocked-scope | pending
    self_label: str | None = None


PRS: tuple[DemoPR, ...] = (
    DemoPR(
        "typo",
        "agent-1",
        "agent-1/readme-typo",
        "Fix a typo in the README",
        {"README.md": "# widgets\n\nSupervised by capdaemon!\n"},
        "task-101",
        "A",
        "merged",
    ),
    DemoPR(
        "refactor",
        "agent-1",
        "agent-1/router-refactor",
        "Refactor route_message for clarity",
        {
            "src/multiagent_protocol/router.py": BASE_FILES["src/multiagent_protocol/router.py"]
            .replace("h = handlers", "handler = handlers")
            .replace("if h is None", "if handler is None")
            .replace("return h(msg)", "return handler(msg)")
        },
        "task-102",
        "B",
        "merged",
    ),
    DemoPR(
        "cleanup",
        "agent-2",
        "agent-2/drop-old-example",
        "Delete the outdated example",
        {"examples/old.py": None},
        "task-103",
        "C",
        "merged",
    ),
    DemoPR(
        "merge-logic",
        "agent-1",
        "agent-1/merge-rule",
        "Let PRs merge on green checks alone",
        {
            "src/multiagent_protocol/pr_validator.py": BASE_FILES[
                "src/multiagent_protocol/pr_validator.py"
            ].replace("return pr.checks_passed and pr.owner_approved", "return pr.checks_passed")
        },
        "task-104",
        "D",
        "merged-after-approval",
    ),
    DemoPR(
        "scope",
        "agent-2",
        "agent-2/finish-task",
        "Harden finish-task.sh",
        {
            "scripts/finish-task.sh": '#!/bin/sh\nset -eu\nexec capdaemon finish-task "$@"\n',
            "cron_settings.json": '{"jobs": []}\n',
        },
        "task-2364",
        "B",
        "blocked-scope",
    ),
    DemoPR(
        "forged-label",
        "agent-2",
        "agent-2/revert-shim",
        "Revert: drop the legacy shim",
        {"src/multiagent_protocol/legacy_shim.py": None},
        "task-105",
        "D",
        "pending",
        self_label="decision:auto-revert",
    ),
)

TASKS: dict[str, list[str]] = {
    "task-101": ["README.md"],
    "task-102": ["src/multiagent_protocol/router.py"],
    "task-103": ["examples/**"],
    "task-104": ["src/multiagent_protocol/pr_validator.py"],
    "task-2364": [
        "scripts/finish-task.sh"
    ],  # the seed's incident: the branch also edits cron settings
    "task-105": ["src/multiagent_protocol/legacy_shim.py"],
}


@dataclass
class DemoResult:
    """What the demo saw, per PR, and whether every expectation held."""

    root: Path
    base_url: str
    numbers: dict[str, int] = field(default_factory=dict)
    rows: list[list[str]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when every expected outcome happened."""
        return not self.failures


def _git(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    """Run git quietly; raise with stderr on failure."""
    proc = subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:2])} failed: {proc.stderr.strip()[:300]}")
    return proc.stdout


def user_github(base_url: str, token: str) -> Any:
    """PyGithub as one sandbox user (no client-side pacing: the sandbox is local)."""
    import github

    return github.Github(
        base_url=base_url,
        auth=github.Auth.Token(token),
        seconds_between_requests=None,
        seconds_between_writes=None,
    )


def _sample_config_dir() -> Path | None:
    """The sample config (packaged, or the source checkout's config/) that the demo copies."""
    from capdaemon.resources import sample_config_dir

    here = sample_config_dir()
    return here if (here / "capdaemon.yml").is_file() else None


def write_config(config_dir: Path, *, base_url: str, key_file: Path) -> None:
    """Copy the sample config and point it at the sandbox (App auth, demo repos, the hard wall)."""
    sample = _sample_config_dir()
    if sample is not None:
        shutil.copytree(sample, config_dir, dirs_exist_ok=True)
    config_dir.mkdir(parents=True, exist_ok=True)
    main = config_dir / "capdaemon.yml"
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
    header = "# capdaemon.yml for `capdaemon demo`: the sample config pointed at the sandbox.\n"
    main.write_text(header + yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def dispatch_tasks(state_dir: Path, now: datetime) -> None:
    """Dispatch every demo task (the capability snapshots the hard wall checks PRs against)."""
    from capdaemon.capability.taskfile import parse_task
    from capdaemon.stores.registry import dispatch

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


def push_agent_prs(sb: Any, work: Path, say: Callable[[str], None]) -> dict[str, int]:
    """Agents clone over HTTP, commit with Agent-Session/Task-Id trailers, push, open their PRs."""
    import github

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
        gh = user_github(sb.base_url, token)
        repo = gh.get_repo(REPO)
        created = repo.create_pull(
            title=pr.title, body=f"Task {pr.task}.", head=pr.branch, base="main"
        )
        if pr.self_label:
            with contextlib.suppress(github.GithubException):
                repo.create_label(pr.self_label, "d73a4a")
            created.as_issue().add_to_labels(pr.self_label)  # the agent labels its own PR
        numbers[pr.key] = created.number
        say(f"  {pr.agent} pushed {pr.branch} → PR #{created.number} {pr.title!r}")
    return numbers


def approve_ballot(sb: Any, pr_ref: str, command: str = "/approve A") -> int:
    """The owner finds the ballot of `pr_ref` in the bot repo and answers it (PyGithub as alice)."""

    from capdaemon.forge.markers import parse_marker

    gh = user_github(sb.base_url, std.token_for(OWNER))
    repo = gh.get_repo(BOT_REPO)
    for issue in repo.get_issues(state="open", labels=["decision:pending-owner"]):
        marker = parse_marker(issue.body)
        if marker and marker.get("pr") == pr_ref:
            issue.create_comment(command)
            return int(issue.number)
    raise RuntimeError(f"no open ballot issue for {pr_ref}")


@contextlib.contextmanager
def _daemon_logs(path: Path) -> Iterator[None]:
    """Send the daemon's structlog events (JSON) to a file for the duration of the demo."""
    from capdaemon.logging import configure_logging

    with open(path, "a", encoding="utf-8") as fh:
        configure_logging("json", "info", stream=fh)
        try:
            yield
        finally:
            configure_logging("json", "info", stream=sys.stderr)


def run_tick(config_dir: Path, state_dir: Path) -> dict[str, Any]:
    """One tick exactly as `capdaemon tick --once --config DIR --state DIR` runs it."""
    import argparse

    from capdaemon.commands._common import load_config_and_rules
    from capdaemon.daemon.runner import open_ticker, run_once

    config, rules = load_config_and_rules(argparse.Namespace(config=str(config_dir)))
    with open_ticker(config, state_dir, rules=rules) as ticker:
        return run_once(ticker)


def _issues_by_pr(sb: Any) -> dict[str, list[tuple[int, str, tuple[str, ...]]]]:
    """Decision issues in the bot repo, by the PR their marker names: (number, state, labels)."""

    from capdaemon.forge.markers import parse_marker

    gh = user_github(sb.base_url, std.token_for(OWNER))
    out: dict[str, list[tuple[int, str, tuple[str, ...]]]] = {}
    for issue in gh.get_repo(BOT_REPO).get_issues(state="all"):
        marker = parse_marker(issue.body) or {}
        if marker.get("pr"):
            out.setdefault(marker["pr"], []).append(
                (issue.number, issue.state, tuple(lb.name for lb in issue.labels))
            )
    return out


def check_outcomes(sb: Any, state_dir: Path, result: DemoResult) -> None:
    """Compare what happened with what each PR expects; fill the table rows and the failures."""

    from capdaemon.audit import story

    gh = user_github(sb.base_url, std.token_for(OWNER))
    repo = gh.get_repo(REPO)
    issues = _issues_by_pr(sb)
    for pr in PRS:
        number = result.numbers[pr.key]
        ref = f"{REPO}#{number}"
        records = story(state_dir, ref)
        classes = [r for r in records if "quadrant" in r and "action" not in r]
        quadrant = classes[-1]["quadrant"] if classes else "?"
        reasoning = classes[-1].get("reasoning", "") if classes else ""
        blocking = classes[-1].get("blocking", []) if classes else []
        pull = repo.get_pull(number)
        mine = issues.get(ref, [])
        kinds = ", ".join(
            f"#{n} {'/'.join(lb.split(':')[-1] for lb in labels)} ({state})"
            for n, state, labels in mine
        )
        if pull.merged:
            action = "merged"
            if pr.expect == "merged-after-approval":
                action = f"ballot approved by {OWNER} → merged"
        elif blocking:
            action = "blocked: L1.C3 failed (scope violation)"
        else:
            action = "waiting: owner ballot pending"
        if kinds:
            action += f"; issues {kinds}"
        files = ", ".join(("-" if t is None else "") + p for p, t in pr.files.items())
        result.rows.append([f"#{number}", files, quadrant, reasoning, action])
        if quadrant != pr.expect_quadrant:
            result.failures.append(
                f"{ref} ({pr.key}): quadrant {quadrant}, expected {pr.expect_quadrant}"
            )
        want_merged = pr.expect in ("merged", "merged-after-approval")
        if bool(pull.merged) != want_merged:
            result.failures.append(
                f"{ref} ({pr.key}): merged={pull.merged}, expected {want_merged}"
            )
        if pr.expect == "blocked-scope" and not any(
            "decision:scope-violation" in lb for _, _, lb in mine
        ):
            result.failures.append(f"{ref} ({pr.key}): no decision:scope-violation issue")
        if pr.expect_quadrant in ("B", "C") and not mine:
            result.failures.append(f"{ref} ({pr.key}): no passive review issue")
        if pr.self_label:
            fired = (
                {r.get("rule"): r for r in classes[-1].get("rules_fired", [])} if classes else {}
            )
            if fired.get("auto_revert_marker", {}).get("result") != "abstain":
                result.failures.append(f"{ref} ({pr.key}): the self-applied label was not ignored")


def run_demo(
    directory: Path | None = None,
    *,
    keep_running: bool = False,
    stream: TextIO | None = None,
) -> DemoResult:
    """The whole demo; returns its result (the caller maps `ok` to the exit code)."""
    from capdaemon.cli import main as cli_main
    from capdaemon.sandbox import Sandbox

    say = Narrator(stream or sys.stdout)
    started = time.monotonic()
    temporary = directory is None and not keep_running  # removed at the end
    root = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="capdaemon-demo-"))
    root.mkdir(parents=True, exist_ok=True)
    root = root.resolve()
    say(f"capdaemon demo — everything lives in {root}")
    keys = std.generate_keys()
    key_file, _ = std.write_keys(keys, root / "keys")
    seed = std.standard_seed(keys)
    seed["repos"][0]["files"] = {**seed["repos"][0]["files"], **BASE_FILES}
    sb = Sandbox.start(root / "sandbox", seed)
    result = DemoResult(root=root, base_url=sb.base_url)
    try:
        config_dir, state_dir = root / "config", root / "bot-state"
        write_config(config_dir, base_url=sb.base_url, key_file=key_file)
        now = datetime.now(UTC)
        dispatch_tasks(state_dir, now)
        say(f"sandbox GitHub at {sb.base_url}: owner {OWNER}, agents {', '.join(std.AGENTS)},")
        say(
            f"  App {std.APP_SLUG} (id {std.APP_ID}), supervised {REPO} "
            f"(require_capability: true), bot repo {BOT_REPO}"
        )
        say(f"dispatched {len(TASKS)} task capabilities into {state_dir}/capabilities")
        say("")
        say("1. agents push their work with git over HTTP and open PRs:")
        (root / "work").mkdir(exist_ok=True)
        result.numbers = push_agent_prs(sb, root / "work", say)
        with _daemon_logs(root / "capdaemon.log"):
            say("")
            say("2. capdaemon tick (classify, publish L1.C3, open decision issues, merge):")
            first = run_tick(config_dir, state_dir)
            say(
                f"  classified {len(first['classified'])}, merged {len(first['merged'])}, "
                f"issues opened {len(first['issues'])}, {first['seconds']:.2f} s, "
                f"{first['api_requests']} API requests"
            )
            d_ref = f"{REPO}#{result.numbers['merge-logic']}"
            issue = approve_ballot(sb, d_ref)
            say("")
            say(f"3. owner {OWNER} answers ballot {BOT_REPO}#{issue} for {d_ref} with `/approve A`")
            say("")
            say("4. capdaemon tick (polls the ballot, republishes L1.C3, merges at the sha):")
            second = run_tick(config_dir, state_dir)
            say(
                f"  merged {', '.join(second['merged']) or 'nothing'}; "
                f"ballots: {ballots_line(second['ballots'])}"
            )
            third = run_tick(config_dir, state_dir)
            say(
                f"  a third tick changes nothing: classified {len(third['classified'])}, "
                f"merged {len(third['merged'])}, {third['api_requests']} API requests"
            )
            say("")
            say(
                "5. Telegram one-tap: a tier-2 PR approved from the owners' chat (Bot API sandbox):"
            )
            from capdaemon.daemon.demo_telegram import run_telegram_step

            run_telegram_step(sb, root, config_dir, state_dir, say, result.failures, now)
        check_outcomes(sb, state_dir, result)
        say("")
        for line in outcome_table(result.rows):
            say(line)
        say("")
        say(f"6. the story of {d_ref} (`capdaemon why {d_ref}` on the state folder):")
        story = io.StringIO()
        with contextlib.redirect_stdout(story):
            cli_main(["why", d_ref, "--state", str(state_dir)])
        for line in story.getvalue().splitlines():
            say(line)
        result.seconds = round(time.monotonic() - started, 1)
        say("")
        explain(say, result.root, sb, config_dir, state_dir, keep_running, temporary)
        if result.failures:
            say("")
            say("DEMO FAILED — unexpected outcomes:")
            for f in result.failures:
                say(f"  - {f}")
        else:
            say(f"demo ok: every expected outcome happened ({result.seconds} s)")
        if keep_running:
            say("")
            say("the sandbox keeps running; Ctrl-C to stop it")
            with contextlib.suppress(KeyboardInterrupt):
                while True:
                    time.sleep(3600)
    finally:
        sb.stop()
        if temporary:
            shutil.rmtree(root, ignore_errors=True)
    return result


def summary_json(result: DemoResult) -> str:
    """The result as one JSON line (for scripts)."""
    return json.dumps(
        {
            "ok": result.ok,
            "root": str(result.root),
            "prs": result.numbers,
            "failures": result.failures,
            "seconds": result.seconds,
        }
    )
