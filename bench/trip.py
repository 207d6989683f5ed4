"""The trip of one PR through one tick: which modules and functions it passes, and how often it
comes back to a module it already left.

Run: .venv/bin/python bench/trip.py [--calls]
A sandbox (in this process) holds one repo with one open A-quadrant PR (a guide page). A first
tick, not measured, classifies it; it waits on a required `ci` check that is still running.
Then the agent pushes a second commit and `ci` passes on the new head, and a second tick
(`tick --once` as cron runs it: a fresh Ticker) is measured: the known, changed PR is classified
again and merged. With one PR in the sandbox, every call the tick makes is on that PR's trip
(plus the tick's own fixed steps: the safety net, the breaker).

Every call into capdaemon code is recorded (sys.setprofile, on every thread). Printed: the
modules and functions on the trip, and the returns, a call that enters a module from another
module after the trip had already left it (a call back into a module still on the call stack
counts too: the trip doubles back). Rows: all of capdaemon; the trip above the base modules
(the lowest layer of the import contract in pyproject.toml: audit, state, timefmt, logging,
...); daemon/ only; the stack at the merge call; and the PR's reading, the measure the
house issue's figures (about 33 modules, 60 functions, 15 returns) were taken with:

- the calls handed this PR: an argument (not `self`) is its record, snapshot, list entry or
  per-PR object (a capdaemon object that stores `number` and the repo, head or title, or
  holds one such), its Verdict, its number (a parameter named number/pr/pr_number) or its
  key `owner/repo#N`; plus every call on the stack above them: the path from the scheduler;
- public functions only, each counted at its first call (read once, as a reader follows the
  PR): a helper with a leading underscore, a comprehension, a lambda or a dunder method is
  read with its caller, which stands in for it;
- a return is a first call into a module the reading had already left.

On the code of the day the issue was filed (before the typed PR records) this gives 30 / 64
/ 16. `--calls` prints each row's module sequence and returns.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import tempfile
import threading
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_tick import pending_ci, seed_repo, write_config  # noqa: E402

from capdaemon.classify.user_rules import load_user_rules, rule_dir  # noqa: E402
from capdaemon.config import load_config  # noqa: E402
from capdaemon.daemon.service.runner import open_ticker, run_once  # noqa: E402
from capdaemon.logging import configure_logging  # noqa: E402
from capdaemon.model import Verdict  # noqa: E402
from ghsandbox import Sandbox  # noqa: E402
from ghsandbox import testing as std  # noqa: E402

PKG = ROOT / "capdaemon"
MERGE_CALL = ("capdaemon.forge.client", "capdaemon.forge.writes")  # where the merge is asked for
PR_NUMBER = 1  # the scenario's one PR
NUMBER_NAMES = frozenset({"number", "pr", "pr_number"})
READ_WITH_CALLER = ("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>", "<lambda>")


def utility_modules() -> set[str]:
    """The modules of the contract's lowest layer (`capdaemon.<name>`)."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    layers = next(c for c in data["tool"]["importlinter"]["contracts"] if c.get("id") == "layers")[
        "layers"
    ]
    return {f"capdaemon.{n.strip()}" for n in layers[-1].split(":")}


def module_of(filename: str) -> str | None:
    """`capdaemon.x.y` for a file of the package, else None."""
    try:
        rel = Path(filename).resolve().relative_to(PKG.parent)
    except ValueError:
        return None
    parts = list(rel.with_suffix("").parts)
    if parts[0] != "capdaemon":  # the sandbox (its server threads run meanwhile), this script
        return None
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _stored(value: object) -> dict[str, object]:
    """A capdaemon object's stored attributes (no property runs, so no read is triggered)."""
    if not type(value).__module__.startswith("capdaemon"):
        return {}
    out: dict[str, object] = dict(getattr(value, "__dict__", {}))
    for cls in type(value).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if hasattr(value, name):
                out[name] = getattr(value, name)
    return out


def _describes_pr(value: object) -> bool:
    """The PR's record, snapshot or list entry (or, before typed records, its record dict)."""
    if isinstance(value, Verdict):
        return True
    if isinstance(value, dict):  # a record as prs.json holds it (a forge's raw node is not)
        return value.get("number") == PR_NUMBER and "repo" in value
    fields = _stored(value)
    return fields.get("number") == PR_NUMBER and any(
        k in fields for k in ("repo", "head_sha", "title")
    )


