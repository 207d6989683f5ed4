"""Branch-protection rules shared by the server and the git pre-receive hook (stdlib only).

The hook runs this file directly (``python protection.py`` inside the bare repository), so it
must not import the rest of the package.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

SUCCESSFUL = ("success", "neutral", "skipped")
ZERO = "0" * 40


def ruleset_applies(rs: dict[str, Any], branch: str, default_branch: str) -> bool:
    """Does an active branch ruleset cover ``branch`` (``ref_name`` include/exclude)?"""
    if rs.get("enforcement") != "active" or rs.get("target", "branch") != "branch":
        return False
    ref = f"refs/heads/{branch}"
    cond = (rs.get("conditions") or {}).get("ref_name") or {}

    def hit(patterns: list[str]) -> bool:
        for p in patterns:
            if p == "~ALL" or (p == "~DEFAULT_BRANCH" and branch == default_branch):
                return True
            if fnmatchcase(ref, p if p.startswith("refs/") else f"refs/heads/{p}"):
                return True
        return False

    return hit(cond.get("include") or []) and not hit(cond.get("exclude") or [])


def effective_rule(repo: dict[str, Any], branch: str) -> dict[str, Any] | None:
    """Classic protection of ``branch`` with its active rulesets folded in (stricter wins).

    Rulesets without bypass actors bind admins too (``enforce_admins``); ``required_status_checks``
    adds checks (``integration_id`` pins the App), ``pull_request`` requires PRs and reviews,
    ``non_fast_forward`` and ``deletion`` forbid force pushes and deletion.
    """
    classic = repo["protection"].get(branch)
    rules = [
        r
        for rs in sorted((repo.get("rulesets") or {}).values(), key=lambda x: x["id"])
        if ruleset_applies(rs, branch, repo["default_branch"])
        for r in rs["rules"]
    ]
    if not rules:
        return classic  # type: ignore[no-any-return]
    rule: dict[str, Any] = dict(
        classic
        or {
            "required_status_checks": None,
            "enforce_admins": True,
            "required_pull_request_reviews": None,
            "allow_force_pushes": True,
            "allow_deletions": True,
        }
    )
    rule["enforce_admins"] = True
    for r in rules:
        params = r.get("parameters") or {}
        kind = r.get("type")
        if kind == "non_fast_forward":
            rule["allow_force_pushes"] = False
        elif kind == "deletion":
            rule["allow_deletions"] = False
        elif kind == "pull_request":
            reviews = dict(rule.get("required_pull_request_reviews") or {})
            count = int(params.get("required_approving_review_count") or 0)
            reviews["required_approving_review_count"] = max(
                count, int(reviews.get("required_approving_review_count") or 0)
            )
            rule["required_pull_request_reviews"] = reviews
        elif kind == "required_status_checks":
            rsc = rule.get("required_status_checks") or {"strict": False, "checks": []}
            checks = list(rsc["checks"])
            for c in params.get("required_status_checks") or []:
                if isinstance(c, dict) and isinstance(c.get("context"), str):
                    checks.append({"context": c["context"], "app_id": c.get("integration_id")})
            strict = bool(rsc["strict"] or params.get("strict_required_status_checks_policy"))
            rule["required_status_checks"] = {"strict": strict, "checks": checks}
    return rule


def missing_required_checks(repo: dict[str, Any], branch: str, sha: str) -> list[tuple[str, str]]:
    """Required checks of ``branch`` not satisfied on ``sha``: [(context, "expected"|"failing")].

    A check pinned to an App (``app_id``) is satisfied only by that App's newest run of that
    name; an unpinned one by any App's newest run or by a commit status with that context.
    """
    rule = effective_rule(repo, branch)
    if not rule or not rule.get("required_status_checks"):
        return []
    runs = sorted(
        (r for r in repo["check_runs"].values() if r["head_sha"] == sha),
        key=lambda r: r["id"],
        reverse=True,
    )
    latest_status: dict[str, dict[str, Any]] = {}
    for s in sorted(
        (s for s in repo["statuses"] if s["sha"] == sha), key=lambda s: s["id"], reverse=True
    ):
        latest_status.setdefault(s["context"], s)
    missing = []
    for req in rule["required_status_checks"]["checks"]:
        ctx, app_id = req["context"], req["app_id"]
        cands = [r for r in runs if r["name"] == ctx and (app_id is None or r["app_id"] == app_id)]
        state = None
        if cands:
            latest = cands[0]
            if latest["status"] != "completed":
                state = "pending"
            else:
                state = "ok" if latest["conclusion"] in SUCCESSFUL else "failing"
        if state != "ok" and app_id is None and ctx in latest_status:
            st = latest_status[ctx]["state"]
            state = "ok" if st == "success" else "pending" if st == "pending" else "failing"
        if state != "ok":
            missing.append((ctx, "failing" if state == "failing" else "expected"))
    return missing


def push_errors(
    repo: dict[str, Any],
    updates: list[tuple[str, str, str]],
    is_admin: bool,
    is_ancestor: Callable[[str, str], bool],
) -> list[str]:
    """Why a push of ``(old, new, ref)`` updates must be refused (empty list: allowed)."""
    errors: list[str] = []
    for old, new, ref in updates:
        if not ref.startswith("refs/heads/"):
            continue
        branch = ref.removeprefix("refs/heads/")
        rule = effective_rule(repo, branch)
        if not rule:
            continue
        head = f"GH006: Protected branch update failed for {ref}."
        bypass = is_admin and not rule.get("enforce_admins")
        if new == ZERO:
            if not rule.get("allow_deletions"):
                errors += [head, "Cannot delete this protected branch"]
            continue
        if old != ZERO and not rule.get("allow_force_pushes") and not is_ancestor(old, new):
            errors += [head, "Cannot force-push to this branch"]
            continue
        if bypass:
            continue
        if rule.get("required_pull_request_reviews") is not None:
            errors += [head, "Changes must be made through a pull request."]
            continue
        missing = missing_required_checks(repo, branch, new)
        if missing:
            ctx, why = missing[0]
            errors += [head, f'Required status check "{ctx}" is {why}.']
    return errors


def hook_main() -> int:
    """pre-receive: read ``old new ref`` lines, load the sandbox state, refuse protected updates."""
    git_dir = Path.cwd()
    owner, name = git_dir.parent.name, git_dir.name.removesuffix(".git")
    state_file = git_dir.parents[2] / "state.json"
    try:
        state = json.loads(state_file.read_text(encoding="utf-8"))
        repo = state["repos"][f"{owner}/{name}"]
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: sandbox state unavailable: {exc}", file=sys.stderr)
        return 1
    updates = []
    for line in sys.stdin.read().splitlines():
        parts = line.split()
        if len(parts) == 3:
            updates.append((parts[0], parts[1], parts[2]))

    def is_ancestor(a: str, b: str) -> bool:
        proc = subprocess.run(
            ["git", "merge-base", "--is-ancestor", a, b], capture_output=True, check=False
        )
        return proc.returncode == 0

    errors = push_errors(repo, updates, os.environ.get("SANDBOX_PUSHER_ADMIN") == "1", is_ancestor)
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(hook_main())
