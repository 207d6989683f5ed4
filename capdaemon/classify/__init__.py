"""The pure four-quadrant classifier (SPEC 2): per-file axes, carve-outs, rules, max-vote engine."""

from __future__ import annotations

from capdaemon.classify.axes import classify_file, compile_classifier, config_change
from capdaemon.classify.engine import classify, file_phrase, validate_agent_registry
from capdaemon.classify.rules import is_canonical
from capdaemon.classify.trailers import (
    AgentSession,
    commit_agent_session,
    parse_agent_session,
    parse_trailers,
)
from capdaemon.classify.user_rules import LoadError, UserRule, load_user_rules, rule_dir

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
