"""The pure four-quadrant classifier (SPEC 2): per-file axes, carve-outs, rules, max-vote engine.

The names below are imported on first use, so `capdaemon.classify.ruletable` (which the config
loader reads) can be imported without the classifier, which itself imports the config types.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from capdaemon.classify.axes import classify_file
    from capdaemon.classify.compiled import compile_classifier
    from capdaemon.classify.engine import classify, file_phrase, validate_agent_registry
    from capdaemon.classify.rules import is_canonical
    from capdaemon.classify.structure import config_change
    from capdaemon.classify.trailers import (
        AgentSession,
        commit_agent_session,
        parse_agent_session,
        parse_trailers,
    )
    from capdaemon.classify.user_rules import LoadError, UserRule, load_user_rules, rule_dir

_HOME = {
    "classify_file": "axes",
    "compile_classifier": "compiled",
    "config_change": "structure",
    "classify": "engine",
    "file_phrase": "engine",
    "validate_agent_registry": "engine",
    "is_canonical": "rules",
    "AgentSession": "trailers",
    "commit_agent_session": "trailers",
    "parse_agent_session": "trailers",
    "parse_trailers": "trailers",
    "LoadError": "user_rules",
    "UserRule": "user_rules",
    "load_user_rules": "user_rules",
    "rule_dir": "user_rules",
}

__all__ = [
    "AgentSession",
    "LoadError",
    "UserRule",
    "classify",
    "classify_file",
    "commit_agent_session",
    "compile_classifier",
    "config_change",
    "file_phrase",
    "is_canonical",
    "load_user_rules",
    "parse_agent_session",
    "parse_trailers",
    "rule_dir",
    "validate_agent_registry",
]


def __getattr__(name: str) -> object:
    """`from capdaemon.classify import classify` and friends, imported on first use."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
