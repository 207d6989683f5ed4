"""Git over smart HTTP: clone, fetch, push with tokens; PR heads follow; protection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .helpers import app_gh, gh, git


def _clone(sb: Any, tmp_path: Path, login: str = "agent-1", repo: str = "acme/widgets") -> Path:
    work = tmp_path / f"clone-{login}"
    git(tmp_path, "clone", "--quiet", sb.git_url(repo, sb.tokens[login]), str(work))
    return work


def test_clone_push_and_open_pr_moves_with_pushes(sandbox: Any, tmp_path: Path) -> None:
    """An agent clones, pushes a branch, opens a PR; a second push moves its head."""
    work = _clone(sandbox, tmp_path)
    assert (work / "README.md").read_text().startswith("# widgets")
    git(work, "checkout", "-q", "-b", "agent/task-1")
    (work / "src" / "feature.py").write_text("def f():\n    return 1\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "Add feature\n\nAgent-Session: tool=x model=y")
    git(work, "push", "-q", "origin", "agent/task-1")
    repo = gh(sandbox, "agent-1").get_repo("acme/widgets")
    pr = repo.create_pull(base="main", head="agent/task-1", title="Add feature", body="")
    first = git(work, "rev-parse", "HEAD").stdout.strip()
    assert pr.head.sha == first
    (work / "src" / "feature.py").write_text("def f():\n    return 2\n")
    git(work, "commit", "-q", "-am", "Change feature")
    git(work, "push", "-q", "origin", "agent/task-1")
    second = git(work, "rev-parse", "HEAD").stdout.strip()
    again = repo.get_pull(pr.number)
    assert again.head.sha == second
    assert [c.sha for c in again.get_commits()] == [first, second]
    assert [(f.filename, f.status) for f in again.get_files()] == [("src/feature.py", "added")]
    git(work, "fetch", "-q", "origin", f"refs/pull/{pr.number}/head:pr-head")
    assert git(work, "rev-parse", "pr-head").stdout.strip() == second


def test_push_needs_a_valid_token_and_write_access(sandbox: Any, tmp_path: Path) -> None:
    """A wrong token's push is refused; mallory (read-only) can fetch but not push."""
    work = _clone(sandbox, tmp_path, login="mallory")
    git(work, "checkout", "-q", "-b", "evil")
    (work / "evil.txt").write_text("x\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "evil")
    push = git(work, "push", "origin", "evil", check=False)
    assert push.returncode != 0
    assert "denied to mallory" in push.stderr
    wrong = sandbox.git_url("acme/widgets", "wrong-token")
    push = git(work, "push", wrong, "evil", check=False)
    assert push.returncode != 0
    assert sandbox.branch_sha("acme/widgets", "evil") is None


def test_force_push_to_protected_branch_is_rejected(sandbox: Any, tmp_path: Path) -> None:
    """With allow_force_pushes false a non-fast-forward push to main fails; fast-forward works."""
    sandbox.set_protection(
        "acme/widgets",
        "main",
        {
            "required_status_checks": None,
            "enforce_admins": False,
            "required_pull_request_reviews": None,
            "restrictions": None,
            "allow_force_pushes": False,
        },
    )
    work = _clone(sandbox, tmp_path)
    before = sandbox.branch_sha("acme/widgets", "main")
    (work / "docs" / "guide.md").write_text("# Guide v2\n")
    git(work, "commit", "-q", "-am", "ff change")
    git(work, "push", "-q", "origin", "main")
    after_ff = sandbox.branch_sha("acme/widgets", "main")
    assert after_ff != before
    git(work, "reset", "-q", "--hard", before)
    (work / "docs" / "guide.md").write_text("# rewritten history\n")
    git(work, "commit", "-q", "-am", "rewrite")
    forced = git(work, "push", "--force", "origin", "main", check=False)
    assert forced.returncode != 0
    assert "Cannot force-push to this branch" in forced.stderr
    assert sandbox.branch_sha("acme/widgets", "main") == after_ff
    deleted = git(work, "push", "origin", ":main", check=False)
    assert deleted.returncode != 0 and sandbox.branch_sha("acme/widgets", "main") == after_ff


def test_pr_only_branch_rejects_direct_pushes(sandbox: Any, tmp_path: Path) -> None:
    """required_pull_request_reviews makes main PR-only for a writer: a direct push is refused."""
    sandbox.set_protection(
        "acme/widgets",
        "main",
        {
            "required_status_checks": None,
            "enforce_admins": True,
            "required_pull_request_reviews": {"required_approving_review_count": 0},
            "restrictions": None,
        },
    )
    work = _clone(sandbox, tmp_path)
    (work / "direct.txt").write_text("x\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "direct")
    push = git(work, "push", "origin", "main", check=False)
    assert push.returncode != 0
    assert "Changes must be made through a pull request." in push.stderr


def test_installation_token_can_push(sandbox: Any, tmp_path: Path) -> None:
    """An installation token works as the basic-auth password (x-access-token:TOKEN@host)."""
    token = sandbox.installation_token(sandbox.installation_id)
    work = tmp_path / "bot"
    git(tmp_path, "clone", "--quiet", sandbox.git_url("acme/capdaemon-bot", token), str(work))
    git(work, "checkout", "-q", "-b", "bot/state")
    (work / "state.json").write_text("{}\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "state")
    git(work, "push", "-q", "origin", "bot/state")
    assert (
        sandbox.branch_sha("acme/capdaemon-bot", "bot/state")
        == git(work, "rev-parse", "HEAD").stdout.strip()
    )


def test_push_to_a_branch_with_required_checks_needs_them(sandbox: Any, tmp_path: Path) -> None:
    """A direct push to main needs the pinned L1.C3 on that very commit; with it, the push lands."""
    sandbox.set_protection(
        "acme/widgets",
        "main",
        {
            "required_status_checks": {
                "strict": False,
                "checks": [{"context": "L1.C3", "app_id": 1001}],
            },
            "enforce_admins": True,
            "required_pull_request_reviews": None,
            "restrictions": None,
        },
    )
    work = _clone(sandbox, tmp_path)
    (work / "direct.txt").write_text("x\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "direct")
    sha = git(work, "rev-parse", "HEAD").stdout.strip()
    refused = git(work, "push", "origin", "main", check=False)
    assert refused.returncode != 0
    assert 'Required status check "L1.C3" is expected.' in refused.stderr
    git(work, "push", "-q", "origin", "HEAD:refs/heads/staging")
    app_gh(sandbox).get_repo("acme/widgets").create_check_run(
        "L1.C3", head_sha=sha, conclusion="success"
    )
    git(work, "push", "-q", "origin", "main")
    assert sandbox.branch_sha("acme/widgets", "main") == sha
