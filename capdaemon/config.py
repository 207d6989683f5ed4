"""Configuration: frozen objects for config/*.yml, with the built-in defaults of the spec.

The types below are the contract every layer reads. `load_config(dir)` (further down)
parses and validates the YAML files once into them; errors name the file and key.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capdaemon.channels.config import ChannelsConfig, parse_channels
from capdaemon.classify.ruletable import DISABLEABLE_RULES as DISABLEABLE_RULES
from capdaemon.classify.ruletable import RULE_NAMES
from capdaemon.filenames import (
    CLASSIFIER_CONFIG_FILE,
    MAIN_CONFIG_FILE,
    REGISTRY_CONFIG_FILE,
    REPO_POLICY_FILE,
    SKILLS_CONFIG_FILE,
)
from capdaemon.model import Severity
from capdaemon.quoting import quote_value
from capdaemon.yamlread import LDict, LList

# ----------------------------------------------------------------------------- classifier
DEFAULT_SOURCE_ROOT = "src/multiagent_protocol"

DEFAULT_IRREVERSIBLE_GLOBS: tuple[str, ...] = (
    "**/migrations/**",
    "**/*.sql",
    "alembic/**",
    "**/schema.prisma",
    "**/*.tf",
    "**/*.tfvars",
    ".gitmodules",  # where a submodule points: another repository, an external system
)
DEFAULT_SECRET_GLOBS: tuple[str, ...] = (
    "**/.env",
    "**/.env.*",
    "**/*.pem",
    "**/*.key",
    "**/*secret*",
    "**/*credential*",
    "**/id_rsa*",
)
DEFAULT_SELF_PATHS: tuple[str, ...] = (
    "**/agent_registry.yml",
    "src/multiagent_protocol/skills/**",
    "config/skills/**",
)
DEFAULT_SELF_LOGIC_PATTERNS: tuple[str, ...] = (
    "merge",
    "auth",
    "approv",
    "token",
    "permission",
    "credential",
)
DEFAULT_SCHEMA_GLOBS: tuple[str, ...] = ("schemas/*.json",)
DEFAULT_ALWAYS_D_GLOBS: tuple[str, ...] = (
    ".github/workflows/*.yml",
    ".github/workflows/*.yaml",
    ".github/scripts/**",
    ".github/actions/**",
    REPO_POLICY_FILE,
)
DEFAULT_CRITICAL_GLOBS: tuple[str, ...] = (
    "src/multiagent_protocol/**",
    "docs/concepts/**",
    "schemas/*.json",
    "LICENSE",
    "SECURITY.md",
    "MAINTAINERS.md",
    "CODEOWNERS",
    ".github/CODEOWNERS",
    "docs/CODEOWNERS",
    ".gitattributes",
    ".githooks/**",
    ".husky/**",
    ".pre-commit-config.yaml",
)
DEFAULT_CONFIG_FILE_GLOBS: tuple[str, ...] = (
    "config/**/*.yml",
    "config/**/*.yaml",
    "config/**/*.json",
    "config/**/*.toml",
)
DEFAULT_NONCRITICAL_DIRS: tuple[str, ...] = ("docs/guide/", "examples/")
DEFAULT_NONCRITICAL_FILES: tuple[str, ...] = ("CHANGELOG.md", "README*")
DEFAULT_EXTERNAL_GLOBS: tuple[str, ...] = ()  # email / social / webhook senders (configurable)
DEFAULT_EXTERNAL_CONTENT_PATTERNS: tuple[str, ...] = (
    r"\bsmtplib\b",
    r"\bsendmail\b",
    r"\bSMTP\(",
    r"hooks\.slack\.com/",
    r"discord(?:app)?\.com/api/webhooks/",
    r"\bwebhook[_-]?url\b",
    r"requests\.post\(\s*['\"]https?://",
    r"httpx\.post\(\s*['\"]https?://",
    r"api\.twitter\.com|api\.x\.com|graph\.facebook\.com",
)
DEFAULT_SECRET_CONTENT_PATTERNS: tuple[str, ...] = (
    r"-----BEGIN (?:[A-Z ]+ )?PRIVATE KEY-----",
    r"\bgh[pousr]_[A-Za-z0-9]{36,}\b",
    r"\bgithub_pat_[A-Za-z0-9_]{40,}\b",
    r"\bAKIA[0-9A-Z]{16}\b",
    r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b",
    r"\bsk-[A-Za-z0-9_-]{20,}\b",
    r"\bAIza[0-9A-Za-z_-]{35}\b",
    r"\bglpat-[A-Za-z0-9_-]{20,}\b",
)


@dataclass(frozen=True)
class ClassifierConfig:
    """Glob lists and content patterns of SPEC section 2 (config/classifier.yml)."""

    source_root: str = DEFAULT_SOURCE_ROOT
    irreversible_globs: tuple[str, ...] = DEFAULT_IRREVERSIBLE_GLOBS
    secret_globs: tuple[str, ...] = DEFAULT_SECRET_GLOBS
    external_globs: tuple[str, ...] = DEFAULT_EXTERNAL_GLOBS
    external_content_patterns: tuple[str, ...] = DEFAULT_EXTERNAL_CONTENT_PATTERNS
    secret_content_patterns: tuple[str, ...] = DEFAULT_SECRET_CONTENT_PATTERNS
    self_paths: tuple[str, ...] = DEFAULT_SELF_PATHS
    self_logic_patterns: tuple[str, ...] = DEFAULT_SELF_LOGIC_PATTERNS
    schema_globs: tuple[str, ...] = DEFAULT_SCHEMA_GLOBS
    always_d_globs: tuple[str, ...] = DEFAULT_ALWAYS_D_GLOBS
    critical_globs: tuple[str, ...] = DEFAULT_CRITICAL_GLOBS
    config_file_globs: tuple[str, ...] = DEFAULT_CONFIG_FILE_GLOBS
    noncritical_dirs: tuple[str, ...] = DEFAULT_NONCRITICAL_DIRS
    noncritical_files: tuple[str, ...] = DEFAULT_NONCRITICAL_FILES
    user_rule_timeout_seconds: float = 2.0


# ----------------------------------------------------------------------------- skills
KNOWN_VALIDATORS: dict[str, Severity] = {
    "validator_agent_registry": Severity.P2,
    "validator_capability_scope": Severity.P0,
}


@dataclass(frozen=True)
class SkillsConfig:
    """Rule enablement and validator severities (config/skills.yml)."""

    disabled_rules: tuple[str, ...] = ()  # built-in rule names that are off (never the D rules)
    severity_overrides: tuple[tuple[str, Severity], ...] = ()

    def severity(self, validator: str) -> Severity:
        """The severity in force for a validator."""
        for name, sev in self.severity_overrides:
            if name == validator:
                return sev
        return KNOWN_VALIDATORS[validator]


# ----------------------------------------------------------------------------- agents
@dataclass(frozen=True)
class AgentEntry:
    """A trusted agent tool and the models it may run (config/agent_registry.yml)."""

    tool: str
    models: tuple[str, ...] = ()  # empty: any model
    trust: str = "trusted"  # trusted | probation


@dataclass(frozen=True)
class AgentRegistry:
    """The trusted agents."""

    agents: tuple[AgentEntry, ...] = ()

    def knows(self, tool: str, model: str) -> bool:
        """True when tool/model is registered."""
        return any(a.tool == tool and (not a.models or model in a.models) for a in self.agents)


# ----------------------------------------------------------------------------- capdaemon.yml
@dataclass(frozen=True)
class GitHubConfig:
    """How to reach GitHub. Secrets are never stored here, only where to find them."""

    base_url: str = "https://api.github.com"
    app_id: int | None = None
    private_key_file: str | None = None
    installation_id: int | None = None
    token_env: str = "GITHUB_TOKEN"
    per_tick_wait_seconds: float = 120.0
    # content-creating writes GitHub allows (per hour, per minute); counted requests per hour
    # (None: the primary budget from the rate-limit headers alone)
    writes_per_hour: int = 500
    writes_per_minute: int = 80
    requests_per_hour: int | None = None


@dataclass(frozen=True)
class CheckSpec:
    """An extra check that must pass before a merge (`repos[].extra_checks`, `.capdaemon.yml`).

    With `app_id` only a check run from that GitHub App counts. Without it, only a check
    run from some GitHub App counts: never a commit status, which anyone with write access
    to the repo (an agent) can post under any name.
    """

    context: str
    app_id: int | None = None


def _check_specs(items: Iterable[Any]) -> tuple[CheckSpec, ...]:
    return tuple(CheckSpec(i) if isinstance(i, str) else i for i in items)


@dataclass(frozen=True)
class RepoConfig:
    """One supervised repository (`extra_checks` given as names become CheckSpecs)."""

    name: str  # owner/repo
    base: str = "main"
    merge_method: str = "squash"  # merge | squash | rebase
    require_capability: bool = False
    extra_checks: tuple[CheckSpec, ...] = ()
    owners: tuple[str, ...] = ()
    blocking_labels: tuple[str, ...] = ("do-not-merge",)
    task_branch_pattern: str = (
        r"^(?:task|agent)/(?P<task_id>[A-Za-z0-9][A-Za-z0-9._-]{0,127})(?:/|$)"
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra_checks", _check_specs(self.extra_checks))


@dataclass(frozen=True)
class ScheduleConfig:
    """Tick interval and the digest's wall-clock time."""

    tick_seconds: int = 60
    digest_time: str = "09:00"
    timezone: str = "Asia/Seoul"


