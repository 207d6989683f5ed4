"""Benchmark: an owner's 👍 on a one-tap request → merge done, under `capdaemon run`-style ticks,
before and after the same-tick republish of a decided one-tap.

Run: .venv/bin/python bench/bench_vote_reaction.py [--prs 12] [--tick 20] [--every 5]

One sandbox per variant, one repo; `prs` level-2 task PRs (tier 2: each needs an owner's 👍 on
its `decision:one-tap` issue). A cold-start tick opens the requests; then a Ticker (built as
`capdaemon run` builds it) ticks every `tick` seconds in a thread while the owner taps 👍 on one
request every `every` seconds, over HTTP as a user would. Reaction = the PR's `merged_at` minus
the 👍's `created_at` (both the sandbox's clock). "before" restores the old step: the one-tap
is recorded in one tick and the PR republished and merged by the next; "after" is this tree.
The daemon's own figures (tick_metrics.json, `merge_done` and `ballot_counted`) are printed
next to the bench's, to show the metric agrees with an outside measurement.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_tick import write_config  # noqa: E402

from capdaemon.capability.taskfile import parse_task  # noqa: E402
from capdaemon.commands._common import load_config_and_rules  # noqa: E402
from capdaemon.daemon.ballots import votes as ballots  # noqa: E402
from capdaemon.daemon.service.runner import open_ticker  # noqa: E402
from capdaemon.decide.reaction import percentile  # noqa: E402
from capdaemon.logging import configure_logging  # noqa: E402
from capdaemon.stores.registry import dispatch  # noqa: E402
from ghsandbox import Sandbox  # noqa: E402
from ghsandbox import testing as std  # noqa: E402

TASK = "bench-tap"
TRAILER = f"Agent-Session: claude-code/claude-opus-4/sess-bench\nTask-Id: {TASK}\n"
BASE = {"src/app.py": "def f():\n    return 1\n", "docs/old.md": "# old\n"}


def _old_one_taps(t: Any) -> None:
    """The step before: record the one-tap, republish (and merge) at the next tick."""
    t.deps.safety.tiers.poll(t.ctx.seen, t.now, t.reads, t.report)


def run_variant(name: str, args: argparse.Namespace, keys: Any) -> dict[str, Any]:
    """One sandbox, one ticking Ticker, the scripted taps; the measurements."""
    saved = ballots._one_taps
    if name == "before":
        ballots._one_taps = _old_one_taps
    try:
        with tempfile.TemporaryDirectory() as tmp:
            key, _ = std.write_keys(keys, Path(tmp) / "keys")
            seed = std.standard_seed(keys, rate_limit=10_000_000)
            sb = Sandbox.start(Path(tmp) / "sb", seed)
            sb.set_fidelity(points_per_minute=0, content_per_minute=0, content_per_hour=0)
            token = next(u["token"] for u in seed["users"] if u["login"] == std.OWNER)
            try:
                return _scenario(sb, key, token, Path(tmp), args)
            finally:
                sb.stop()
    finally:
        ballots._one_taps = saved


def _open_prs(sb: Sandbox, full: str, n: int) -> list[int]:
    numbers = []
    for i in range(n):
        branch = f"agent-1/tap{i}"
        page = {f"docs/page{i}.md": f"# Page {i}\n"}
        sb.commit_files(full, branch, page, f"Page {i}\n\n{TRAILER}", "agent-1", "main")
        numbers.append(sb.open_pr(full, branch, "main", f"Page {i}", None, "agent-1"))
    return numbers


def _scenario(
    sb: Sandbox, key: Path, token: str, tmp: Path, args: argparse.Namespace
) -> dict[str, Any]:
    full = sb.create_repo(std.ORG, "taps", files={"README.md": "# taps\n", **BASE})
    write_config(tmp / "config", sb, key, [full], "enforce")
    cfg_file = tmp / "config" / "capdaemon.yml"
    data = yaml.safe_load(cfg_file.read_text(encoding="utf-8"))
    for repo in data["repos"]:
        repo.pop("extra_checks", None)  # no outside CI: the one-tap is the only thing waited on
    cfg_file.write_text(yaml.safe_dump(data), encoding="utf-8")
    state = tmp / "state"
    task = {"task_id": TASK, "title": "bench", "level": 2}
    task["allowed_resources"] = {"paths": ["**"], "merge_policy": "tiered", "ttl_hours": 48}
    dispatch(state, parse_task(task), datetime.now(UTC), source="bench")
    numbers = _open_prs(sb, full, args.prs)
    config, rules = load_config_and_rules(argparse.Namespace(config=str(tmp / "config")))
    stop = threading.Event()
    ticks = [0]
    owner = std.user_github(sb.base_url, token).get_repo(std.BOT_REPO)
    tapped: dict[int, float] = {}
    with open_ticker(config, state, rules=rules) as ticker:
        ticker.tick()  # the cold start opens the one-tap requests
        requests = json.loads((state / "safety.json").read_text(encoding="utf-8"))["one_tap"]

        def tick_loop() -> None:
            while not stop.is_set():
                started = time.monotonic()
                ticker.tick()
                ticks[0] += 1
                stop.wait(max(0.0, args.tick - (time.monotonic() - started)))

        thread = threading.Thread(target=tick_loop, daemon=True)
        thread.start()
        for n in numbers:
            issue = owner.get_issue(int(requests[f"{full}#{n}"]["issue"]))
            tapped[n] = issue.create_reaction("+1").created_at.timestamp()
            stop.wait(args.every)
        time.sleep(args.tick * 2 + 5)  # two more ticks reach every tap
        stop.set()
        thread.join()
    reactions = []
    for n, at in tapped.items():
        merged = sb.backend.issue(full, n)["pull"]["merged_at"]
        if merged:
            reactions.append(datetime.fromisoformat(merged.replace("Z", "+00:00")).timestamp() - at)
    metrics = json.loads((state / "tick_metrics.json").read_text(encoding="utf-8"))
    own = {k: [s for _, s in v] for k, v in metrics["reaction_samples"].items()}
    return {"tapped": len(tapped), "merged": len(reactions), "bench": reactions, **own}


def _fig(xs: list[float]) -> str:
    if not xs:
        return f"{'-':>6} {'-':>6} {'-':>6}"
    return f"{percentile(xs, 50):>6.1f} {percentile(xs, 95):>6.1f} {max(xs):>6.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prs", type=int, default=12)
    ap.add_argument("--tick", type=float, default=20.0, help="tick interval (s)")
    ap.add_argument("--every", type=float, default=5.0, help="a 👍 every this many seconds")
    args = ap.parse_args()
    configure_logging("json", "error")
    keys = std.generate_keys()
    rows = [(name, run_variant(name, args, keys)) for name in ("before", "after")]
    print(
        f"owner 👍 on a one-tap → merge done: 1 repo × {args.prs} tier-2 PRs, enforce, a tick "
        f"every {args.tick:g} s, a 👍 every {args.every:g} s"
    )
    print(
        f"{'variant':<8} {'tapped':>6} {'merged':>6} | {'bench: p50 / p95 / max (s)':>22} | "
        f"{'tick_metrics merge_done':>22} | {'ballot_counted':>20}"
    )
    for name, r in rows:
        print(
            f"{name:<8} {r['tapped']:>6} {r['merged']:>6} | {_fig(r['bench']):>22} | "
            f"{_fig(r.get('merge_done', [])):>22} | {_fig(r.get('ballot_counted', [])):>20}"
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