def hands_pr(name: str, value: object) -> bool:
    """Whether the argument `name` = `value` is this PR (see the module's docstring)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value == PR_NUMBER and name in NUMBER_NAMES
    if isinstance(value, str):
        return value.endswith(f"#{PR_NUMBER}")
    try:
        return _describes_pr(value) or any(_describes_pr(v) for v in _stored(value).values())
    except Exception:  # an object that refuses inspection is not this PR's
        return False


def _handed(frame: FrameType) -> bool:
    """Whether any argument of the call (not `self`) is this PR."""
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount
    count += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    args = frame.f_locals
    return any(
        hands_pr(n, args[n])
        for n in code.co_varnames[:count]
        if n not in ("self", "cls") and n in args
    )


class Recorder:
    """The calls into capdaemon code, in order: (module, qualified function, caller's module);
    for each, the index of the recorded call it was made under (-1: none) and whether it was
    handed this PR."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str | None]] = []
        self.parents: list[int] = []
        self.handed: list[bool] = []
        self.spine: list[tuple[str, str]] = []  # the stack at the merge call, outermost first
        self._modules: dict[str, str | None] = {}
        self._lock = threading.Lock()
        self._stacks: dict[int, list[tuple[FrameType, int]]] = {}

    def _module(self, filename: str) -> str | None:
        if filename not in self._modules:
            self._modules[filename] = module_of(filename)
        return self._modules[filename]

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        """sys.setprofile hook: record each Python call into a capdaemon module."""
        stack = self._stacks.setdefault(threading.get_ident(), [])
        if event == "return" and stack and stack[-1][0] is frame:
            stack.pop()
        if event != "call":
            return
        mod = self._module(frame.f_code.co_filename)
        if mod is None or frame.f_code.co_name == "<module>":  # a module's import is no step
            return
        if not self.spine and mod in MERGE_CALL and frame.f_code.co_name == "merge":
            self.spine = self._stack(frame)
        caller = frame.f_back
        while caller is not None and self._module(caller.f_code.co_filename) is None:
            caller = caller.f_back  # through the standard library and dependencies
        up = self._module(caller.f_code.co_filename) if caller is not None else None
        parent = self._parent(stack, frame)
        handed = _handed(frame)
        with self._lock:
            stack.append((frame, len(self.calls)))
            self.calls.append((mod, f"{mod}.{frame.f_code.co_qualname}", up))
            self.parents.append(parent)
            self.handed.append(handed)

    @staticmethod
    def _parent(stack: list[tuple[FrameType, int]], frame: FrameType) -> int:
        """The innermost recorded call still running under which `frame` was called."""
        while stack:
            outer, index = stack[-1]
            caller = frame.f_back
            while caller is not None and caller is not outer:
                caller = caller.f_back
            if caller is not None:
                return index
            stack.pop()  # left without a return event (a generator's frame, an unwinding)
        return -1

    def _stack(self, frame: FrameType | None) -> list[tuple[str, str]]:
        out = []
        while frame is not None:
            mod = self._module(frame.f_code.co_filename)
            if mod is not None:
                out.append((mod, f"{mod}.{frame.f_code.co_qualname}"))
            frame = frame.f_back
        return out[::-1]

    @contextmanager
    def on(self) -> Iterator[None]:
        """Record while the block runs (this thread and threads started meanwhile)."""
        threading.setprofile(self.profile)
        sys.setprofile(self.profile)
        try:
            yield
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]


def trip(calls: list[tuple[str, str, str | None]], keep: set[str] | None) -> dict[str, Any]:
    """Modules (in order of first visit), functions and returns of the calls; with `keep`, only
    the calls into those modules count (a skipped call's caller stands in for it)."""
    modules: list[str] = []
    functions: set[str] = set()
    returns: list[str] = []
    current: str | None = None
    for mod, fn, _up in calls:
        if keep is not None and mod not in keep:
            continue
        functions.add(fn)
        if mod == current:
            continue
        if mod in modules:
            returns.append(f"{current} -> {mod}")
        else:
            modules.append(mod)
        current = mod
    return {"modules": modules, "functions": functions, "returns": returns}