@dataclass(frozen=True)
class TierConfig:
    """SPEC 4.1 tier overlay thresholds and globs."""

    many_files: int = 20
    large_diff_lines: int = 300
    one_tap_ttl_hours: float = 24.0
    dependency_globs: tuple[str, ...] = (
        "**/requirements*.txt", "**/pyproject.toml", "**/poetry.lock", "**/Pipfile",
        "**/Pipfile.lock", "**/uv.lock", "**/setup.py", "**/setup.cfg", "**/package.json",
        "**/package-lock.json", "**/yarn.lock", "**/pnpm-lock.yaml", "**/go.mod", "**/go.sum",
        "**/Cargo.toml", "**/Cargo.lock", "**/Gemfile", "**/Gemfile.lock", "**/composer.json",
        "**/composer.lock",
    )  # fmt: skip
    protected_globs: tuple[str, ...] = (
        "**/CLAUDE.md", "**/AGENTS.md", "**/.cursorrules", "**/GEMINI.md", ".github/**",
        "**/copilot-instructions.md", "**/.claude/**", "**/.cursor/**", "**/.codex/**",
        "**/.gemini/**", "config/**", "memory/**", "**/.env*",
    )  # fmt: skip
    production_globs: tuple[str, ...] = ("deploy/**", "infra/**", "k8s/**", "**/production*")


