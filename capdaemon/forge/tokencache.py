"""The forge's cross-process cache: installation tokens, ETag cache, repo policy per commit.

`capdaemon tick --once` from cron starts a new process every tick. Without this file each one
would mint new installation tokens, and since ETags are per token, start with an empty
conditional-request cache: nearly every request would count against the rate limit. Kept in
`<state>/forge-cache.json`, owner-only (0600), written atomically when the Forge closes. It
also keeps the App's installation listing (account → installation) for its hour.

The repo policy file (`.capdaemon.yml`, or its absence) at a given commit never changes, so
it is kept per (repo, commit): a cron tick then does not ask again (on GitHub a missing file
is a counted 404 every time, never a free 304). So are the compares, tree entries and blobs a
waiting PR's snapshot read (``shapersist``): a PR left for a later tick is not read again;
and for an hour the App's slug and our access to each repo (``remembered``).

It is only a cache. A 304 is the server's word that the stored body is still current, so a
stale entry can never change an outcome; a token is reused only while it has more than
`REUSE_MARGIN` left, for the same API, App and installation. A file of an older format is
not read (the tick starts cold and replaces it). A file that cannot be read as a
cache (bad JSON, a wrong field, a body whose digest does not match, a mode wider than 0600) is
renamed aside to `forge-cache.json.corrupt-<time>` with a `forge.cache_set_aside` log event and
the tick starts cold; the token itself is never logged.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from capdaemon.filenames import FORGE_CACHE_FILE
from capdaemon.forge import remembered
from capdaemon.forge.etagcache import CacheEntry, CacheKey, auth_identity
from capdaemon.forge.shapersist import ShaCacheError
from capdaemon.state import atomic_write_text, set_aside
from capdaemon.timefmt import TimestampError, parse_utc

if TYPE_CHECKING:
    from capdaemon.forge.client import Forge

log = structlog.get_logger(__name__)

FORMAT = 2
# A persisted token is dropped this long before it expires (tokens live one hour): a tick that
# starts with it never runs into its expiry, and a leaked file is worth little.
REUSE_MARGIN = timedelta(minutes=15)

OWNER_ONLY = 0o600


class CacheFileError(ValueError):
    """The cache file is not a cache this version can read (the message names the field)."""


@dataclass(frozen=True)
class Loaded:
    """What a load found: whether a token was reused and how many ETag entries came back."""

    token_reused: bool = False
    entries: int = 0
    set_aside: str | None = None  # the new name of a corrupt file
    unreadable: bool = False  # the file is there but could not be read: leave it alone


def cache_path(state_dir: Path) -> Path:
    """Where the cache lives in a state directory."""
    return Path(state_dir) / FORGE_CACHE_FILE


class _OlderFormat(Exception):
    """A cache file written by an earlier version: not read, replaced at the next save."""


def _binding(forge: Forge, base_url: str) -> dict[str, Any]:
    insts = forge.installations
    return {
        "base_url": base_url.rstrip("/"),
        "app_id": forge.app_id,
        "installation_id": insts.pinned if insts is not None else None,
    }


def _identities(forge: Forge) -> set[str]:
    """The cache identities (hashed Authorization headers) of the tokens the forge holds now."""
    if forge.installations is not None:
        return {
            auth_identity({"Authorization": f"token {token}"})
            for _inst, token, _exp in forge.installations.held()
        }
    auth = forge.session.http.auth
    token = getattr(auth, "token", None)
    if auth is None or not token:
        return set()
    return {auth_identity({"Authorization": f"{auth.token_type} {token}"})}


def _digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def _set_aside(path: Path, reason: str, now: datetime) -> Path:
    """Rename a cache file that cannot be used (kept, never overwritten); log it."""
    target = set_aside(path, now)
    log.warning("forge.cache_set_aside", file=str(path), moved_to=target.name, reason=reason)
    return target


def _tokens_well_formed(tokens: Any) -> bool:
    """Whether the cached 'tokens' field is a list of complete token records."""
    return isinstance(tokens, list) and all(
        isinstance(t, dict)
        and isinstance(t.get("installation_id"), int)
        and isinstance(t.get("value"), str)
        and isinstance(t.get("expires_at"), str)
        for t in tokens
    )


def _listing_well_formed(listing: Any) -> bool:
    """Whether the cached 'installations' field maps account names to installation ids."""
    return (
        isinstance(listing, dict)
        and isinstance(listing.get("listed_at"), str)
        and isinstance(listing.get("accounts"), dict)
        and all(isinstance(k, str) and isinstance(v, int) for k, v in listing["accounts"].items())
    )


def _parse(raw: bytes, path: Path) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CacheFileError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise CacheFileError(f"{path}: top level is not an object")
    if data.get("format") == 1:
        raise _OlderFormat
    if data.get("format") != FORMAT:
        raise CacheFileError(f"{path}: field 'format' is {data.get('format')!r}, not {FORMAT}")
    if not isinstance(data.get("binding"), dict):
        raise CacheFileError(f"{path}: field 'binding' is not an object")
    if not _tokens_well_formed(data.get("tokens")):
        raise CacheFileError(f"{path}: field 'tokens' is malformed")
    listing = data.get("installations")
    if listing is not None and not _listing_well_formed(listing):
        raise CacheFileError(f"{path}: field 'installations' is malformed")
    if not isinstance(data.get("etags"), list):
        raise CacheFileError(f"{path}: field 'etags' is not a list")
    if not isinstance(data.get("policies", []), list):
        raise CacheFileError(f"{path}: field 'policies' is not a list")
    return data


def _policies(data: dict[str, Any], path: Path) -> list[tuple[tuple[str, str], str | None]]:
    """The remembered repo policy texts: ((repo, commit sha), text or None when absent)."""
    out: list[tuple[tuple[str, str], str | None]] = []
    for i, e in enumerate(data.get("policies", [])):
        where = f"{path}: policies[{i}]"
        if not isinstance(e, dict):
            raise CacheFileError(f"{where} is not an object")
        repo, sha, text = e.get("repo"), e.get("sha"), e.get("text")
        if not isinstance(repo, str) or not isinstance(sha, str) or len(sha) not in (40, 64):
            raise CacheFileError(f"{where}: 'repo' and a full commit 'sha' are required")
        if text is not None and not isinstance(text, str):
            raise CacheFileError(f"{where}.text is not a string or null")
        out.append(((repo, sha), text))
    return out


def _when(text: str, field: str, path: Path) -> datetime:
    try:
        return parse_utc(text, field)
    except TimestampError as exc:
        raise CacheFileError(f"{path}: field {exc}") from None


def _tokens(data: dict[str, Any], path: Path) -> list[tuple[int, str, datetime]]:
    """The remembered installation tokens: (installation id, token, expires at)."""
    return [
        (t["installation_id"], t["value"], _when(t["expires_at"], f"tokens[{i}].expires_at", path))
        for i, t in enumerate(data["tokens"])
    ]


def _entries(data: dict[str, Any], path: Path) -> list[tuple[CacheKey, CacheEntry]]:
    out: list[tuple[CacheKey, CacheEntry]] = []
    for i, e in enumerate(data["etags"]):
        where = f"{path}: etags[{i}]"
        if not isinstance(e, dict):
            raise CacheFileError(f"{where} is not an object")
        for name in ("url", "auth", "accept", "etag", "body", "sha256"):
            if not isinstance(e.get(name), str):
                raise CacheFileError(f"{where}.{name} is not a string")
        headers = e.get("headers")
        if not isinstance(headers, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
        ):
            raise CacheFileError(f"{where}.headers is not an object of strings")
        body = e["body"].encode("utf-8")
        if _digest(body) != e["sha256"]:
            raise CacheFileError(f"{where}.body does not match its sha256")
        out.append(((e["url"], e["auth"], e["accept"]), CacheEntry(e["etag"], headers, body)))
    return out


def load(forge: Forge, state_dir: Path, base_url: str) -> Loaded:
    """Fill the forge's token and ETag cache from the state directory, if the file fits."""
    path = cache_path(state_dir)
    now = forge.clock()
    try:
        st = path.stat()
    except FileNotFoundError:
        return Loaded()
    try:
        _owner_only(path, st)
        data = _parse(path.read_bytes(), path)
        entries = _entries(data, path)
        policies = _policies(data, path)
        kept = remembered.read(data, path)
        tokens = _tokens(data, path)
        listing = data["installations"]
        listed_at = (
            _when(listing["listed_at"], "installations.listed_at", path) if listing else None
        )
    except _OlderFormat:
        log.info("forge.cache_older_format", file=str(path))
        return Loaded()
    except (CacheFileError, ShaCacheError) as exc:
        moved = _set_aside(path, str(exc), now)
        return Loaded(set_aside=moved.name)
    except OSError as exc:
        log.warning("forge.cache_unreadable", file=str(path), error=exc.strerror)
        return Loaded(unreadable=True)
    if data["binding"] != _binding(forge, base_url):
        log.info("forge.cache_other_binding", file=str(path))
        return Loaded()
    for where, text in policies:
        forge.session.caches.policy.put(where, (text,))
    remembered.adopt(kept, forge.session, now)
    insts = forge.installations
    if insts is not None and listing is not None and listed_at is not None:
        insts.remember(listing["accounts"], listed_at)
    reused = _reuse_tokens(forge, tokens, now)
    idents = _identities(forge)
    adopted = 0
    for key, entry in entries:
        if key[1] in idents:  # ETags are per token: another token's entries are of no use
            forge.transport.cache.put(key, entry)
            adopted += 1
    log.info("forge.cache_loaded", reused_grant=reused, entries=adopted, policies=len(policies))
    return Loaded(token_reused=reused, entries=adopted)


