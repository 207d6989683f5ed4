"""A supervised repo's own policy (`.capdaemon.yml` on its base branch): parse it, and add it
to the central config (it can only add restrictions and owners, never remove)."""

from __future__ import annotations

from dataclasses import dataclass

from capdaemon.config.sections import (
    _LOGIN_RE,
    _check_glob,
    _extra_checks,
    _parse_yaml,
    _Section,
    _union,
)
from capdaemon.config.types import CheckSpec, Config, RepoConfig, _check_specs
from capdaemon.filenames import REPO_POLICY_FILE


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