@dataclass(frozen=True)
class PostMergeConfig:
    """SPEC 6.2 probe and auto-revert."""

    window_minutes: int = 30
    auto_revert_pr: bool = False
    revert_daily_cap: int = 3


@dataclass(frozen=True)
class BreakerConfig:
    """SPEC 6.3 circuit breaker."""

    threshold: int = 3
    window_hours: float = 24.0


@dataclass(frozen=True)
class Config:
    """The whole, validated configuration."""

    github: GitHubConfig = field(default_factory=GitHubConfig)
    bot_login: str = "capdaemon[bot]"
    own_repo: str | None = None
    decision_repo: str | None = None  # default: own_repo
    canonical_app: str | None = None  # slug of the App whose classifier-judgment is trusted
    canonical_app_id: int | None = None
    owners: tuple[str, ...] = ()
    owners_include_admins: bool = False
    mode: str = "enforce"  # enforce | shadow
    repos: tuple[RepoConfig, ...] = ()
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    tiers: TierConfig = field(default_factory=TierConfig)
    post_merge: PostMergeConfig = field(default_factory=PostMergeConfig)
    breaker: BreakerConfig = field(default_factory=BreakerConfig)
    passive_review_days: float = 7.0
    random_review_share: float = 0.10
    burn_in_days: float = 60.0
    classifier: ClassifierConfig = field(default_factory=ClassifierConfig)
    skills: SkillsConfig = field(default_factory=SkillsConfig)
    registry: AgentRegistry = field(default_factory=AgentRegistry)
    config_dir: str | None = None
    channels: ChannelsConfig = field(default_factory=ChannelsConfig)  # telegram, notifications

    @property
    def ballot_repo(self) -> str | None:
        """Where decision issues go."""
        return self.decision_repo or self.own_repo

    def repo(self, name: str) -> RepoConfig | None:
        """The supervised repo config of `owner/repo`."""
        for r in self.repos:
            if r.name.lower() == name.lower():
                return r
        return None

    def owners_for(self, repo: str) -> frozenset[str]:
        """Global owners plus the repo's own (logins compared case-insensitively)."""
        rc = self.repo(repo)
        names = set(self.owners) | set(rc.owners if rc else ())
        return frozenset(n.lower() for n in names)

    def with_repo_policy(self, policy: RepoPolicy, repo: str | None = None) -> Config:
        """This config plus a repo policy's additions; it can only add restrictions (and owners)."""
        return with_repo_policy(self, policy, repo)


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

