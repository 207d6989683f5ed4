"""Where the sandbox behaves like GitHub and once did not: each test fails on the old sandbox."""

from __future__ import annotations

import threading
import time
from typing import Any

import github
import pytest
import requests

from .helpers import app_gh, gh

REPO = "acme/widgets"
CHECK_RULESET = {
    "name": "main needs L1.C3",
    "target": "branch",
    "enforcement": "active",
    "conditions": {"ref_name": {"include": ["~DEFAULT_BRANCH"], "exclude": []}},
    "rules": [
        {"type": "non_fast_forward"},
        {"type": "deletion"},
        {
            "type": "required_status_checks",
            "parameters": {
                "strict_required_status_checks_policy": False,
                "required_status_checks": [{"context": "L1.C3", "integration_id": 1001}],
            },
        },
    ],
}


def _get(sb: Any, path: str, login: str = "alice", **params: Any) -> requests.Response:
    headers = {"Authorization": f"token {sb.tokens[login]}"}
    return requests.get(f"{sb.base_url}{path}", headers=headers, params=params, timeout=10)


def _post(sb: Any, path: str, body: Any, login: str = "alice") -> requests.Response:
    headers = {"Authorization": f"token {sb.tokens[login]}"}
    return requests.post(f"{sb.base_url}{path}", headers=headers, json=body, timeout=10)


def _pr(sb: Any, branch: str = "feat", files: dict[str, str] | None = None) -> int:
    sb.commit_files(
        REPO, branch, files or {"src/new.py": "x = 1\n"}, "add", "agent-1", parent_branch="main"
    )
    return int(sb.open_pr(REPO, branch, "main", f"PR {branch}", "", "agent-1"))


def test_collaborator_list_carries_permissions_and_role_names(sandbox: Any) -> None:
    """1: GET collaborators?affiliation=all is 200 with permissions and role_name (was 404)."""
    r = _get(sandbox, f"/repos/{REPO}/collaborators", affiliation="all")
    assert r.status_code == 200
    people = {c["login"]: c for c in r.json()}
    assert people["agent-1"]["role_name"] == "write"
    assert people["agent-1"]["permissions"]["push"] is True
    assert people["agent-1"]["permissions"]["admin"] is False
    assert people["alice"]["role_name"] == "admin"  # an org admin
    assert people["bob"]["permissions"]["admin"] is True
    assert "mallory" not in people
    pushers = _get(sandbox, f"/repos/{REPO}/collaborators", permission="admin").json()
    assert {c["login"] for c in pushers} == {"alice", "bob"}
    denied = _get(sandbox, f"/repos/{REPO}/collaborators", login="mallory")
    assert denied.status_code == 403  # listing needs push access, like GitHub


def test_an_authenticated_404_is_counted_with_rate_headers(sandbox: Any) -> None:
    """2: a 404 spends a request and says so in X-RateLimit-* (was free, without headers)."""
    first = _get(sandbox, f"/repos/{REPO}/contents/.capdaemon.yml")
    assert first.status_code == 404
    used = int(first.headers["X-RateLimit-Used"])
    second = _get(sandbox, f"/repos/{REPO}/branches/main/protection")
    assert second.status_code == 404
    assert int(second.headers["X-RateLimit-Used"]) == used + 1
    assert "ETag" not in second.headers  # never a free 304 for a missing thing
    assert sandbox.counters()["total"]["counted"] == 2


def test_mergeable_is_null_until_computed_after_open_and_base_moves(sandbox: Any) -> None:
    """3: a new PR, and one whose base moved, read mergeable null first (was computed at once)."""
    n = _pr(sandbox)
    pull = f"/repos/{REPO}/pulls/{n}"
    assert (_get(sandbox, pull).json()["mergeable"], _get(sandbox, pull).json()["mergeable"]) == (
        None,
        True,
    )
    sandbox.commit_files(REPO, "main", {"docs/x.md": "moved\n"}, "move main")
    body = _get(sandbox, pull).json()
    assert (body["mergeable"], body["mergeable_state"]) == (None, "unknown")
    assert _get(sandbox, pull).json()["mergeable_state"] == "clean"
    sandbox.set_fidelity(mergeable_reads=0, mergeable_seconds=30)
    sandbox.commit_files(REPO, "main", {"docs/y.md": "moved again\n"}, "move main")
    assert _get(sandbox, pull).json()["mergeable"] is None
    sandbox.advance_clock(31)
    assert _get(sandbox, pull).json()["mergeable"] is True


