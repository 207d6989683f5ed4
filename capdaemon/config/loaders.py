"""Loading a config directory: classifier.yml, skills.yml, agent_registry.yml and (through
`capdaemon.config.central`) capdaemon.yml, into one frozen Config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from capdaemon.classify.ruletable import DISABLEABLE_RULES, RULE_NAMES
from capdaemon.config.base import _union
from capdaemon.config.central import load_capdaemon
from capdaemon.config.sections import (
    _MODEL_RE,
    _PATTERN_LISTS,
    _TOOL_RE,
    CARVE_OUT_CLASSIFIER_LISTS,
    RESTRICTIVE_CLASSIFIER_LISTS,
    ConfigError,
    _carve_out,
    _check_glob,
    _check_regex,
    _parse_yaml,
    _restrictive,
    _Section,
)
from capdaemon.config.types import (
    KNOWN_VALIDATORS,
    AgentEntry,
    AgentRegistry,
    ClassifierConfig,
    Config,
    SkillsConfig,
)
from capdaemon.filenames import (
    CLASSIFIER_CONFIG_FILE,
    MAIN_CONFIG_FILE,
    REGISTRY_CONFIG_FILE,
    SKILLS_CONFIG_FILE,
)
from capdaemon.globs import PathError, normalize_path
from capdaemon.model import Severity
from capdaemon.quoting import quote_value
from capdaemon.yamlread import LList

# ============================================================================= loading
# Built-in rule names (SPEC 2.5), from the rule table. Only rules that never vote D may be
# disabled in skills.yml.
BUILTIN_RULES: tuple[str, ...] = RULE_NAMES

CONFIG_FILES: tuple[str, ...] = (
    MAIN_CONFIG_FILE,
    CLASSIFIER_CONFIG_FILE,
    SKILLS_CONFIG_FILE,
    REGISTRY_CONFIG_FILE,
)
USER_RULES_SUBDIR = "skills/classifier"

# ----------------------------------------------------------------------------- per file
_TYPO_WORD_RE = r"\w+(?:['’]\w+)*\Z"
CLASSIFIER_KEYS: frozenset[str] = frozenset(
    {"source_root", "user_rule_timeout_seconds", "typo_words"}
    | set(RESTRICTIVE_CLASSIFIER_LISTS)
    | {f"extra_{n}" for n in RESTRICTIVE_CLASSIFIER_LISTS}
    | set(CARVE_OUT_CLASSIFIER_LISTS)
    | {"known_safe_dirs"}
)


def _load_classifier(file: str, data: Any) -> ClassifierConfig:
    sec = _Section(file, data, "", CLASSIFIER_KEYS)
    defaults = ClassifierConfig()
    values: dict[str, Any] = {}
    root = sec.str("source_root", defaults.source_root)
    if sec.has("source_root"):
        try:
            root = normalize_path(root)
        except PathError as exc:
            raise sec.error("source_root", str(exc)) from None
    values["source_root"] = root
    for name in RESTRICTIVE_CLASSIFIER_LISTS:
        check = _check_regex if name in _PATTERN_LISTS else _check_glob
        values[name] = _restrictive(sec, name, getattr(defaults, name), check)
    if root != defaults.source_root:
        # A different bot source root is critical and its skills are self paths, too (adds only).
        values["critical_globs"] = _union(values["critical_globs"], (f"{root}/**",))
        values["self_paths"] = _union(values["self_paths"], (f"{root}/skills/**",))
    for name in CARVE_OUT_CLASSIFIER_LISTS:
        values[name] = _carve_out(sec, name, getattr(defaults, name))
    # Owners fix false-positive Ds by naming known-safe folders here (central config only:
    # a repo's .capdaemon.yml can never add one). The critical and irreversible lists still win.
    safe = sec.strs("known_safe_dirs", check=_check_glob) or ()
    for i, item in enumerate(safe):
        if not item.endswith("/") or not item.isascii() or "*" in item or item.startswith("/"):
            raise sec.error(
                "known_safe_dirs",
                f"{quote_value(item)} must be a plain ASCII folder ending in '/'",
                i,
            )
    values["noncritical_dirs"] = _union(values["noncritical_dirs"], tuple(safe))
    values["user_rule_timeout_seconds"] = sec.num(
        "user_rule_timeout_seconds",
        defaults.user_rule_timeout_seconds,
        minimum=0,
        maximum=60,
        exclusive_min=True,
    )
    values["typo_words"] = sec.strs("typo_words", pattern=_TYPO_WORD_RE, what="one word") or ()
    return ClassifierConfig(**values)


SKILLS_KEYS: frozenset[str] = frozenset({"disabled_rules", "severity_overrides"})


def _load_skills(file: str, data: Any) -> SkillsConfig:
    sec = _Section(file, data, "", SKILLS_KEYS)

    def check_rule(name: str) -> None:
        if name in DISABLEABLE_RULES:
            return
        if name in BUILTIN_RULES:
            raise ValueError(f"rule {quote_value(name)} can vote D and cannot be disabled")
        raise ValueError(
            f"unknown rule {quote_value(name)} (rules that may be disabled: "
            f"{', '.join(sorted(DISABLEABLE_RULES))})"
        )

    disabled = sec.strs("disabled_rules", check=check_rule) or ()
    overrides: list[tuple[str, Severity]] = []
    if sec.has("severity_overrides"):
        sub = _Section(
            file,
            sec.data["severity_overrides"],
            "severity_overrides",
            KNOWN_VALIDATORS,
            sec.line_of("severity_overrides"),
            noun="validator",
        )
        for name in sub.data:
            value = sub.str(name, choices=[s.value for s in Severity])
            overrides.append((name, Severity(value)))
    return SkillsConfig(disabled_rules=disabled, severity_overrides=tuple(overrides))


AGENT_REGISTRY_KEYS: frozenset[str] = frozenset({"agents"})
AGENT_KEYS: frozenset[str] = frozenset({"tool", "models", "trust"})


def _load_registry(file: str, data: Any) -> AgentRegistry:
    sec = _Section(file, data, "", AGENT_REGISTRY_KEYS)
    items = sec.list("agents") or []
    agents: list[AgentEntry] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        line = items.lines[i] if isinstance(items, LList) else None
        sub = _Section(file, item, f"agents[{i}]", AGENT_KEYS, line)
        if not sub.has("tool"):
            raise ConfigError(file, sub.path, "missing required key 'tool'", sub.line)
        tool = sub.str("tool", pattern=_TOOL_RE, what="a valid tool name ([a-z0-9][a-z0-9._-]*)")
        if tool in seen:
            raise sub.error("tool", f"agent {quote_value(tool)} is listed twice")
        seen.add(tool)
        models = sub.strs("models", pattern=_MODEL_RE, what="a valid model name") or ()
        trust = sub.str("trust", "trusted", choices=("trusted", "probation"))
        agents.append(AgentEntry(tool=tool, models=models, trust=trust))
    return AgentRegistry(agents=tuple(agents))


# ----------------------------------------------------------------------------- entry points
def _display(config_dir: Path, name: str) -> str:
    return str(config_dir / name)


def load_config(config_dir: Path | None) -> Config:
    """Parse and validate config_dir/*.yml into a frozen Config; missing dir or files → defaults.

    Raises ConfigError naming the file, key (and line) and why.
    """
    if config_dir is None:
        return Config()
    config_dir = Path(config_dir)
    if not config_dir.is_dir():
        if config_dir.exists():
            raise ConfigError(str(config_dir), None, "is not a directory")
        return Config(config_dir=str(config_dir))

    def read(name: str) -> Any:
        path = config_dir / name
        twin = path.with_suffix(".yaml")
        if twin.exists():
            raise ConfigError(
                _display(config_dir, twin.name), None, f"misnamed config file: rename it to {name}"
            )
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(_display(config_dir, name), None, f"cannot read: {exc}") from None
        return _parse_yaml(text, _display(config_dir, name))

    main = load_capdaemon(_display(config_dir, MAIN_CONFIG_FILE), read(MAIN_CONFIG_FILE))
    classifier = _load_classifier(
        _display(config_dir, CLASSIFIER_CONFIG_FILE), read(CLASSIFIER_CONFIG_FILE)
    )
    skills = _load_skills(_display(config_dir, SKILLS_CONFIG_FILE), read(SKILLS_CONFIG_FILE))
    registry = _load_registry(
        _display(config_dir, REGISTRY_CONFIG_FILE), read(REGISTRY_CONFIG_FILE)
    )
    return Config(
        **main,
        classifier=classifier,
        skills=skills,
        registry=registry,
        config_dir=str(config_dir),
    )


def user_rules_dir(config: Config) -> Path | None:
    """`<config_dir>/skills/classifier` when the config came from a directory, else None."""
    if not config.config_dir:
        return None
    return Path(config.config_dir) / USER_RULES_SUBDIR
