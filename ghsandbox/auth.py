"""Who is calling: personal tokens, App JWTs, installation tokens; repo permissions."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any

import jwt

from .backend.accounts import PERMISSION_RANK
from .core import Backend
from .errors import SandboxApiError

BAD_CREDENTIALS = "Bad credentials"


@dataclass(frozen=True)
class Identity:
    """The authenticated caller."""

    kind: str  # "user", "installation", "app", "anonymous"
    login: str | None = None
    installation_id: int | None = None
    app_id: int | None = None
    token_hash: str = ""

    @property
    def rate_key(self) -> str:
        """Which rate-limit bucket this caller draws from."""
        if self.kind == "installation":
            return f"installation:{self.installation_id}"
        if self.kind == "app":
            return f"app:{self.app_id}"
        if self.kind == "user":
            return f"user:{self.login}"
        return "anonymous"


ANONYMOUS = Identity(kind="anonymous")


def _bad_credentials() -> SandboxApiError:
    return SandboxApiError(401, BAD_CREDENTIALS)


def extract_token(header: str | None) -> str | None:
    """The credential in an Authorization header (token, Bearer, Basic password)."""
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    scheme = scheme.lower()
    value = value.strip()
    if scheme in ("token", "bearer"):
        return value or None
    if scheme == "basic":
        try:
            decoded = base64.b64decode(value).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return ""
        user, _, password = decoded.partition(":")
        return password or user
    return ""


def identify(b: Backend, header: str | None) -> Identity:
    """Resolve the caller; unknown, expired or malformed credentials raise a 401 Bad credentials."""
    token = extract_token(header)
    if token is None:
        return ANONYMOUS
    if not token:
        raise _bad_credentials()
    th = hashlib.sha256(token.encode()).hexdigest()[:16]
    if token.count(".") == 2 and token.startswith("eyJ"):
        return _identify_jwt(b, token, th)
    rec = b.data["tokens"].get(token)
    if rec is None:
        raise _bad_credentials()
    if "installation" in rec:
        if rec["expires_at"] < b.clock.wall():
            raise _bad_credentials()
        inst = b.data["installations"].get(str(rec["installation"]))
        if inst is None:
            raise _bad_credentials()
        return Identity(
            kind="installation",
            login=b.bot_login(inst["app_id"]),
            installation_id=inst["id"],
            app_id=inst["app_id"],
            token_hash=th,
        )
    if rec["login"] not in b.data["users"]:
        raise _bad_credentials()
    return Identity(kind="user", login=rec["login"], token_hash=th)


def _identify_jwt(b: Backend, token: str, th: str) -> Identity:
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise SandboxApiError(401, "A JSON web token could not be decoded") from exc
    if header.get("alg") != "RS256":
        raise SandboxApiError(401, "A JSON web token could not be decoded")
    try:
        iss: Any = claims.get("iss")
        app_id = int(iss)
    except (TypeError, ValueError) as exc:
        raise SandboxApiError(401, "'Issuer' claim ('iss') must be an Integer") from exc
    app = b.app_by_id(app_id)
    if app is None:
        raise SandboxApiError(401, "Integration not found")
    try:
        verified = jwt.decode(
            token,
            app["public_key"],
            algorithms=["RS256"],
            options={
                "require": ["exp", "iat", "iss"],
                "verify_iss": False,
                "verify_exp": False,  # judged below against the server's wall clock
                "verify_iat": False,
            },
        )
    except jwt.PyJWTError as exc:
        raise SandboxApiError(401, "A JSON web token could not be decoded") from exc
    _check_jwt_times(verified, b.clock.wall())
    return Identity(kind="app", app_id=app_id, login=b.bot_login(app_id), token_hash=th)


# GitHub's own words when an App JWT's times do not fit its clock (octokit's App auth matches
# these to correct for a drifted client clock from the response's Date header).
JWT_EXPIRED = (
    "'Expiration time' claim ('exp') must be a numeric value representing the future time at "
    "which the assertion expires"
)
JWT_TOO_LONG = "'Expiration time' claim ('exp') is too far in the future"
JWT_ISSUED_LATER = (
    "'Issued at' claim ('iat') must be an Integer representing the time that the assertion "
    "was issued"
)
JWT_MAX_LIFETIME = 600  # exp at most 10 minutes after the server's now


def _check_jwt_times(claims: dict[str, Any], now: float) -> None:
    """GitHub's JWT window on its own clock: iat not after now, now < exp <= now + 10 min."""
    iat, exp = claims.get("iat"), claims.get("exp")
    if not isinstance(iat, int) or isinstance(iat, bool):
        raise SandboxApiError(401, JWT_ISSUED_LATER)
    if not isinstance(exp, int) or isinstance(exp, bool) or exp <= now:
        raise SandboxApiError(401, JWT_EXPIRED)
    if iat > now:
        raise SandboxApiError(401, JWT_ISSUED_LATER)
    if exp > now + JWT_MAX_LIFETIME:
        raise SandboxApiError(401, JWT_TOO_LONG)


def repo_permission(b: Backend, ident: Identity, full: str) -> str:
    """The caller's effective role on a repository (installations: by their app permissions)."""
    if ident.kind == "installation":
        inst = b.data["installations"][str(ident.installation_id)]
        if full not in b.installation_repos(inst):
            return "none"
        return "admin"
    if ident.kind == "user":
        return b.permission(full, ident.login)
    if ident.kind == "anonymous":
        return b.permission(full, None)
    return "none"


def app_allows(b: Backend, ident: Identity, category: str, level: str) -> bool:
    """Does the installation's app hold ``category: level`` (read < write)?"""
    if ident.kind != "installation":
        return True
    app: dict[str, Any] = b.data["apps"][str(ident.app_id)]
    have = app.get("permissions", {}).get(category)
    if have is None:
        return False
    return level == "read" or have == "write"


def require(
    b: Backend,
    ident: Identity,
    full: str,
    level: str = "read",
    category: str | None = None,
    app_level: str | None = None,
) -> str:
    """Raise GitHub's 404/403 unless the caller has ``level`` on the repo; return the role.
    An App installation needs ``category`` at ``app_level`` (default: write for any level
    above read; GitHub reads branch protection with ``administration: read``)."""
    if ident.kind == "app":
        raise SandboxApiError(
            403,
            "A JSON web token cannot be used here: authenticate as an installation "
            "(POST /app/installations/{id}/access_tokens).",
        )
    b.repo(full)  # 404 for unknown repositories
    role = repo_permission(b, ident, full)
    if role == "none":
        raise SandboxApiError(404, "Not Found")
    if category is not None and not app_allows(
        b, ident, category, app_level or ("write" if level != "read" else "read")
    ):
        raise SandboxApiError(403, "Resource not accessible by integration")
    if PERMISSION_RANK[role] < PERMISSION_RANK[level]:
        if ident.kind == "installation":
            raise SandboxApiError(403, "Resource not accessible by integration")
        if ident.kind == "anonymous":
            raise SandboxApiError(401, "Requires authentication")
        if level == "admin":
            raise SandboxApiError(403, "Must have admin rights to Repository.")
        raise SandboxApiError(403, "Resource not accessible by personal access token")
    return role
