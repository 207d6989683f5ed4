"""Merging through the API: stale heads, real merge commits, conflicts and branch protection."""

from __future__ import annotations

from typing import Any

import github
import pytest

from .helpers import app_gh, gh, settled_pull

PROTECTION = {
    "required_status_checks": {"strict": False, "checks": [{"context": "L1.C3", "app_id": 1001}]},
    "enforce_admins": True,
    "required_pull_request_reviews": None,
    "restrictions": None,
    "allow_force_pushes": False,
}


def _pr(sb: Any, branch: str = "feat", files: dict[str, Any] | None = None) -> int:
    sb.commit_files(
        "acme/widgets",
        branch,
        files or {"src/new.py": "x = 1\n"},
        "add new",
        author="agent-1",
        parent_branch="main",
    )
    return sb.open_pr("acme/widgets", branch, "main", f"PR from {branch}", "", "agent-1")


def test_merge_with_a_stale_sha_is_a_409(sandbox: Any) -> None:
    """If the head moved after the decision, merging the old sha fails with GitHub's 409 message."""
    number = _pr(sandbox)
    pr = app_gh(sandbox).get_repo("acme/widgets").get_pull(number)
    old = pr.head.sha
    sandbox.commit_files(
        "acme/widgets", "feat", {"src/new.py": "x = 2\n"}, "sneaky", author="agent-1"
    )
    with pytest.raises(github.GithubException) as exc:
        pr.merge(sha=old, merge_method="squash")
    assert exc.value.status == 409
    assert exc.value.data["message"] == "Head branch was modified. Review and try the merge again."
    assert app_gh(sandbox).get_repo("acme/widgets").get_pull(number).merged is False


@pytest.mark.parametrize("method", ["merge", "squash", "rebase"])
def test_merge_methods_make_real_commits(sandbox: Any, method: str) -> None:
    """Each merge method moves main to a new commit with the PR's content and the right parents."""
    sandbox.commit_files("acme/widgets", "main", {"docs/other.md": "other\n"}, "main moves on")
    number = _pr(sandbox)
    base_before = sandbox.branch_sha("acme/widgets", "main")
    repo = app_gh(sandbox).get_repo("acme/widgets")
    pr = repo.get_pull(number)
    status = pr.merge(sha=pr.head.sha, merge_method=method)
    assert status.merged and status.sha == sandbox.branch_sha("acme/widgets", "main")
    commit = repo.get_commit(status.sha)
    parents = [p.sha for p in commit.parents]
    if method == "merge":
        assert parents == [base_before, pr.head.sha]
    else:
        assert parents == [base_before]
    assert repo.get_contents("src/new.py", ref="main").decoded_content == b"x = 1\n"
    assert repo.get_contents("docs/other.md", ref="main").decoded_content == b"other\n"
    merged = repo.get_pull(number)
    assert (merged.state, merged.merged, merged.merge_commit_sha) == ("closed", True, status.sha)
    assert merged.merged_by.login == "capdaemon[bot]"
    events = [e.event for e in repo.get_issue(number).get_events()]
    assert events == ["merged", "closed"]


def test_conflicting_pr_is_dirty_and_cannot_merge(sandbox: Any) -> None:
    """Two edits of the same line: mergeable is False, mergeable_state dirty, merge is a 405."""
    number = _pr(sandbox, files={"README.md": "agent version\n"})
    sandbox.commit_files("acme/widgets", "main", {"README.md": "owner version\n"}, "owner edit")
    pr = settled_pull(gh(sandbox, "alice").get_repo("acme/widgets"), number)
    assert (pr.mergeable, pr.mergeable_state) == (False, "dirty")
    with pytest.raises(github.GithubException) as exc:
        pr.merge(sha=pr.head.sha)
    assert exc.value.status == 405
    assert exc.value.data["message"] == "Pull Request is not mergeable"


def test_protection_requires_the_pinned_apps_check(sandbox: Any) -> None:
    """Without L1.C3 from capdaemon the merge is a 405; evil-app's check does not count."""
    sandbox.set_protection("acme/widgets", "main", PROTECTION)
    number = _pr(sandbox)
    repo = app_gh(sandbox).get_repo("acme/widgets")
    pr = settled_pull(repo, number)
    assert pr.mergeable_state == "blocked"
    with pytest.raises(github.GithubException) as exc:
        pr.merge(sha=pr.head.sha)
    assert exc.value.status == 405
    assert exc.value.data["message"] == 'Required status check "L1.C3" is expected.'

    evil = app_gh(sandbox, evil=True).get_repo("acme/widgets")
    evil.create_check_run("L1.C3", head_sha=pr.head.sha, conclusion="success")
    with pytest.raises(github.GithubException) as exc:
        repo.get_pull(number).merge(sha=pr.head.sha)
    assert exc.value.status == 405, "a check of the same name from another App must not satisfy it"

    repo.create_check_run("L1.C3", head_sha=pr.head.sha, conclusion="failure")
    with pytest.raises(github.GithubException) as exc:
        repo.get_pull(number).merge(sha=pr.head.sha)
    assert exc.value.data["message"] == 'Required status check "L1.C3" is failing.'

    repo.create_check_run("L1.C3", head_sha=pr.head.sha, conclusion="success")
    assert repo.get_pull(number).mergeable_state == "clean"
    assert repo.get_pull(number).merge(sha=pr.head.sha, merge_method="squash").merged


