"""User rule: an added line under src/ containing "TODO(prod)" needs a critical look (at least B).

User rules live in config/skills/classifier/*.py and are loaded after the built-ins, in name
order; they appear in the audit log as `user.<file name>`. A rule receives the read-only
PRSnapshot and returns (quadrant or None to abstain, short reason). The engine takes the
maximum over all votes, so a rule can only raise a PR's quadrant. A rule that raises, returns
anything else, or runs past `user_rule_timeout_seconds` makes the PR quadrant D.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from capdaemon.model import PRSnapshot

MARKER = "TODO(prod)"


def rule(snapshot: PRSnapshot) -> tuple[str | None, str]:
    """Vote B when an added line in a file under src/ contains the marker; else abstain."""
    for f in snapshot.files:
        if not f.path.startswith("src/") or not f.patch:
            continue
        for line in f.patch.splitlines():
            if line.startswith("+") and MARKER in line:
                return "B", f"{f.path} adds a {MARKER} marker"
    return None, f"no {MARKER} marker added under src/"
