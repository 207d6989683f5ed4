"""Authenticated Telegram `callback_data`: an HMAC binds a button to one request, PR and head.

The data is `cd1.<a|r>.<request id>.<mac>` (at most 64 bytes, the Bot API's limit); the MAC
covers the action, the request id, the PR, the head sha, the chat and the deadline, so a
button copied from another message, PR, head or an expired request does not verify.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from capdaemon.channels.config import read_secret

VERSION = "cd1"
ACTIONS = {"a": "approve", "r": "reject"}
MIN_KEY_BYTES = 16
_DATA_RE = re.compile(r"^cd1\.([ar])\.([0-9a-f]{12})\.([A-Za-z0-9_-]{22})$")


class CallbackError(ValueError):
    """Callback data that is not ours (malformed) or whose MAC does not verify."""


@dataclass(frozen=True)
class Binding:
    """What one request's buttons are bound to."""

    request_id: str
    pr: str  # owner/repo#N
    head_sha: str
    chat_id: int
    expires_at: str  # ISO UTC

    def message(self, action: str) -> bytes:
        """The bytes the MAC covers."""
        fields = (VERSION, action, self.request_id, self.pr, self.head_sha, str(self.chat_id))
        return "\x1f".join((*fields, self.expires_at)).encode("utf-8")


@dataclass(frozen=True)
class Callback:
    """Parsed callback data (not yet verified)."""

    action: str  # "approve" | "reject"
    request_id: str
    mac: str


def new_request_id() -> str:
    """A random 48-bit request id (12 hex digits)."""
    return secrets.token_hex(6)


def _mac(key: bytes, binding: Binding, action_code: str) -> str:
    digest = hmac.new(key, binding.message(action_code), hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def sign(key: bytes, binding: Binding, action: str) -> str:
    """The callback_data of the `approve` or `reject` button of a request."""
    code = next((c for c, name in ACTIONS.items() if name == action), None)
    if code is None:
        raise ValueError(f"action must be approve or reject, got {action!r}")
    if not re.fullmatch(r"[0-9a-f]{12}", binding.request_id):
        raise ValueError(f"request id must be 12 hex digits, got {binding.request_id!r}")
    return f"{VERSION}.{code}.{binding.request_id}.{_mac(key, binding, code)}"


def parse(data: object) -> Callback:
    """Parse callback data; CallbackError (one line) for anything that is not ours."""
    if not isinstance(data, str) or not data:
        raise CallbackError("malformed callback data: empty")
    m = _DATA_RE.match(data)
    if m is None:
        raise CallbackError(f"malformed callback data ({len(data.encode('utf-8'))} bytes)")
    return Callback(ACTIONS[m.group(1)], m.group(2), m.group(3))


def verify(key: bytes, callback: Callback, binding: Binding) -> None:
    """CallbackError unless the MAC is the one `binding` gives (constant-time compare)."""
    if callback.request_id != binding.request_id:
        raise CallbackError("callback data belongs to another request")
    code = next(c for c, name in ACTIONS.items() if name == callback.action)
    if not hmac.compare_digest(_mac(key, binding, code), callback.mac):
        raise CallbackError("callback data does not verify (forged, or for another PR or head)")


def load_key(
    file_name: str | None,
    env_name: str,
    *,
    env: Mapping[str, str] | None = None,
    config_dir: Path | None = None,
) -> bytes:
    """The HMAC key (telegram.hmac_key_file or its environment variable); ValueError (one
    line, no key material) if absent or shorter than 16 bytes."""
    key, where = read_secret(
        file_name, env_name, "telegram.hmac_key_file", "callback HMAC key", env, config_dir
    )
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(f"telegram: the HMAC key in {where} is shorter than {MIN_KEY_BYTES} bytes")
    return key
