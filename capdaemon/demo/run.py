"""`capdaemon demo`: a throw-away sandbox, agent PRs via git, real ticks, results checked."""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from capdaemon.audit import story
from capdaemon.demo.outcomes import DemoResult, check_outcomes
from capdaemon.demo.output import Narrator, ballots_line, explain, outcome_table
from capdaemon.demo.scenario import BASE_FILES, BOT_REPO, OWNER, REPO, TASKS
from capdaemon.demo.steps import (
    approve_ballot,
    daemon_logs,
    dispatch_tasks,
    push_agent_prs,
    run_tick,
    write_config,
)
from capdaemon.demo.telegram import run_telegram_step
from capdaemon.quoting import printable
from capdaemon.story import tell
from ghsandbox import testing as std
from ghsandbox.server import Sandbox


def run_demo(
    directory: Path | None = None,
    *,
    keep_running: bool = False,
    stream: TextIO | None = None,
) -> DemoResult:
    """The whole demo; returns its result (the caller maps `ok` to the exit code).

    Without `directory` everything lives in a new temporary folder, which holds the sandbox
    App's private key: it is removed on every way out — success, a failed step, an exception
    (git missing), Ctrl-C or SIGTERM, and after --keep-running is stopped."""
    say = Narrator(stream or sys.stdout)
    started = time.monotonic()
    temporary = directory is None
    root = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="capdaemon-demo-"))
    with _removed_on_exit(root if temporary else None):
        root.mkdir(parents=True, exist_ok=True)
        root = root.resolve()
        say(f"capdaemon demo — everything lives in {root}")
        sb, key_file = _start_sandbox(root)
        try:
            return _steps(say, sb, root, key_file, keep_running, temporary, started)
        finally:
            sb.stop()


@contextlib.contextmanager
def _removed_on_exit(folder: Path | None) -> Iterator[None]:
    """Remove `folder` (None: keep it) however the block ends; SIGTERM ends it like Ctrl-C."""
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM during the demo: unwind (so `finally` blocks run) and exit 143 like a kill."""
    raise SystemExit(128 + signum)


def _steps(
    say: Narrator,
    sb: Sandbox,
    root: Path,
    key_file: Path,
    keep_running: bool,
    temporary: bool,
    started: float,
) -> DemoResult:
    """Steps 1-6 against the running sandbox, the outcomes checked; the result."""
    result = DemoResult(root=root, base_url=sb.base_url)
    config_dir, state_dir = root / "config", root / "bot-state"
    write_config(config_dir, base_url=sb.base_url, key_file=key_file)
    now = datetime.now(UTC)
    dispatch_tasks(state_dir, now)
    _introduce(say, sb, state_dir)
    say("1. agents push their work with git over HTTP and open PRs:")
    (root / "work").mkdir(exist_ok=True)
    result.numbers = push_agent_prs(sb, root / "work", say)
    with daemon_logs(root / "capdaemon.log"):
        d_ref = _daemon_at_work(say, sb, config_dir, state_dir, result)
        say("")
        say("5. Telegram one-tap: a tier-2 PR approved from the owners' chat (Bot API sandbox):")
        run_telegram_step(sb, root, config_dir, state_dir, say, result.failures, now)
    check_outcomes(sb.base_url, state_dir, result)
    say("")
    for line in outcome_table(result.rows):
        say(line)
    say("")
    _tell_story(say, d_ref, state_dir)
    result.seconds = round(time.monotonic() - started, 1)
    say("")
    explain(say, result.root, sb, config_dir, state_dir, keep_running, temporary)
    _conclude(say, result)
    if keep_running:
        _hold(say)
    return result


def _start_sandbox(root: Path) -> tuple[Sandbox, Path]:
    """The standard sandbox seeded with the demo repo's files; and the App's private key file."""
    keys = std.generate_keys()
    key_file, _ = std.write_keys(keys, root / "keys")
    seed = std.default_world_seed(keys)
    seed["repos"][0]["files"] = {**seed["repos"][0]["files"], **BASE_FILES}
    return Sandbox.start(root / "sandbox", seed), key_file


def _introduce(say: Narrator, sb: Sandbox, state_dir: Path) -> None:
    say(f"sandbox GitHub at {sb.base_url}: owner {OWNER}, agents {', '.join(std.AGENTS)},")
    say(
        f"  App {std.APP_SLUG} (id {std.APP_ID}), supervised {REPO} "
        f"(require_capability: true), bot repo {BOT_REPO}"
    )
    say(f"dispatched {len(TASKS)} task capabilities into {state_dir}/capabilities")
    say("")


def _daemon_at_work(
    say: Narrator, sb: Sandbox, config_dir: Path, state_dir: Path, result: DemoResult
) -> str:
    """Steps 2-4: a tick, the owner's ballot, two more ticks; returns the D PR's reference."""
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
    return d_ref


def _tell_story(say: Narrator, d_ref: str, state_dir: Path) -> None:
    """Step 6: what `capdaemon why` prints for the D PR (the same reader and teller)."""
    say(f"6. the story of {d_ref} (`capdaemon why {d_ref}` on the state folder):")
    records = story(state_dir, d_ref, lambda where: say(f"  (skipped: {where})"))
    say(f"{d_ref}: {len(records)} record(s)")
    for line in tell(records):
        say(printable(line))


def _conclude(say: Narrator, result: DemoResult) -> None:
    if result.failures:
        say("")
        say("DEMO FAILED — unexpected outcomes:")
        for f in result.failures:
            say(f"  - {f}")
    else:
        say(f"demo ok: every expected outcome happened ({result.seconds} s)")


def _hold(say: Narrator) -> None:
    """Keep the sandbox up until Ctrl-C."""
    say("")
    say("the sandbox keeps running; Ctrl-C to stop it")
    with contextlib.suppress(KeyboardInterrupt):
        while True:
            time.sleep(3600)


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