def test_bodies_and_fields_over_githubs_limits_are_refused(sandbox: Any) -> None:
    """4: a 65,537-character issue or comment body is a 422 naming the field (was accepted)."""
    repo = gh(sandbox, "alice").get_repo(REPO)
    with pytest.raises(github.GithubException) as exc:
        repo.create_issue("Too long", body="x" * 65537)
    assert exc.value.status == 422
    assert exc.value.data["errors"][0]["message"] == (
        "body is too long (maximum is 65536 characters)"
    )
    issue = repo.create_issue("Just fits", body="x" * 65536)
    with pytest.raises(github.GithubException) as exc:
        issue.create_comment("y" * 65537)
    assert exc.value.status == 422 and exc.value.data["errors"][0]["field"] == "body"
    assert [i.title for i in repo.get_issues()] == ["Just fits"]  # nothing half-created
    r = _post(
        sandbox,
        f"/repos/{REPO}/statuses/{sandbox.branch_sha(REPO, 'main')}",
        {"state": "success", "context": "ci", "description": "d" * 141},
    )
    assert r.status_code == 422


def test_link_urls_name_the_repository_by_id_and_resolve(sandbox: Any) -> None:
    """5: Link URLs use /repositories/{id}/... like GitHub, and those routes work (were 404)."""
    with sandbox.backend.store.batch():
        for i in range(5):
            sandbox.backend.create_issue(REPO, f"issue {i}", None, "agent-1")
    first = _get(sandbox, f"/repos/{REPO}/issues", per_page=2)
    repo_id = sandbox.backend.repo(REPO)["id"]
    nxt = first.links["next"]["url"]
    assert nxt.startswith(f"{sandbox.base_url}/repositories/{repo_id}/issues?")
    page2 = requests.get(nxt, headers={"Authorization": f"token {sandbox.tokens['alice']}"})
    assert page2.status_code == 200
    assert [i["title"] for i in page2.json()] == ["issue 2", "issue 1"]
    titles = [i.title for i in gh(sandbox, "alice", per_page=2).get_repo(REPO).get_issues()]
    assert titles == [f"issue {i}" for i in range(4, -1, -1)]  # PyGithub follows them


def test_rulesets_are_listed_read_per_branch_and_enforced(sandbox: Any) -> None:
    """6: a ruleset requiring L1.C3 shows in /rules/branches and blocks merges (was 404)."""
    r = _post(sandbox, f"/repos/{REPO}/rulesets", CHECK_RULESET)
    assert r.status_code == 201
    rs_id = r.json()["id"]
    assert [x["id"] for x in _get(sandbox, f"/repos/{REPO}/rulesets").json()] == [rs_id]
    rules = _get(sandbox, f"/repos/{REPO}/rules/branches/main").json()
    assert {x["type"] for x in rules} == {"non_fast_forward", "deletion", "required_status_checks"}
    assert all(x["ruleset_id"] == rs_id for x in rules)
    assert _get(sandbox, f"/repos/{REPO}/rules/branches/other").json() == []
    n = _pr(sandbox)
    repo = app_gh(sandbox).get_repo(REPO)
    pr = repo.get_pull(n)
    with pytest.raises(github.GithubException) as exc:
        pr.merge(sha=pr.head.sha)
    assert exc.value.status == 405
    assert exc.value.data["message"] == 'Required status check "L1.C3" is expected.'
    with pytest.raises(github.GithubException) as exc:  # a ruleset binds admins too
        gh(sandbox, "alice").get_repo(REPO).get_git_ref("heads/main").delete()
    assert exc.value.status == 422
    repo.create_check_run("L1.C3", head_sha=pr.head.sha, conclusion="success")
    assert repo.get_pull(n).merge(sha=pr.head.sha).merged