def reading(rec: Recorder) -> list[tuple[str, str, str | None]]:
    """The PR's reading (see the module's docstring): the calls handed this PR and the calls
    above them, public functions only, each at its first call."""
    keep = [False] * len(rec.calls)
    for i, handed in enumerate(rec.handed):
        j = i if handed else -1
        while j >= 0 and not keep[j]:
            keep[j] = True
            j = rec.parents[j]
    out: list[tuple[str, str, str | None]] = []
    seen: set[str] = set()
    for (mod, fn, up), kept in zip(rec.calls, keep, strict=True):
        name = fn.rsplit(".", 1)[-1]
        if not kept or fn in seen or name.startswith("_") or name in READ_WITH_CALLER:
            continue
        seen.add(fn)
        out.append((mod, fn, up))
    return out


def scenario(rec: Recorder) -> str:
    """Seed, tick once unmeasured, change the PR, tick once measured; the PR's final state."""
    keys = std.generate_keys()
    with tempfile.TemporaryDirectory() as tmp:
        key, _ = std.write_keys(keys, Path(tmp) / "keys")
        sb = Sandbox.start(Path(tmp) / "sb", std.standard_seed(keys, rate_limit=10_000_000))
        try:
            full = seed_repo(sb, "trip", 1)  # PR #1: a guide page, quadrant A
            config_dir, state = Path(tmp) / "config", Path(tmp) / "state"
            write_config(config_dir, sb, key, [full], mode="enforce")
            pending_ci(sb, full)
            config = load_config(config_dir)
            rules = load_user_rules(rule_dir(config_dir))
            with open_ticker(config, state, rules=rules) as ticker:
                run_once(ticker)  # known: classified, waiting on `ci`
            sb.commit_files(
                full,
                "agent-1/pr0",
                {"docs/guide/page0.md": "# Page 0\n\nA second paragraph.\n"},
                "Extend page 0\n\nAgent-Session: claude-code/claude-opus-4/sess-00000000\n",
                author="agent-1",
            )
            _ci_passes(sb, full)
            with open_ticker(config, state, rules=rules) as ticker, rec.on():
                run_once(ticker)
            pr = sb.backend.repo(full)["issues"]["1"]
            return "merged" if pr["pull"].get("merged") else str(pr["state"])
        finally:
            sb.stop()


def _ci_passes(sb: Sandbox, full: str) -> None:
    """The `ci` check run on the PR's (new) head completes with success."""
    pending_ci(sb, full)  # a run on the new head
    b = sb.backend
    with b.lock:
        for run in b.repo(full)["check_runs"].values():
            if run["name"] == "ci":
                run.update(status="completed", conclusion="success", completed_at=b.now())
        b.store.save()


def main() -> int:
    """Print the trip's figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", action="store_true", help="print the module sequence")
    args = ap.parse_args()
    configure_logging("json", "error")
    rec = Recorder()
    outcome = scenario(rec)
    print(f"the PR after the measured tick: {outcome}; {len(rec.calls)} calls recorded")
    util = utility_modules()
    every = {m for m, _, _ in rec.calls}
    daemon = {m for m in every if m.startswith("capdaemon.daemon.")}
    rows = [
        ("all of capdaemon", trip(rec.calls, None)),
        ("above the base modules", trip(rec.calls, every - util)),
        ("daemon/ only", trip(rec.calls, daemon)),
        ("the merge call's stack", trip([(m, f, None) for m, f in rec.spine], None)),
        ("the PR's reading", trip(reading(rec), None)),
    ]
    print(f"{'trip':<26} {'modules':>8} {'functions':>10} {'returns':>8}")
    for label, t in rows:
        n_mod, n_fn, n_ret = len(t["modules"]), len(t["functions"]), len(t["returns"])
        print(f"{label:<26} {n_mod:>8} {n_fn:>10} {n_ret:>8}")
    if args.calls:
        for label, t in rows:
            print(f"\n{label}: modules in order of first visit")
            for m in t["modules"]:
                print(f"  {m}")
            print(f"{label}: returns")
            for r in t["returns"]:
                print(f"  {r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
