"""bot-state/repo_policies.json: each repo's base-branch `.capdaemon.yml` as last read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from capdaemon.config.policy import RepoPolicy as PolicyAdditions
from capdaemon.filenames import REPO_POLICIES_FILE
from capdaemon.state import StateError, atomic_write_json, read_json

POLICIES_VERSION = 1
# what Config.with_repo_policy adds, in the order the Repos page lists it
LIST_KEYS = (
    "owners",
    "blocking_labels",
    "critical_globs",
    "irreversible_globs",
    "always_d_globs",
)


@dataclass(frozen=True)
class PolicySummary:
    """One repo's policy as last read: its hash, its parse error, and what it adds."""

    base: str
    policy_hash: str
    error: str | None
    present: bool  # a non-empty .capdaemon.yml was found on the base branch
    owners: tuple[str, ...] = ()
    blocking_labels: tuple[str, ...] = ()
    critical_globs: tuple[str, ...] = ()
    irreversible_globs: tuple[str, ...] = ()
    always_d_globs: tuple[str, ...] = ()
    extra_checks: tuple[tuple[str, int | None], ...] = ()  # (context, app id or None)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        out: dict[str, Any] = {
            "base": self.base,
            "policy_hash": self.policy_hash,
            "error": self.error,
            "present": self.present,
        }
        for key in LIST_KEYS:
            out[key] = list(getattr(self, key))
        out["extra_checks"] = [{"context": c, "app_id": a} for c, a in self.extra_checks]
        return out

    @classmethod
    def from_dict(cls, repo: str, data: Any) -> PolicySummary:
        """Parse one repo's entry; ValueError naming the repo and field when malformed."""
        if not isinstance(data, dict):
            raise ValueError(f"repo {repo!r}: not an object")
        for key in ("base", "policy_hash"):
            if not isinstance(data.get(key), str):
                raise ValueError(f"repo {repo!r}: {key!r} is not a string")
        error = data.get("error")
        if error is not None and not isinstance(error, str):
            raise ValueError(f"repo {repo!r}: 'error' is not a string or null")
        lists: dict[str, tuple[str, ...]] = {}
        for key in LIST_KEYS:
            items = data.get(key, [])
            if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
                raise ValueError(f"repo {repo!r}: {key!r} is not a list of strings")
            lists[key] = tuple(items)
        checks = _extra_checks(repo, data.get("extra_checks", []))
        return cls(
            base=data["base"],
            policy_hash=data["policy_hash"],
            error=error,
            present=bool(data.get("present", False)),
            extra_checks=checks,
            **lists,
        )


def _extra_checks(repo: str, raw: Any) -> tuple[tuple[str, int | None], ...]:
    """The `extra_checks` entry: (context, app id or None) pairs; ValueError when malformed."""
    checks: list[tuple[str, int | None]] = []
    for c in raw if isinstance(raw, list) else [None]:
        app = c.get("app_id") if isinstance(c, dict) else None
        if (
            not isinstance(c, dict)
            or not isinstance(c.get("context"), str)
            or not (app is None or (isinstance(app, int) and not isinstance(app, bool)))
        ):
            raise ValueError(f"repo {repo!r}: 'extra_checks' has a malformed item")
        checks.append((c["context"], app))
    return tuple(checks)


class PolicyRead(Protocol):
    """What a summary keeps of one repo's policy as a tick read it (the daemon's RepoPolicy)."""

    @property
    def base(self) -> str:
        """The base branch the policy was read from."""
        ...

    @property
    def policy_hash(self) -> str:
        """The hash of the effective policy."""
        ...

    @property
    def error(self) -> str | None:
        """The .capdaemon.yml's parse error, if any."""
        ...

    @property
    def additions(self) -> PolicyAdditions | None:
        """What the .capdaemon.yml adds (None: no file)."""
        ...


def summarize(found: PolicyRead) -> PolicySummary:
    """The summary of one repo's policy as read this tick."""
    adds = found.additions or PolicyAdditions()
    return PolicySummary(
        base=found.base,
        policy_hash=found.policy_hash,
        error=found.error,
        present=found.additions is not None or found.error is not None,
        owners=adds.owners,
        blocking_labels=adds.blocking_labels,
        critical_globs=adds.critical_globs,
        irreversible_globs=adds.irreversible_globs,
        always_d_globs=adds.always_d_globs,
        extra_checks=tuple((c.context, c.app_id) for c in adds.extra_checks),
    )


def read_policies(state_dir: Path) -> dict[str, PolicySummary]:
    """The file's summaries by repo ({} when missing); StateError naming the file when corrupt."""
    path = Path(state_dir) / REPO_POLICIES_FILE
    raw = read_json(path, None)
    if raw is None:
        return {}
    if (
        not isinstance(raw, dict)
        or raw.get("version") != POLICIES_VERSION
        or not isinstance(raw.get("repos"), dict)
    ):
        raise StateError(f"{path}: not a capdaemon {REPO_POLICIES_FILE} (version 1)")
    try:
        return {repo: PolicySummary.from_dict(repo, d) for repo, d in raw["repos"].items()}
    except ValueError as exc:
        raise StateError(f"{path}: {exc}") from exc


def save_policies(
    state_dir: Path, found: Mapping[str, PolicyRead], supervised: tuple[str, ...]
) -> bool:
    """Write this tick's summaries (atomically, only when they changed); True when written.

    A repo not read this tick (its poll failed) keeps its last summary; a repo no longer
    supervised is dropped. A corrupt file raises StateError and is left as it is.
    """
    old = read_policies(state_dir)
    new = {
        r: summarize(found[r]) if r in found else old[r]
        for r in supervised
        if r in found or r in old
    }
    if new == old:
        return False
    body = {
        "version": POLICIES_VERSION,
        "repos": {repo: s.to_dict() for repo, s in sorted(new.items())},
    }
    atomic_write_json(Path(state_dir) / REPO_POLICIES_FILE, body)
    return True
