"""Issue, comment and PR bodies that fit GitHub's 65,536-character limit, nothing lost.

A longer body is cut, with a pointer to the full text, which is saved first under the state
directory (`bot-state/overflow/<sha256>.md`, content-addressed: the same text, the same file
and the same cut body, so an idempotent write stays idempotent). The marker always survives.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from capdaemon.filenames import OVERFLOW_DIR
from capdaemon.forge.markers import render_marker, with_marker
from capdaemon.state import atomic_write_text

BODY_LIMIT = 65536  # GitHub refuses longer issue, comment and PR bodies (422)
CHECK_SUMMARY_LIMIT = 65535  # ... and longer check-run output summaries


def overflow_name(text: str) -> str:
    """The file name the full text of an over-long body is saved under."""
    return f"{hashlib.sha256(text.encode('utf-8')).hexdigest()[:32]}.md"


def fit_body(
    body: str, marker: Mapping[str, Any], state_dir: Path | None, *, limit: int = BODY_LIMIT
) -> str:
    """`body` with its marker, cut to `limit` characters with a pointer to the full text.

    The full text is written to `<state_dir>/overflow/` before the cut body is returned; with
    no state directory the notice says the rest was not kept (callers outside the daemon).
    """
    text = with_marker(body, marker)
    if len(text) <= limit:
        return text
    name = overflow_name(body)
    if state_dir is not None:
        path = Path(state_dir) / OVERFLOW_DIR / name
        if not path.exists():
            atomic_write_text(path, body)
        where = f"the full text is in `{Path(state_dir).name}/{OVERFLOW_DIR}/{name}`"
    else:
        where = "the rest was not kept"
    notice = (
        f"\n\n---\n**Cut to fit GitHub's limit**: this text has {len(body):,} characters; "
        f"{where} on the capdaemon host."
    )
    room = limit - len(notice) - len(render_marker(marker)) - 2
    return with_marker(body[:room].rstrip() + notice, marker)
