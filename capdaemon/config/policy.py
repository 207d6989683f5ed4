"""A supervised repo's own policy (`.capdaemon.yml` on its base branch): parse it, and add it
to the central config (it can only add restrictions and owners, never remove)."""

from __future__ import annotations

from capdaemon.config.sections import (
    _LOGIN_RE,
    _check_glob,
    _extra_checks,
    _parse_yaml,
    _Section,
)
from capdaemon.config.types import Config
from capdaemon.config.types import RepoPolicy as RepoPolicy


def with_repo_policy(config: Config, policy: RepoPolicy, repo: str | None = None) -> Config:
    """`config` with a repo policy's additions (globs, owners, labels, checks); never removes."""
    return config.with_repo_policy(policy, repo)


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
