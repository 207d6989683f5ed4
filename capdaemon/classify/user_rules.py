"""User rules (SPEC 2.7): load config/skills/classifier/*.py; run each raise-only, time-boxed."""

from __future__ import annotations

import re
import threading
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capdaemon.model import PRSnapshot, Quadrant, RuleOutcome, RuleResult

RULE_DIR = Path("skills") / "classifier"
MAX_REASON = 300
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class LoadError(RuntimeError):
    """A user rule file that cannot be loaded; the message names the file and line."""

    def __init__(self, path: Path, line: int | None, message: str) -> None:
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line


@dataclass(frozen=True)
class UserRule:
    """A loaded user rule: `rule(snapshot) -> (quadrant letter | None, reason)`."""

    name: str
    func: Callable[[PRSnapshot], Any]
    path: str = ""

    @property
    def audit_name(self) -> str:
        """The name in the audit log: `user.<name>`."""
        return f"user.{self.name}"


def rule_dir(config_dir: Path) -> Path:
    """Where user rules live under a config directory."""
    return config_dir / RULE_DIR


def load_user_rules(directory: Path) -> tuple[UserRule, ...]:
    """Load every `*.py` in `directory` in name order (files starting with `_` are skipped).

    Each file must define a callable `rule(snapshot)`. Raises LoadError naming the file and
    line for a syntax error, an exception while the module runs, or a missing `rule`.
    A missing directory means no user rules.
    """
    if not directory.is_dir():
        return ()
    rules: list[UserRule] = []
    for path in sorted(directory.glob("*.py"), key=lambda p: p.name):
        if path.name.startswith("_"):
            continue
        rules.append(load_rule_file(path))
    return tuple(rules)


def load_rule_file(path: Path) -> UserRule:
    """Load one rule file (see load_user_rules)."""
    name = path.stem
    if not _NAME.match(name):
        raise LoadError(path, None, f"rule name {name!r} must match {_NAME.pattern}")
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LoadError(path, None, f"cannot read: {exc}") from exc
    try:
        code = compile(source, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise LoadError(path, exc.lineno, f"syntax error: {exc.msg}") from exc
    module = types.ModuleType(f"capdaemon_user_rule_{name.replace('-', '_').replace('.', '_')}")
    module.__file__ = str(path)
    try:
        exec(code, module.__dict__)
    except Exception as exc:
        line = _line_in(exc, str(path))
        raise LoadError(path, line, f"error while loading: {type(exc).__name__}: {exc}") from exc
    func = module.__dict__.get("rule")
    if not callable(func):
        raise LoadError(path, None, "defines no callable rule(snapshot)")
    return UserRule(name=name, func=func, path=str(path))


def _line_in(exc: BaseException, filename: str) -> int | None:
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == filename:
            line = frame.lineno
    return line


def _fail(rule: UserRule, why: str) -> RuleOutcome:
    return RuleOutcome(
        rule.audit_name,
        RuleResult.ERROR,
        Quadrant.D,
        f"rule {rule.name} failed: {why}"[:MAX_REASON],
    )


def interpret(rule: UserRule, value: object) -> RuleOutcome:
    """Turn a rule's return value into an outcome; anything but (letter|None, str) is an error."""
    if not isinstance(value, tuple) or len(value) != 2:
        return _fail(rule, f"returned {type(value).__name__}, not (quadrant | None, reason)")
    vote, reason = value
    if not isinstance(reason, str):
        return _fail(rule, f"reason is {type(reason).__name__}, not str")
    reason = reason.strip()[:MAX_REASON]
    if vote is None:
        return RuleOutcome(rule.audit_name, RuleResult.ABSTAIN, None, reason)
    if not isinstance(vote, str) or vote.strip().upper() not in ("A", "B", "C", "D"):
        return _fail(rule, f"returned vote {str(vote)[:20]!r}, not A/B/C/D or None")
    return RuleOutcome(rule.audit_name, RuleResult.VOTE, Quadrant(vote.strip().upper()), reason)


def run_user_rule(rule: UserRule, snapshot: PRSnapshot, timeout: float) -> RuleOutcome:
    """Run one rule in a worker thread with a time budget; errors and timeouts are D."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = rule.func(snapshot)
        except BaseException as exc:  # a rule may raise anything, even SystemExit
            box["error"] = exc

    worker = threading.Thread(target=work, name=f"user-rule-{rule.name}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        return _fail(rule, f"exceeded its {timeout:g} s time budget")
    if "error" in box:
        exc = box["error"]
        return _fail(rule, f"{type(exc).__name__}: {exc}")
    try:
        return interpret(rule, box.get("value"))
    except Exception as exc:  # a hostile __eq__/__str__ on the returned objects
        return _fail(rule, f"returned an unreadable value ({type(exc).__name__})")
