"""Canonical JSON, audit-entry hashes and UTC timestamps: the hashing core, kept import-light.

`capdaemon scope-guard` runs before every edit an agent makes, so this module imports only
json, hashlib and datetime (no dataclasses, typing, tempfile). `capdaemon.state` and
`capdaemon.audit` re-export these names; import them from there or from here.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

TYPE_CHECKING = False  # typing costs ~2 ms to import; annotations here are strings anyway
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

CLASSIFIER_LOG = "classifier_audit.jsonl"
ACTIONS_LOG = "actions.jsonl"


def canonical_json(obj: Any) -> str:
    """The canonical JSON text used for hashing: sorted keys, no spaces, UTF-8 kept."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def entry_hash(record: Mapping[str, Any]) -> str:
    """sha256 over the canonical JSON of a record without its `hash` field."""
    body = {k: v for k, v in record.items() if k != "hash"}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def utc_iso(dt: datetime) -> str:
    """An aware datetime as `YYYY-MM-DDTHH:MM:SSZ` (microseconds kept when present)."""
    if dt.tzinfo is None:
        raise ValueError("naive datetime in audit entry")
    dt = dt.astimezone(UTC)
    fmt = "%Y-%m-%dT%H:%M:%S.%fZ" if dt.microsecond else "%Y-%m-%dT%H:%M:%SZ"
    return dt.strftime(fmt)
