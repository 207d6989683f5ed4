"""What capdaemon's GitHub App needs — its repository permissions and webhook events — in one
place: `doctor` checks the installation against it, and docs/github-app.md (its table, the
registration link and docs/github-app-manifest.json) is written from it (a test compares)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

# permission → (level, why capdaemon needs it)
APP_PERMISSION_REASONS: dict[str, tuple[str, str]] = {
    "checks": ("write", "publishes the L1.C3 check run on every PR head"),
    "contents": ("write", "merges PRs, reads diffs and files, opens revert branches"),
    "issues": ("write", "opens ballots, decision, review and incident issues; reads votes"),
    "pull_requests": ("write", "reads PRs and their commits, merges, closes, comments"),
    "metadata": ("read", "every App has it: repository names, collaborators' permissions"),
    "statuses": ("read", "reads commit statuses (they never satisfy a required check)"),
    "administration": ("read", "reads branch protection and rulesets"),
}
APP_PERMISSIONS: dict[str, str] = {k: level for k, (level, _) in APP_PERMISSION_REASONS.items()}
# Webhook events: none. capdaemon polls on its tick; it runs no web server for GitHub to call.
APP_EVENTS: tuple[str, ...] = ()
HOMEPAGE = "https://example.com/capdaemon"  # GitHub requires one; put your deployment repo's
DESCRIPTION = "Classifies AI agents' pull requests, gates and merges them, keeps an audit log."


def manifest(name: str = "capdaemon") -> dict[str, Any]:
    """The App manifest (GitHub's "create an App from a manifest" flow): private, no webhook."""
    return {
        "name": name,
        "url": HOMEPAGE,
        "description": DESCRIPTION,
        "public": False,
        "hook_attributes": {"url": HOMEPAGE, "active": False},
        "default_events": list(APP_EVENTS),
        "default_permissions": dict(APP_PERMISSIONS),
    }


def manifest_json(name: str = "capdaemon") -> str:
    """The manifest as the file docs/github-app-manifest.json holds it."""
    return json.dumps(manifest(name), indent=2) + "\n"


def registration_url(org: str | None = None, host: str = "https://github.com") -> str:
    """A link that opens GitHub's "Register new GitHub App" page with every setting filled in
    (`org`: under an organisation; None: under your own account)."""
    where = f"/organizations/{org}/settings/apps/new" if org else "/settings/apps/new"
    params = [
        ("name", "capdaemon"),
        ("description", DESCRIPTION),
        ("url", HOMEPAGE),
        ("public", "false"),
        ("webhook_active", "false"),
        *APP_PERMISSIONS.items(),
        *(("events[]", e) for e in APP_EVENTS),
    ]
    return f"{host}{where}?{urlencode(params)}"
