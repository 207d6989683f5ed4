"""The branch protection `capdaemon protect` would apply, written out to set by hand.

For an App with `administration: read` (it reads protection, it cannot write it): each setting
as GitHub's branch-protection page names it, then the same as one API call for a repository
admin. Both come from the one PUT body `protect` sends (forge.writes.protection_body).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote


def _on(value: Any) -> str:
    return "on" if value else "off"


def _source(check: Mapping[str, Any], app_slug: str | None) -> str:
    app_id = check.get("app_id")
    if app_id is None:
        return "any source"
    name = f"the GitHub App {app_slug} " if app_slug else "the GitHub App "
    return f"{name}(App id {app_id}) only"


def by_hand(repo: str, branch: str, body: Mapping[str, Any], app_slug: str | None) -> list[str]:
    """The lines that tell an admin of `repo` how to protect `branch` as `protect` would."""
    rsc = body.get("required_status_checks") or {}
    prs = body.get("required_pull_request_reviews")
    lines = [
        f"to apply by hand: {repo} → Settings → Branches → Add classic branch protection rule"
        f" (or edit the rule of {branch}); set exactly:",
        f"  Branch name pattern: {branch}",
        f"  Require a pull request before merging: {_on(prs is not None)}",
    ]
    if prs is not None:
        count = prs.get("required_approving_review_count", 0)
        lines.append(f"    Require approvals: {_on(count)}; required number of approvals: {count}")
    lines.append(f"  Require status checks to pass before merging: {_on(rsc)}")
    if rsc:
        lines.append(
            f"    Require branches to be up to date before merging: {_on(rsc.get('strict'))}"
        )
        for check in rsc.get("checks") or ():
            lines.append(
                f"    Required status check: {check['context']}, source: {_source(check, app_slug)}"
            )
    restricted = body.get("restrictions") is not None
    lines += [
        f"  Restrict who can push to matching branches: {_on(restricted)}",
        f"  Do not allow bypassing the above settings: {_on(body.get('enforce_admins'))}",
        f"  Allow force pushes: {_on(body.get('allow_force_pushes'))}",
        f"  Allow deletions: {_on(body.get('allow_deletions'))}",
        "  (every other setting: off)",
        "or the same with the API, as a repository admin (the GitHub CLI, one line):",
        f"  echo {shlex.quote(json.dumps(dict(body), sort_keys=True))} | gh api -X PUT"
        f" repos/{repo}/branches/{quote(branch, safe='')}/protection --input -",
    ]
    return lines
