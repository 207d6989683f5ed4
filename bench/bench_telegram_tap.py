"""Benchmark: Telegram tap → merge done, through the GitHub sandbox, and the idle cost of polling.

Run: .venv/bin/python bench/bench_telegram_tap.py [--taps 20] [--idle-seconds 10]
Both sandboxes (GitHub and Telegram Bot API) run in this process, the daemon as `capdaemon run`
wires it: one Ticker, the getUpdates job on its own executor with the default settings (while
a request is live, long polls of `telegram.poll_seconds` = 5 s reopened as soon as one returns;
with nothing live, no request, a look every 5 s). For each tap a level-2 task's PR is
opened, one tick posts the one-tap request, an owner presses Approve through the sandbox's
admin endpoint, and the clock runs until the PR is merged. The baseline is the GitHub 👍 path,
which acts at the next tick (`schedule.tick_seconds`, default 60 s: up to that long). Then,
with nothing live, the job runs for `--idle-seconds` and its Bot API requests are counted
(goal: 0).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from capdaemon.config import ScheduleConfig  # noqa: E402
from ghsandbox import Sandbox  # noqa: E402
from ghsandbox import testing as std  # noqa: E402
from ghsandbox.telegram import DEFAULT_TOKEN, TelegramSandbox  # noqa: E402

CHAT = -1001
OWNER_TG = 4242
GOAL_SECONDS = 10.0


def write_config(directory: Path, sb: Sandbox, key: Path, tg: TelegramSandbox) -> None:
    """The sandbox config plus `telegram:` with default poll settings."""
    directory.mkdir(parents=True)
    (directory / "tg-token").write_text(DEFAULT_TOKEN + "\n")
    (directory / "tg-hmac").write_text("b" * 32 + "\n")
    data = {
        "github": {
            "base_url": sb.base_url,
            "app_id": std.APP_ID,
            "private_key_file": str(key),
            "installation_id": std.INSTALLATION_ID,
        },
        "bot": {"login": f"{std.APP_SLUG}[bot]", "own_repo": std.BOT_REPO},
        "canonical_app": {"slug": std.APP_SLUG, "id": std.APP_ID},
        "owners": [std.OWNER, std.SECOND_OWNER],
        "repos": [{"name": std.REPO, "base": "main", "merge_method": "squash"}],
        "telegram": {
            "api_url": tg.api_url,
            "token_file": "tg-token",
            "hmac_key_file": "tg-hmac",
            "chat_id": CHAT,
            "users": {std.OWNER: OWNER_TG},
        },
    }
    (directory / "capdaemon.yml").write_text(yaml.safe_dump(data, sort_keys=False))


def run(taps: int, idle_seconds: float) -> dict[str, float]:
    import argparse as _ap
    import logging

    from apscheduler.schedulers.background import BackgroundScheduler

    from capdaemon.logging import configure_logging

    configure_logging("json", "error")  # before the modules below bind their loggers
    logging.getLogger("apscheduler").setLevel(logging.ERROR)

    from capdaemon.capability.taskfile import parse_task
    from capdaemon.channels.tgjob import add_poll_job
    from capdaemon.commands._common import load_config_and_rules
    from capdaemon.daemon.service.runner import open_ticker
    from capdaemon.stores.registry import dispatch
    from ghsandbox.testing import user_github

    keys = std.generate_keys()
    with tempfile.TemporaryDirectory() as tmp, TelegramSandbox() as tg:
        tg.state.add_chat(CHAT)
        tg.state.add_user(OWNER_TG, std.OWNER)
        key, _ = std.write_keys(keys, Path(tmp) / "keys")
        sb = Sandbox.start(Path(tmp) / "sb", std.standard_seed(keys, rate_limit=10_000_000))
        try:
            write_config(Path(tmp) / "config", sb, key, tg)
            state = Path(tmp) / "bot-state"
            cap = parse_task(
                {
                    "task_id": "bench-t2",
                    "level": 2,
                    "allowed_resources": {"paths": ["docs/**"], "merge_policy": "tiered"},
                }
            )
            dispatch(state, cap, sb.now(), source="bench")
            config, rules = load_config_and_rules(_ap.Namespace(config=str(Path(tmp) / "config")))
            repo = user_github(sb.base_url, std.token_for(std.OWNER)).get_repo(std.REPO)
            latencies: list[float] = []
            with open_ticker(config, state, rules=rules) as ticker:
                sched = BackgroundScheduler(timezone="UTC")
                add_poll_job(sched, ticker)  # the defaults `capdaemon run` uses
                sched.start()
                try:
                    for i in range(taps):
                        branch = f"agent-1/docs-{i}"
                        sb.commit_files(
                            std.REPO,
                            branch,
                            {f"docs/page{i}.md": f"# Page {i}\n"},
                            f"Page {i}\n\nAgent-Session: bench/model-1/sess-{i:04d}\n"
                            "Task-Id: bench-t2\n",
                            author="agent-1",
                            parent_branch="main",
                        )
                        number = sb.open_pr(std.REPO, branch, "main", f"Page {i}", "", "agent-1")
                        message = _post_request(ticker, tg, number)
                        t0 = time.monotonic()
                        tg.state.press(CHAT, message["message_id"], OWNER_TG, button=0)
                        while not repo.get_pull(number).merged:
                            if time.monotonic() - t0 > 60:
                                raise RuntimeError(f"PR #{number} not merged 60 s after the tap")
                            time.sleep(0.05)
                        latencies.append(time.monotonic() - t0)
                    ticker.wait_idle()  # the merging tick's own edits are not idle cost
                    before = sum(tg.state.counters.values())
                    time.sleep(idle_seconds)
                    idle_requests = sum(tg.state.counters.values()) - before
                finally:
                    sched.shutdown(wait=True)
        finally:
            sb.stop()
    return {
        "median": statistics.median(latencies),
        "max": max(latencies),
        "idle_requests": idle_requests,
        "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _post_request(ticker: Any, tg: TelegramSandbox, number: int) -> dict[str, Any]:
    """Tick until the PR's request is posted (GitHub's write pacing may hold a new PR's
    publication for a tick when taps follow each other within a second); its message."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ticker.tick()
        last = tg.state.list_messages(CHAT)[-1:]
        if last and "reply_markup" in last[0] and f"#{number}\n" in last[0]["text"]:
            return last[0]
        time.sleep(1)
    raise RuntimeError(f"no one-tap request posted for PR #{number} in 120 s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--taps", type=int, default=20)
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    args = parser.parse_args()
    r = run(args.taps, args.idle_seconds)
    baseline = float(ScheduleConfig().tick_seconds)
    print(f"{'measure':<34} {'input':>10} {'time':>9} {'vs baseline':>12} {'peak RSS':>9}")
    print("-" * 78)
    for name, value in (("tap → merged, median", r["median"]), ("tap → merged, max", r["max"])):
        print(
            f"{name:<34} {args.taps:>6} taps {value:>7.2f} s {value / baseline:>11.3f}x "
            f"{r['rss_mib']:>6.0f} MiB"
        )
    print(
        f"{'GitHub 👍 baseline (next tick)':<34} {'':>10} {'≤' + str(int(baseline)):>7} s "
        f"{1.0:>11.3f}x {'':>9}"
    )
    print(
        f"{'idle poll job, Bot API requests':<34} {args.idle_seconds:>8.0f} s "
        f"{int(r['idle_requests']):>9d} {'':>12} {'':>9}"
    )
    ok = r["max"] <= GOAL_SECONDS and r["idle_requests"] == 0
    verdict = "met" if ok else "MISSED"
    print(f"goal: every tap merged within {GOAL_SECONDS:g} s, 0 idle requests → {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