# classifier.yml: restrictive lists may only grow (`extra_<name>` appends; `<name>` must keep
# every default); carve-out lists may only shrink (`<name>` must be a subset of the defaults).
RESTRICTIVE_CLASSIFIER_LISTS: tuple[str, ...] = (
    "irreversible_globs",
    "secret_globs",
    "external_globs",
    "external_content_patterns",
    "secret_content_patterns",
    "self_paths",
    "self_logic_patterns",
    "schema_globs",
    "always_d_globs",
    "critical_globs",
    "config_file_globs",
)
CARVE_OUT_CLASSIFIER_LISTS: tuple[str, ...] = ("noncritical_dirs", "noncritical_files")
_PATTERN_LISTS = frozenset(
    {"external_content_patterns", "secret_content_patterns", "self_logic_patterns"}
)
RESTRICTIVE_TIER_LISTS: tuple[str, ...] = (
    "dependency_globs",
    "protected_globs",
    "production_globs",
)

_LOGIN_RE = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$"
_REPO_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,38}/[A-Za-z0-9_.-]{1,100}$"
_TOOL_RE = r"^[a-z0-9][a-z0-9._-]{0,63}$"
_MODEL_RE = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
_ENV_RE = r"^[A-Za-z_][A-Za-z0-9_]*$"
_HHMM_RE = r"^(?:[01][0-9]|2[0-3]):[0-5][0-9]$"


class ConfigError(ValueError):
    """A config file is invalid; the message names the file, the key (and line) and why."""

    def __init__(self, file: str, key: str | None, reason: str, line: int | None = None) -> None:
        self.file = file
        self.key = key
        self.reason = reason
        self.line = line
        where = f"{file}:{line}" if line else file
        what = f" key '{key}':" if key else ""
        super().__init__(f"{where}:{what} {reason}")


