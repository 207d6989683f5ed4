"""Canonical JSON and audit-entry hashes: the hashing core, kept import-light.

`capdaemon scope-guard` runs before every edit an agent makes, so this module imports only
json and hashlib (no dataclasses, typing, tempfile). `capdaemon.state` and `capdaemon.audit`
re-export these names.
"""

from __future__ import annotations

import hashlib
import json

TYPE_CHECKING = False  # typing costs ~2 ms to import; annotations here are strings anyway
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def canonical_json(obj: Any) -> str:
    """The canonical JSON text used for hashing: sorted keys, no spaces, UTF-8 kept."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def entry_hash(record: Mapping[str, Any]) -> str:
    """sha256 over the canonical JSON of a record without its `hash` field."""
    body = {k: v for k, v in record.items() if k != "hash"}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()