def test_commit_status_satisfies_only_unpinned_checks(sandbox: Any) -> None:
    """A commit status 'ci' counts for a check with app_id null but not for one pinned to an App."""
    body = dict(
        PROTECTION,
        required_status_checks={
            "strict": False,
            "checks": [{"context": "ci", "app_id": None}, {"context": "L1.C3", "app_id": 1001}],
        },
    )
    sandbox.set_protection("acme/widgets", "main", body)
    number = _pr(sandbox)
    bot = app_gh(sandbox).get_repo("acme/widgets")
    head = bot.get_pull(number).head.sha
    bot.get_commit(head).create_status("success", context="L1.C3")
    bot.get_commit(head).create_status("success", context="ci")
    with pytest.raises(github.GithubException) as exc:
        bot.get_pull(number).merge(sha=head)
    assert exc.value.data["message"] == 'Required status check "L1.C3" is expected.'
    bot.create_check_run("L1.C3", head_sha=head, conclusion="success")
    assert bot.get_pull(number).merge(sha=head).merged


def test_admin_bypasses_protection_only_without_enforce_admins(sandbox: Any) -> None:
    """alice (admin) can merge without the check when enforce_admins is off, not when it is on."""
    sandbox.set_protection("acme/widgets", "main", PROTECTION)
    number = _pr(sandbox)
    pr = gh(sandbox, "alice").get_repo("acme/widgets").get_pull(number)
    with pytest.raises(github.GithubException):
        pr.merge(sha=pr.head.sha)
    sandbox.set_protection("acme/widgets", "main", dict(PROTECTION, enforce_admins=False))
    assert pr.merge(sha=pr.head.sha).merged


def test_protection_round_trips_through_pygithub(sandbox: Any) -> None:
    """edit_protection with a pinned check reads back with app_id and the flags."""
    branch = gh(sandbox, "alice").get_repo("acme/widgets").get_branch("main")
    branch.edit_protection(
        checks=[("L1.C3", 1001)],
        enforce_admins=True,
        allow_force_pushes=False,
        required_approving_review_count=0,
    )
    prot = branch.get_protection()
    raw = prot.raw_data
    assert raw["required_status_checks"]["checks"] == [{"context": "L1.C3", "app_id": 1001}]
    assert raw["allow_force_pushes"] == {"enabled": False}
    assert prot.enforce_admins is True
    assert prot.required_pull_request_reviews.required_approving_review_count == 0
    branch.remove_protection()
    with pytest.raises(github.GithubException) as exc:
        branch.get_protection()
    assert exc.value.status == 404


def test_only_admins_manage_protection_and_writers_merge(sandbox: Any) -> None:
    """agent-1 (write) cannot read protection; mallory (read) cannot merge."""
    with pytest.raises(github.GithubException) as exc:
        gh(sandbox, "agent-1").get_repo("acme/widgets").get_branch("main").get_protection()
    assert exc.value.status == 403
    number = _pr(sandbox)
    pr = gh(sandbox, "mallory").get_repo("acme/widgets").get_pull(number)
    with pytest.raises(github.GithubException) as exc:
        pr.merge(sha=pr.head.sha)
    assert exc.value.status == 403


def test_revert_commit_through_the_git_data_api(sandbox: Any) -> None:
    """A revert built with trees/commits/refs restores the parent's tree on main."""
    number = _pr(sandbox, files={"src/new.py": "x = 1\n", "README.md": None})
    repo = app_gh(sandbox).get_repo("acme/widgets")
    merged = repo.get_pull(number).merge(merge_method="squash").sha
    bad = repo.get_git_commit(merged)
    parent = repo.get_git_commit(bad.parents[0].sha)
    revert = repo.create_git_commit(f'Revert "{bad.message.splitlines()[0]}"', parent.tree, [bad])
    repo.get_git_ref("heads/main").edit(revert.sha)
    main = repo.get_branch("main").commit
    assert main.sha == revert.sha
    assert repo.get_git_tree(main.sha, recursive=True).sha == parent.tree.sha
    assert "README.md" in [e.path for e in repo.get_git_tree("main").tree]


def test_contents_api_commits_files_and_respects_protection(sandbox: Any) -> None:
    """create_file/update_file make commits on a branch; a PR-only main refuses them."""
    repo = gh(sandbox, "agent-1").get_repo("acme/widgets")
    created = repo.create_file("notes/todo.md", "add todo", "- one\n", branch="main")
    assert created["commit"].sha == sandbox.branch_sha("acme/widgets", "main")
    current = repo.get_contents("notes/todo.md")
    repo.update_file("notes/todo.md", "update todo", "- two\n", current.sha, branch="main")
    assert repo.get_contents("notes/todo.md").decoded_content == b"- two\n"
    with pytest.raises(github.GithubException) as exc:
        repo.update_file("notes/todo.md", "stale", "- three\n", current.sha, branch="main")
    assert exc.value.status == 409
    sandbox.set_protection(
        "acme/widgets",
        "main",
        dict(PROTECTION, required_pull_request_reviews={"required_approving_review_count": 0}),
    )
    before = sandbox.branch_sha("acme/widgets", "main")
    with pytest.raises(github.GithubException) as exc:
        repo.create_file("notes/other.md", "direct", "x\n", branch="main")
    assert exc.value.status == 422
    assert sandbox.branch_sha("acme/widgets", "main") == before