def test_a_branch_under_a_ruleset_only_says_protected(sandbox: Any) -> None:
    """6: like GitHub, the branch object says `protected` when only a ruleset applies, and the
    classic protection document is still 404 (was: `protected` false under a ruleset)."""
    assert _get(sandbox, f"/repos/{REPO}/branches/main").json()["protected"] is False
    assert _post(sandbox, f"/repos/{REPO}/rulesets", CHECK_RULESET).status_code == 201
    assert _get(sandbox, f"/repos/{REPO}/branches/main").json()["protected"] is True
    listed = {b["name"]: b["protected"] for b in _get(sandbox, f"/repos/{REPO}/branches").json()}
    assert listed["main"] is True
    assert _get(sandbox, f"/repos/{REPO}/branches/main/protection").status_code == 404


def test_secondary_limits_refuse_with_retry_after(sandbox: Any) -> None:
    """7: content creation and per-endpoint points are limited, 403 + Retry-After (were not)."""
    repo = gh(sandbox, "alice").get_repo(REPO)
    sandbox.set_fidelity(content_per_minute=3)
    for i in range(3):
        repo.create_issue(f"issue {i}")
    with pytest.raises(github.GithubException) as exc:
        repo.create_issue("one too many")
    assert exc.value.status == 403
    assert "secondary rate limit" in exc.value.data["message"]
    assert 1 <= int(exc.value.headers["retry-after"]) <= 60
    sandbox.advance_clock(61)
    repo.create_issue("after the minute")
    sandbox.set_fidelity(points_per_minute=4)
    assert all(_get(sandbox, f"/repos/{REPO}/labels").status_code == 200 for _ in range(4))
    refused = _get(sandbox, f"/repos/{REPO}/labels")
    assert refused.status_code == 403 and "Retry-After" in refused.headers
    assert _get(sandbox, f"/repos/{REPO}").status_code == 200  # another endpoint: its own points


def test_concurrent_requests_over_the_limit_are_refused() -> None:
    """7: more requests in flight than allowed are refused; finished ones free their slot."""
    from ghsandbox.fidelity import FIDELITY_DEFAULTS, SecondaryLimits

    cfg = {k: float(v) for k, v in FIDELITY_DEFAULTS.items()} | {"max_concurrent": 2.0}
    limits = SecondaryLimits()
    assert limits.enter("user:a", cfg) is None and limits.enter("user:a", cfg) is None
    refusal = limits.enter("user:a", cfg)
    assert refusal is not None and refusal.reason == "concurrent"
    assert limits.enter("user:b", cfg) is None  # per identity
    limits.exit("user:a")
    assert limits.enter("user:a", cfg) is None


def test_requests_are_served_while_the_state_file_is_being_written(sandbox: Any) -> None:
    """8: a slow disk write does not hold the request lock (it used to: every request waited)."""
    store = sandbox.backend.store
    repo = gh(sandbox, "alice").get_repo(REPO)
    with store._io:  # the disk is "busy": the writer thread is stuck in its write
        repo.create_issue("written while the disk is busy")
        time.sleep(0.2)  # the writer has taken its snapshot and waits for the disk
        done = threading.Event()

        def read() -> None:
            assert [i.title for i in repo.get_issues()] == ["written while the disk is busy"]
            done.set()

        t = threading.Thread(target=read)
        t.start()
        assert done.wait(5), "a read waited for the disk write"
        t.join()
    store.flush()
    assert "written while the disk is busy" in store.file.read_text()


def test_a_fault_can_target_one_page_of_a_list(sandbox: Any) -> None:
    """9: a fault matching ?page=2 hits page 2 only (faults matched the path only)."""
    with sandbox.backend.store.batch():
        for i in range(5):
            sandbox.backend.create_issue(REPO, f"issue {i}", None, "agent-1")
    sandbox.faults("GET", r"/issues[?].*\bpage=2\b", status=502, count=5)
    assert _get(sandbox, f"/repos/{REPO}/issues", per_page=2).status_code == 200
    assert _get(sandbox, f"/repos/{REPO}/issues", per_page=2, page=3).status_code == 200
    assert _get(sandbox, f"/repos/{REPO}/issues", per_page=2, page=2).status_code == 502
    assert _get(sandbox, f"/repos/{REPO}/issues", per_page=2, page=12).status_code == 200