@dataclass(frozen=True)
class RepoPolicy:
    """A supervised repo's own additions (`.capdaemon.yml` on its base branch); only adds."""

    source: str = REPO_POLICY_FILE
    critical_globs: tuple[str, ...] = ()
    irreversible_globs: tuple[str, ...] = ()
    always_d_globs: tuple[str, ...] = ()
    owners: tuple[str, ...] = ()
    blocking_labels: tuple[str, ...] = ()
    extra_checks: tuple[CheckSpec, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra_checks", _check_specs(self.extra_checks))

    @property
    def empty(self) -> bool:
        """True when the policy adds nothing."""
        return not (
            self.critical_globs
            or self.irreversible_globs
            or self.always_d_globs
            or self.owners
            or self.blocking_labels
            or self.extra_checks
        )


def _union(base: tuple[Any, ...], extra: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys((*base, *extra)))


def with_repo_policy(config: Config, policy: RepoPolicy, repo: str | None = None) -> Config:
    """`config` with a repo policy's additions (globs, owners, labels, checks); never removes."""
    import dataclasses

    if policy.empty:
        return config
    cls = config.classifier
    classifier = dataclasses.replace(
        cls,
        critical_globs=_union(cls.critical_globs, policy.critical_globs),
        irreversible_globs=_union(cls.irreversible_globs, policy.irreversible_globs),
        always_d_globs=_union(cls.always_d_globs, policy.always_d_globs),
    )
    repos = config.repos
    per_repo = policy.owners or policy.blocking_labels or policy.extra_checks
    if per_repo:
        if repo is None:
            raise ValueError(f"{policy.source}: owners/labels/checks need the repo they apply to")
        found = False
        new_repos = []
        for rc in config.repos:
            if rc.name.lower() == repo.lower():
                found = True
                rc = dataclasses.replace(
                    rc,
                    owners=_union(rc.owners, policy.owners),
                    blocking_labels=_union(rc.blocking_labels, policy.blocking_labels),
                    extra_checks=_union(rc.extra_checks, policy.extra_checks),
                )
            new_repos.append(rc)
        if not found:
            new_repos.append(
                RepoConfig(
                    name=repo,
                    owners=policy.owners,
                    blocking_labels=_union(RepoConfig.blocking_labels, policy.blocking_labels),
                    extra_checks=policy.extra_checks,
                )
            )
        repos = tuple(new_repos)
    return dataclasses.replace(config, classifier=classifier, repos=repos)


# ----------------------------------------------------------------------------- YAML with lines
def _parse_yaml(text: str, file: str) -> Any:
    """Parse YAML into LDict/LList (capdaemon.yamlread); ConfigError naming line and key."""
    from capdaemon.yamlread import YamlInputError, read_yaml

    try:
        return read_yaml(text)
    except YamlInputError as exc:
        raise ConfigError(file, exc.key or None, exc.reason, exc.line) from None


# ----------------------------------------------------------------------------- validation
_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


class _Section:
    """One YAML mapping being validated: typed getters that raise ConfigError with key and line."""

    def __init__(
        self,
        file: str,
        data: Any,
        path: str,
        allowed: Iterable[str],
        line: int | None = None,
        noun: str = "key",
    ) -> None:
        self.file = file
        self.path = path
        if data is None:
            data = LDict()
            data.lines = {}
        if not isinstance(data, dict):
            raise ConfigError(file, path or None, f"expected a mapping, got {_kind(data)}", line)
        self.data = data
        self.line = getattr(data, "line", line)
        allowed = set(allowed)
        for key in data:
            if key not in allowed:
                hint = _unknown_hint(key, allowed)
                raise ConfigError(file, self.key(key), f"unknown {noun}{hint}", self.line_of(key))

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def line_of(self, name: str) -> int | None:
        lines = getattr(self.data, "lines", None) or {}
        return lines.get(name, self.line)

    def has(self, name: str) -> bool:
        return name in self.data

    def error(self, name: str, reason: str, index: int | None = None) -> ConfigError:
        key = self.key(name)
        line = self.line_of(name)
        if index is not None:
            key = f"{key}[{index}]"
            value = self.data.get(name)
            item_lines = getattr(value, "lines", None)
            if item_lines and index < len(item_lines):
                line = item_lines[index]
        return ConfigError(self.file, key, reason, line)

    def _typed(self, name: str, default: Any, types: tuple[type, ...], label: str) -> Any:
        if name not in self.data:
            return default
        value = self.data[name]
        if isinstance(value, bool) and bool not in types:
            raise self.error(name, f"expected {label}, got {_kind(value)}")
        if not isinstance(value, types):
            raise self.error(name, f"expected {label}, got {_kind(value)}")
        return value

    def str(
        self,
        name: str,
        default: Any = None,
        *,
        pattern: str | None = None,
        choices: Iterable[str] | None = None,
        what: str = "",
    ) -> Any:
        import re

        value = self._typed(name, default, (str,), "a string")
        if name not in self.data or value is None:
            return value
        if choices is not None:
            choices = tuple(choices)
            if value not in choices:
                raise self.error(
                    name, f"expected one of {', '.join(choices)}, got {quote_value(value)}"
                )
        if pattern is not None and not re.match(pattern, value):
            raise self.error(name, f"{quote_value(value)} is not {what or 'valid'}")
        return value

    def int(self, name: str, default: Any = None, *, minimum: int | None = None) -> Any:
        value = self._typed(name, default, (int,), "an integer")
        if name in self.data and minimum is not None and value < minimum:
            raise self.error(name, f"must be at least {minimum}, got {value}")
        return value

    def num(
        self,
        name: str,
        default: Any,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
        exclusive_min: bool = False,
    ) -> float:
        value = self._typed(name, default, (int, float), "a number")
        if name not in self.data:
            return value
        if value != value or value in (float("inf"), float("-inf")):
            raise self.error(name, "must be a finite number")
        if minimum is not None and (value <= minimum if exclusive_min else value < minimum):
            op = "greater than" if exclusive_min else "at least"
            raise self.error(name, f"must be {op} {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise self.error(name, f"must be at most {maximum}, got {value}")
        return float(value)

    def bool(self, name: str, default: bool) -> bool:
        return self._typed(name, default, (bool,), "true or false")

    def section(self, name: str, allowed: Iterable[str]) -> _Section:
        return _Section(self.file, self.data.get(name), self.key(name), allowed, self.line_of(name))

    def list(self, name: str) -> list[Any] | None:
        if name not in self.data:
            return None
        value = self.data[name]
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(name, f"expected a list, got {_kind(value)}")
        return value

    def strs(
        self,
        name: str,
        *,
        check: Any = None,
        pattern: str | None = None,
        what: str = "",
        unique: bool = True,
    ) -> tuple[str, ...] | None:
        """A list of strings, each checked (`check(item)` raises ValueError with the reason)."""
        import re

        items = self.list(name)
        if items is None:
            return None
        out: list[str] = []
        for i, item in enumerate(items):
            if not isinstance(item, str):
                raise self.error(name, f"expected a string, got {_kind(item)}", i)
            if pattern is not None and not re.match(pattern, item):
                raise self.error(name, f"{quote_value(item)} is not {what or 'valid'}", i)
            if check is not None:
                try:
                    check(item)
                except ValueError as exc:
                    raise self.error(name, str(exc), i) from None
            if unique and item in out:
                raise self.error(name, f"duplicate entry {quote_value(item)}", i)
            out.append(item)
        return tuple(out)


CHECK_SPEC_KEYS = frozenset({"context", "app_id"})


def _extra_checks(sec: _Section, name: str = "extra_checks") -> tuple[CheckSpec, ...]:
    """`extra_checks`: each item a check name (any GitHub App's check run) or a mapping
    `{context: NAME, app_id: N}` (only that App's check run). Errors name the item."""
    items = sec.list(name)
    if not items:
        return ()
    out: list[CheckSpec] = []
    lines = getattr(items, "lines", None) or []
    for i, item in enumerate(items):
        if isinstance(item, str):
            if not item.strip():
                raise sec.error(name, "a check name must not be empty", i)
            spec = CheckSpec(item)
        elif isinstance(item, dict):
            path = f"{sec.key(name)}[{i}]"
            line = lines[i] if i < len(lines) else sec.line_of(name)
            sub = _Section(sec.file, item, path, CHECK_SPEC_KEYS, line)
            if not sub.has("context"):
                raise ConfigError(sec.file, path, "missing required key 'context'", sub.line)
            context = sub.str("context", pattern=r"^\S", what="a check name")
            spec = CheckSpec(context, sub.int("app_id", None, minimum=1))
        else:
            raise sec.error(
                name, f"expected a check name or {{context, app_id}}, got {_kind(item)}", i
            )
        if spec in out:
            raise sec.error(name, f"duplicate entry {quote_value(spec.context)}", i)
        out.append(spec)
    return tuple(out)


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    for t, label in _TYPE_NAMES.items():
        if isinstance(value, t):
            return (
                f"{label} ({quote_value(value)})"
                if t is not str
                else f"a string ({quote_value(value)})"
            )
    return type(value).__name__


def _unknown_hint(key: str, allowed: set[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, sorted(allowed), n=1)
    if f"extra_{key}" in allowed and key not in allowed:
        return f" (use 'extra_{key}' to add entries)"
    return f" (did you mean '{close[0]}'?)" if close else f" (known: {', '.join(sorted(allowed))})"


def _check_glob(item: str) -> None:
    from capdaemon.globs import GlobError, validate_glob

    try:
        validate_glob(item)
    except GlobError as exc:
        raise ValueError(f"bad glob {quote_value(item)}: {exc}") from None


def _check_regex(item: str) -> None:
    import re

    try:
        re.compile(item)
    except re.error as exc:
        raise ValueError(f"bad regular expression {quote_value(item)}: {exc}") from None


def _restrictive(sec: _Section, name: str, default: tuple[str, ...], check: Any) -> tuple[str, ...]:
    """A list that may only grow: `extra_<name>` appends; `<name>` must keep every default."""
    known = frozenset(default)

    def check_new(item: str) -> None:  # the built-in defaults are known good: skip compiling
        if item not in known:
            check(item)

    full = sec.strs(name, check=check_new)
    if full is not None:
        missing = [d for d in default if d not in full]
        if missing:
            raise sec.error(
                name,
                f"would drop the default {quote_value(missing[0])}; this list can only grow "
                f"(list only the additions under 'extra_{name}')",
            )
        base = full
    else:
        base = default
    extra = sec.strs(f"extra_{name}", check=check_new, unique=True) or ()
    return _union(base, extra)


def _carve_out(sec: _Section, name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    """A carve-out list that may only shrink: every entry must be one of the defaults."""
    items = sec.strs(name, check=_check_glob)
    if items is None:
        return default
    for i, item in enumerate(items):
        if item not in default:
            raise sec.error(
                name,
                f"{quote_value(item)} is not a built-in carve-out; this list can only be narrowed "
                f"(allowed: {', '.join(default)})",
                i,
            )
    return items


# ----------------------------------------------------------------------------- per file
CLASSIFIER_KEYS: frozenset[str] = frozenset(
    {"source_root", "user_rule_timeout_seconds"}
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
        from capdaemon.globs import PathError, normalize_path

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


GITHUB_KEYS = frozenset(
    {
        "base_url",
        "app_id",
        "private_key_file",
        "installation_id",
        "token_env",
        "per_tick_wait_seconds",
        "writes_per_hour",
        "writes_per_minute",
        "requests_per_hour",
    }
)
BOT_KEYS = frozenset({"login", "own_repo", "decision_repo"})
CANONICAL_APP_KEYS = frozenset({"slug", "id"})
REPO_KEYS = frozenset(
    {
        "name",
        "base",
        "merge_method",
        "require_capability",
        "extra_checks",
        "owners",
        "blocking_labels",
        "task_branch_pattern",
    }
)
SCHEDULE_KEYS = frozenset({"tick_seconds", "digest_time", "timezone"})
TIER_KEYS = frozenset(
    {"many_files", "large_diff_lines", "one_tap_ttl_hours"}
    | set(RESTRICTIVE_TIER_LISTS)
    | {f"extra_{n}" for n in RESTRICTIVE_TIER_LISTS}
)
POST_MERGE_KEYS = frozenset({"window_minutes", "auto_revert_pr", "revert_daily_cap"})
BREAKER_KEYS = frozenset({"threshold", "window_hours"})
CAPDAEMON_KEYS = frozenset(
    {
        "github",
        "bot",
        "canonical_app",
        "owners",
        "owners_include_admins",
        "mode",
        "repos",
        "schedule",
        "tiers",
        "post_merge",
        "breaker",
        "passive_review_days",
        "random_review_share",
        "burn_in_days",
        "telegram",
        "notifications",
    }
)


def _check_branch_pattern(pattern: str) -> None:
    import re

    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"bad regular expression {quote_value(pattern)}: {exc}") from None
    if "task_id" not in rx.groupindex:
        raise ValueError(f"pattern {quote_value(pattern)} has no named group (?P<task_id>...)")


def _check_ref_name(name: str) -> None:
    if (
        not name
        or name.startswith("-")
        or any(c in name for c in " ~^:?*[\\\x00\n")
        or ".." in name
    ):
        raise ValueError(f"{quote_value(name)} is not a valid branch name")


def _load_capdaemon(file: str, data: Any) -> dict[str, Any]:
    """The fields of Config that come from capdaemon.yml."""
    sec = _Section(file, data, "", CAPDAEMON_KEYS)
    out: dict[str, Any] = {}

    gh = sec.section("github", GITHUB_KEYS)
    gd = GitHubConfig()
    base_url = gh.str(
        "base_url", gd.base_url, pattern=r"^https?://[^\s/]+", what="an http(s) URL"
    ).rstrip("/")
    out["github"] = GitHubConfig(
        base_url=base_url,
        app_id=gh.int("app_id", None, minimum=1),
        private_key_file=gh.str("private_key_file", None),
        installation_id=gh.int("installation_id", None, minimum=1),
        token_env=gh.str(
            "token_env", gd.token_env, pattern=_ENV_RE, what="an environment variable name"
        ),
        per_tick_wait_seconds=gh.num("per_tick_wait_seconds", gd.per_tick_wait_seconds, minimum=0),
        writes_per_hour=gh.int("writes_per_hour", gd.writes_per_hour, minimum=1),
        writes_per_minute=gh.int("writes_per_minute", gd.writes_per_minute, minimum=1),
        requests_per_hour=gh.int("requests_per_hour", None, minimum=1),
    )
    if (out["github"].app_id is None) != (out["github"].private_key_file is None):
        missing = "private_key_file" if out["github"].private_key_file is None else "app_id"
        raise gh.error(missing, "app_id and private_key_file go together (GitHub App auth)")

    bot = sec.section("bot", BOT_KEYS)
    out["bot_login"] = bot.str("login", Config.bot_login, pattern=_LOGIN_RE, what="a GitHub login")
    out["own_repo"] = bot.str("own_repo", None, pattern=_REPO_RE, what="owner/name")
    out["decision_repo"] = bot.str("decision_repo", None, pattern=_REPO_RE, what="owner/name")

    app = sec.section("canonical_app", CANONICAL_APP_KEYS)
    out["canonical_app"] = app.str(
        "slug", None, pattern=r"^[a-z0-9][a-z0-9-]{0,99}$", what="an App slug"
    )
    out["canonical_app_id"] = app.int("id", None, minimum=1)

    out["owners"] = sec.strs("owners", pattern=_LOGIN_RE, what="a GitHub login") or ()
    out["owners_include_admins"] = sec.bool("owners_include_admins", False)
    out["mode"] = sec.str("mode", "enforce", choices=("enforce", "shadow"))

    repos: list[RepoConfig] = []
    items = sec.list("repos") or []
    names: set[str] = set()
    rd = RepoConfig(name="x/y")
    for i, item in enumerate(items):
        line = items.lines[i] if isinstance(items, LList) else None
        r = _Section(file, item, f"repos[{i}]", REPO_KEYS, line)
        if not r.has("name"):
            raise ConfigError(file, r.path, "missing required key 'name'", r.line)
        name = r.str("name", pattern=_REPO_RE, what="owner/name")
        if name.lower() in names:
            raise r.error("name", f"repo {quote_value(name)} is listed twice")
        names.add(name.lower())
        base = r.str("base", rd.base)
        try:
            _check_ref_name(base)
        except ValueError as exc:
            raise r.error("base", str(exc)) from None
        pattern = r.str("task_branch_pattern", rd.task_branch_pattern)
        try:
            _check_branch_pattern(pattern)
        except ValueError as exc:
            raise r.error("task_branch_pattern", str(exc)) from None
        repos.append(
            RepoConfig(
                name=name,
                base=base,
                merge_method=r.str(
                    "merge_method", rd.merge_method, choices=("merge", "squash", "rebase")
                ),
                require_capability=r.bool("require_capability", rd.require_capability),
                extra_checks=_extra_checks(r),
                owners=r.strs("owners", pattern=_LOGIN_RE, what="a GitHub login") or (),
                blocking_labels=(
                    rd.blocking_labels
                    if not r.has("blocking_labels")
                    else _union(rd.blocking_labels, r.strs("blocking_labels") or ())
                ),
                task_branch_pattern=pattern,
            )
        )
    out["repos"] = tuple(repos)

    sd = ScheduleConfig()
    sc = sec.section("schedule", SCHEDULE_KEYS)
    tz = sc.str("timezone", sd.timezone)
    if sc.has("timezone"):
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise sc.error("timezone", f"unknown time zone {quote_value(tz)}") from None
    out["schedule"] = ScheduleConfig(
        tick_seconds=sc.int("tick_seconds", sd.tick_seconds, minimum=1),
        digest_time=sc.str("digest_time", sd.digest_time, pattern=_HHMM_RE, what="a time HH:MM"),
        timezone=tz,
    )

    td = TierConfig()
    ts = sec.section("tiers", TIER_KEYS)
    out["tiers"] = TierConfig(
        many_files=ts.int("many_files", td.many_files, minimum=1),
        large_diff_lines=ts.int("large_diff_lines", td.large_diff_lines, minimum=1),
        one_tap_ttl_hours=ts.num(
            "one_tap_ttl_hours", td.one_tap_ttl_hours, minimum=0, exclusive_min=True
        ),
        **{n: _restrictive(ts, n, getattr(td, n), _check_glob) for n in RESTRICTIVE_TIER_LISTS},
    )

    pd = PostMergeConfig()
    ps = sec.section("post_merge", POST_MERGE_KEYS)
    out["post_merge"] = PostMergeConfig(
        window_minutes=ps.int("window_minutes", pd.window_minutes, minimum=1),
        auto_revert_pr=ps.bool("auto_revert_pr", pd.auto_revert_pr),
        revert_daily_cap=ps.int("revert_daily_cap", pd.revert_daily_cap, minimum=0),
    )

    bd = BreakerConfig()
    bs = sec.section("breaker", BREAKER_KEYS)
    out["breaker"] = BreakerConfig(
        threshold=bs.int("threshold", bd.threshold, minimum=1),
        window_hours=bs.num("window_hours", bd.window_hours, minimum=0, exclusive_min=True),
    )

    out["passive_review_days"] = sec.num(
        "passive_review_days", Config.passive_review_days, minimum=0, exclusive_min=True
    )
    out["random_review_share"] = sec.num(
        "random_review_share", Config.random_review_share, minimum=0, maximum=1
    )
    out["burn_in_days"] = sec.num("burn_in_days", Config.burn_in_days, minimum=0)
    owners = frozenset(o.lower() for o in out.get("owners", ()))
    owners |= {o.lower() for r in out.get("repos", ()) for o in r.owners}
    out["channels"] = parse_channels(sec, owners)
    return out


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

    main = _load_capdaemon(_display(config_dir, MAIN_CONFIG_FILE), read(MAIN_CONFIG_FILE))
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


REPO_POLICY_KEYS: frozenset[str] = frozenset(
    {
        "critical_globs",
        "irreversible_globs",
        "always_d_globs",
        "owners",
        "blocking_labels",
        "extra_checks",
    }
)


def parse_repo_policy(text: str, source: str) -> RepoPolicy:
    """Parse a repo's `.capdaemon.yml` (read from its base branch); ConfigError when invalid."""
    sec = _Section(source, _parse_yaml(text, source), "", REPO_POLICY_KEYS)
    return RepoPolicy(
        source=source,
        critical_globs=sec.strs("critical_globs", check=_check_glob) or (),
        irreversible_globs=sec.strs("irreversible_globs", check=_check_glob) or (),
        always_d_globs=sec.strs("always_d_globs", check=_check_glob) or (),
        owners=sec.strs("owners", pattern=_LOGIN_RE, what="a GitHub login") or (),
        blocking_labels=sec.strs("blocking_labels") or (),
        extra_checks=_extra_checks(sec),
    )


def user_rules_dir(config: Config) -> Path | None:
    """`<config_dir>/skills/classifier` when the config came from a directory, else None."""
    if not config.config_dir:
        return None
    return Path(config.config_dir) / USER_RULES_SUBDIR
