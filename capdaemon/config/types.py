"""The config types: frozen objects for config/*.yml, with the built-in defaults of the spec.

They are the contract every layer reads; `capdaemon.config.loaders.load_config` builds them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from capdaemon.config.base import CheckSpec as CheckSpec
from capdaemon.config.base import _check_specs, _union
from capdaemon.config.channels import ChannelsConfig
from capdaemon.filenames import REPO_POLICY_FILE
from capdaemon.model import Severity

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
# Prose documentation under these folders is non-critical: a file whose name ends in one of
# PROSE_SUFFIXES (exact, lower case). Anything else there (a Sphinx conf.py, a script, an .mdx
# page that runs JSX, a notebook) is judged as usual; the critical lists still win
# (docs/concepts/** keeps its typo-only rule).
DEFAULT_NONCRITICAL_PROSE_DIRS: tuple[str, ...] = ("docs/",)
PROSE_SUFFIXES: tuple[str, ...] = (".md", ".markdown", ".rst", ".adoc", ".asciidoc", ".txt")
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


# Without `mode:` a deployment only watches (classifies and reports, never merges or closes)
# until an owner writes `mode: enforce`.
DEFAULT_MODE = "shadow"


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
    noncritical_prose_dirs: tuple[str, ...] = DEFAULT_NONCRITICAL_PROSE_DIRS
    user_rule_timeout_seconds: float = 2.0
    typo_words: tuple[str, ...] = ()  # project words the typo carve-out accepts as spelled right


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
    # one installation for every request (one organisation); None: each repo's owner's own
    installation_id: int | None = None
    token_env: str = "GITHUB_TOKEN"
    per_tick_wait_seconds: float = 120.0
    # content-creating writes GitHub allows (per hour, per minute); counted requests per hour
    # (None: the primary budget from the rate-limit headers alone)
    writes_per_hour: int = 500
    writes_per_minute: int = 80
    requests_per_hour: int | None = None


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


# the change detector's burst rate at most: half of GitHub's documented REST secondary limit
# (900 points a minute, a GET one point), the rest left to the tick
MAX_BURST_PER_MINUTE = 450
# the rollup sweep's GraphQL points an hour at most: half of GitHub's smallest hourly budget
# (5,000 points for a token or an App installation), the rest left to the tick
MAX_SWEEP_POINTS_PER_HOUR = 2500


@dataclass(frozen=True)
class ScheduleConfig:
    """Tick interval, the change detector's between ticks, and the digest's wall-clock time.

    `detect_seconds`: how often `capdaemon run` looks for a change between ticks (0: never);
    `detect_requests_per_minute`: the most requests a minute it may spend doing so while
    quiet; `detect_burst_requests_per_minute`: the most for `detect_burst_seconds` after a look
    saw a change (0 seconds: never faster than quiet); `detect_burst_graphql_points_per_hour`:
    the GraphQL points an hour the burst's rollup sweep of the heads waiting on checks may
    spend (0: no sweep). See capdaemon.daemon.polling.cadence."""

    tick_seconds: int = 60
    digest_time: str = "09:00"
    timezone: str = "Asia/Seoul"
    detect_seconds: int = 5
    detect_requests_per_minute: int = 30
    detect_burst_requests_per_minute: int = 300
    detect_burst_seconds: int = 60
    detect_burst_graphql_points_per_hour: int = 1800


# SPEC 4.1 tier 3's protected families (seed 000), each a named list so tests and docs
# derive from one home: a change to any of them needs a full ballot under every policy.
PROTECTED_FAMILIES: dict[str, tuple[str, ...]] = {
    "agent instructions": (
        "**/CLAUDE.md", "**/CLAUDE.local.md", "**/AGENTS.md", "**/GEMINI.md",
        "**/.cursorrules", "**/.windsurfrules", "**/.clinerules", "**/copilot-instructions.md",
        "**/.claude/**", "**/.cursor/**", "**/.codex/**", "**/.gemini/**",
    ),
    # bot settings in any folder and format: bot_settings.json, cron_settings.yaml, settings.toml
    "bot settings": (
        "**/*settings", "**/*settings.*", "**/*settings/**", "**/*bot[-_.]config*",
        "config/**",
    ),
    "memory": ("**/memory/**",),
    "GitHub configuration": ("**/.github/**",),
    "environment files": ("**/.env*",),
}  # fmt: skip


@dataclass(frozen=True)
class TierConfig:
    """SPEC 4.1 tier overlay thresholds and globs.

    The seed's words as defaults: a single file is tier 1, several files (more than
    `many_files`, default 1) are tier 2; both thresholds are configurable.
    """

    many_files: int = 1
    large_diff_lines: int = 300
    one_tap_ttl_hours: float = 24.0
    dependency_globs: tuple[str, ...] = (
        "**/requirements*.txt", "**/pyproject.toml", "**/poetry.lock", "**/Pipfile",
        "**/Pipfile.lock", "**/uv.lock", "**/setup.py", "**/setup.cfg", "**/package.json",
        "**/package-lock.json", "**/yarn.lock", "**/pnpm-lock.yaml", "**/go.mod", "**/go.sum",
        "**/Cargo.toml", "**/Cargo.lock", "**/Gemfile", "**/Gemfile.lock", "**/composer.json",
        "**/composer.lock",
    )  # fmt: skip
    protected_globs: tuple[str, ...] = tuple(
        g for family in PROTECTED_FAMILIES.values() for g in family
    )
    production_globs: tuple[str, ...] = (
        "deploy/**", "infra/**", "k8s/**", "**/production*", "**/prod/**",
    )  # fmt: skip


@dataclass(frozen=True)
class PostMergeConfig:
    """SPEC 6.2 probe and auto-revert."""

    window_minutes: int = 30
    auto_revert_pr: bool = False
    revert_daily_cap: int = 3


@dataclass(frozen=True)
class MetricsConfig:
    """`capdaemon run`'s health and Prometheus endpoints (`/healthz`, `/metrics`): off unless
    `listen` is set ("host:port"); a host other than loopback needs `allow_non_loopback`."""

    listen: str | None = None
    allow_non_loopback: bool = False

    @property
    def address(self) -> tuple[str, int] | None:
        """(host, port) to bind, or None when the endpoints are off."""
        if not self.listen:
            return None
        host, _, port = self.listen.rpartition(":")
        return host.strip("[]"), int(port)


@dataclass(frozen=True)
class BreakerConfig:
    """SPEC 6.3 circuit breaker."""

    threshold: int = 3
    window_hours: float = 24.0


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
    mode: str = DEFAULT_MODE  # enforce | shadow
    repos: tuple[RepoConfig, ...] = ()
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    tiers: TierConfig = field(default_factory=TierConfig)
    post_merge: PostMergeConfig = field(default_factory=PostMergeConfig)
    breaker: BreakerConfig = field(default_factory=BreakerConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
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
        if policy.empty:
            return self
        cls = self.classifier
        classifier = dataclasses.replace(
            cls,
            critical_globs=_union(cls.critical_globs, policy.critical_globs),
            irreversible_globs=_union(cls.irreversible_globs, policy.irreversible_globs),
            always_d_globs=_union(cls.always_d_globs, policy.always_d_globs),
        )
        repos = self.repos
        if policy.owners or policy.blocking_labels or policy.extra_checks:
            if repo is None:
                raise ValueError(
                    f"{policy.source}: owners/labels/checks need the repo they apply to"
                )
            repos = _repos_with_policy(self.repos, policy, repo)
        return dataclasses.replace(self, classifier=classifier, repos=repos)


def _repos_with_policy(
    repos: tuple[RepoConfig, ...], policy: RepoPolicy, repo: str
) -> tuple[RepoConfig, ...]:
    """`repos` with the policy's owners, labels and checks added to `repo` (added if missing)."""
    found = False
    new_repos = []
    for rc in repos:
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
    return tuple(new_repos)
