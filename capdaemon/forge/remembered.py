"""What an earlier process read that the next one may reuse: sha-bound reads, slug, repo access.

Part of the forge's cross-process cache file (``tokencache``). Beside the sha-bound reads
(``shapersist``) it keeps two answers for ``SLUG_FOR`` / the caller's ``max_age``:

- the App's slug (its bot login; ``GET /app``, a counted request with the App's JWT);
- our permissions on each repo the start-up check asked about (``GET /repos/{o}/{r}``).

``read`` validates every field (ShaCacheError names the first bad one, and the file is set
aside); ``adopt`` puts what was read into a Forge whose binding matched; ``dump`` gives the
fields to write.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from capdaemon.forge import shapersist
from capdaemon.forge.session import ForgeSession, ShaCaches
from capdaemon.forge.shapersist import ShaCacheError
from capdaemon.timefmt import TimestampError, parse_utc

# The App's slug is read again after this long (an App can be renamed).
SLUG_FOR = timedelta(hours=1)


@dataclass
class Kept:
    """The reusable reads found in a cache file."""

    shas: ShaCaches = field(default_factory=ShaCaches)
    slug: tuple[str, datetime] | None = None
    repos: list[tuple[str, dict[str, bool], datetime]] = field(default_factory=list)


def _when(text: Any, where: str) -> datetime:
    if not isinstance(text, str):
        raise ShaCacheError(f"{where} is not a timestamp")
    try:
        return parse_utc(text, where)
    except TimestampError as exc:
        raise ShaCacheError(str(exc)) from None


def _slug(app: Any, path: Path) -> tuple[str, datetime] | None:
    if app is None:
        return None
    if not isinstance(app, dict) or not isinstance(app.get("slug"), str) or not app["slug"]:
        raise ShaCacheError(f"{path}: field 'app' is malformed")
    return app["slug"], _when(app.get("read_at"), f"{path}: app.read_at")


def _repo(r: Any, where: str) -> tuple[str, dict[str, bool], datetime]:
    perms = r.get("permissions") if isinstance(r, dict) else None
    if (
        not isinstance(r, dict)
        or not isinstance(r.get("repo"), str)
        or not isinstance(perms, dict)
        or not all(isinstance(k, str) and isinstance(v, bool) for k, v in perms.items())
    ):
        raise ShaCacheError(f"{where} is malformed")
    return r["repo"], dict(perms), _when(r.get("read_at"), f"{where}.read_at")


def read(data: dict[str, Any], path: Path) -> Kept:
    """The reusable reads of a parsed cache file (ShaCacheError: a malformed field)."""
    kept = Kept(slug=_slug(data.get("app"), path))
    repos = data.get("repos", [])
    if not isinstance(repos, list):
        raise ShaCacheError(f"{path}: field 'repos' is not a list")
    kept.repos = [_repo(r, f"{path}: repos[{i}]") for i, r in enumerate(repos)]
    shapersist.restore(data, path, kept.shas)
    return kept


def adopt(kept: Kept, session: ForgeSession, now: datetime) -> None:
    """Put `kept` into a Forge's session (the file's binding matched)."""
    shapersist.adopt(kept.shas, session.caches)
    for repo, perms, read_at in kept.repos:
        session.seen.at[repo] = (perms, read_at)
    if kept.slug is not None and timedelta(0) <= now - kept.slug[1] < SLUG_FOR:
        session.identity.adopt_slug(*kept.slug)


def dump(session: ForgeSession, now: datetime) -> dict[str, Any]:
    """The fields to write (a slug read in this process is dated `now`)."""
    ident = session.identity
    slug, read_at = ident.known_slug, ident.slug_read_at or now
    return {
        "app": None if slug is None else {"slug": slug, "read_at": read_at.isoformat()},
        "repos": [
            {"repo": repo, "permissions": perms, "read_at": at.isoformat()}
            for repo, (perms, at) in session.seen.at.items()
        ],
        **shapersist.dump(session.caches),
    }