def _owner_only(path: Path, st: os.stat_result) -> None:
    """Refuse a cache file that is not a regular file, owner-only and ours (CacheFileError)."""
    if not stat.S_ISREG(st.st_mode):
        raise CacheFileError(f"{path}: not a regular file")
    if st.st_mode & 0o077 or st.st_uid != os.getuid():
        raise CacheFileError(
            f"{path}: mode {stat.S_IMODE(st.st_mode):04o} owner uid {st.st_uid} is not "
            f"owner-only {OWNER_ONLY:04o} for uid {os.getuid()} (the token may have leaked)"
        )


def _reuse_tokens(forge: Forge, tokens: list[tuple[int, str, datetime]], now: datetime) -> bool:
    """Adopt the saved installation tokens still worth reusing (True: at least one)."""
    insts = forge.installations
    if insts is None:
        return False
    fresh = [(inst_id, value, exp) for inst_id, value, exp in tokens if exp - now > REUSE_MARGIN]
    for inst_id, value, expires in fresh:
        insts.token(inst_id).adopt(value, expires)
    return bool(fresh)


def save(forge: Forge, state_dir: Path, base_url: str) -> int:
    """Write the tokens (those still worth reusing), the installation listing and the current
    tokens' ETag entries; the number of entries."""
    path = cache_path(state_dir)
    now = forge.clock()
    insts = forge.installations
    tokens = [
        {"installation_id": inst_id, "value": value, "expires_at": expires.isoformat()}
        for inst_id, value, expires in (insts.held() if insts is not None else [])
        if expires - now > REUSE_MARGIN
    ]
    listing = None
    if insts is not None and insts.listed_at is not None:
        listing = {"listed_at": insts.listed_at.isoformat(), "accounts": insts.accounts()}
    idents = _identities(forge)
    etags = []
    for (url, auth, accept), entry in forge.transport.cache.items():
        if auth not in idents:
            continue
        try:
            text = entry.body.decode("utf-8")
        except UnicodeDecodeError:
            continue
        etags.append(
            {
                "url": url,
                "auth": auth,
                "accept": accept,
                "etag": entry.etag,
                "headers": entry.headers,
                "body": text,
                "sha256": _digest(entry.body),
            }
        )
    if path.exists() and not path.is_file():
        log.warning("forge.cache_not_saved", file=str(path), reason="not a regular file")
        return 0
    policies = [
        {"repo": repo, "sha": sha, "text": value[0]}
        for (repo, sha), value in list(forge.session.caches.policy.items())
    ]
    doc = {
        "format": FORMAT,
        "binding": _binding(forge, base_url),
        "tokens": tokens,
        "installations": listing,
        "etags": etags,
        "policies": policies,
        **remembered.dump(forge.session, now),
    }
    atomic_write_text(path, json.dumps(doc, separators=(",", ":")), mode=OWNER_ONLY)
    return len(etags)
