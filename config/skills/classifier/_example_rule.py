"""An example user rule, OFF: files whose name starts with `_` are not loaded.

To turn it on, copy it to a name without the leading underscore (e.g. no_todo_prod.py) in this
folder. User rules are loaded after the built-in rules, in name order, and appear in the audit
log as `user.<file name>`. A rule receives the read-only PRSnapshot and returns (quadrant or None
to abstain, short reason). The engine takes the maximum over all votes, so a rule can only raise
a PR's quadrant. A rule that raises, returns anything else, or runs past
`user_rule_timeout_seconds` (classifier.yml) makes the PR quadrant D.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from capdaemon.model import PRSnapshot

MARKER = "TODO(prod)"


def rule(snapshot: PRSnapshot) -> tuple[str | None, str]:
    """Vote B when an added line contains the marker; else abstain."""
    for f in snapshot.files:
        for line in (f.patch or "").splitlines():
            if line.startswith("+") and MARKER in line:
                return "B", f"{f.path} adds a {MARKER} marker"
    return None, f"no {MARKER} marker added"
