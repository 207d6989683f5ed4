"""The hot-path caches never go stale (pushes, merges, ref updates, reactions); keep-alive."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests

from .helpers import gh, git

REPO = "acme/widgets"


def _get(sb: Any, path: str, etag: str | None = None, login: str = "alice") -> requests.Response:
    headers = {"Authorization": f"token {sb.tokens[login]}"}
    if etag:
        headers["If-None-Match"] = etag
    return requests.get(f"{sb.base_url}{path}", headers=headers, timeout=10)


def _pr(sb: Any, branch: str, files: dict[str, str]) -> int:
    sb.commit_files(
        REPO, branch, files, f"work on {branch}", author="agent-1", parent_branch="main"
    )
    return int(sb.open_pr(REPO, branch, "main", branch, "", "agent-1"))


def test_a_push_over_http_moves_head_mergeable_and_etag(sandbox: Any, tmp_path: Path) -> None:
    """After a git push (behind the ref table's back) GET pull shows the new head and state."""
    n = _pr(sandbox, "agent/push", {"src/widgets/core.py": "def add(a, b):\n    return b + a\n"})
    assert _get(sandbox, f"/repos/{REPO}/pulls/{n}").json()["mergeable"] is None  # computing
    first = _get(sandbox, f"/repos/{REPO}/pulls/{n}")
    assert first.json()["mergeable"] is True
    assert _get(sandbox, f"/repos/{REPO}/pulls/{n}", first.headers["ETag"]).status_code == 304
    sandbox.commit_files(REPO, "main", {"src/widgets/core.py": "def add(a, b):\n    return a+b\n"})
    work = tmp_path / "clone"
    git(tmp_path, "clone", "-q", sandbox.git_url(REPO, sandbox.tokens["agent-1"]), str(work))
    git(work, "checkout", "-q", "agent/push")
    (work / "src" / "widgets" / "core.py").write_text("def add(a, b):\n    return a - -b\n")
    git(work, "commit", "-q", "-am", "conflicting change")
    git(work, "push", "-q", "origin", "agent/push")
    pushed = git(work, "rev-parse", "HEAD").stdout.strip()
    moved = _get(sandbox, f"/repos/{REPO}/pulls/{n}", first.headers["ETag"])
    assert moved.status_code == 200 and moved.json()["mergeable_state"] == "unknown"
    again = _get(sandbox, f"/repos/{REPO}/pulls/{n}", first.headers["ETag"])
    assert again.status_code == 200
    body = again.json()
    assert body["head"]["sha"] == pushed
    assert body["base"]["sha"] == sandbox.branch_sha(REPO, "main")
    assert (body["mergeable"], body["mergeable_state"]) == (False, "dirty")
    assert body["commits"] == 2
    assert again.headers["ETag"] != first.headers["ETag"]
    cmp = _get(sandbox, f"/repos/{REPO}/compare/main...agent/push").json()
    assert cmp["commits"][-1]["sha"] == pushed
    assert cmp["status"] == "diverged"


def test_a_merge_moves_base_and_recomputes_other_prs(sandbox: Any) -> None:
    """Merging one PR moves main; a conflicting PR that was clean becomes dirty."""
    a = _pr(sandbox, "agent/a", {"docs/guide.md": "# Guide\n\nVersion A.\n"})
    b = _pr(sandbox, "agent/b", {"docs/guide.md": "# Guide\n\nVersion B.\n"})
    c = _pr(sandbox, "agent/c", {"docs/other.md": "unrelated\n"})
    for n in (a, b, c):  # the first read after opening: GitHub is still computing
        assert _get(sandbox, f"/repos/{REPO}/pulls/{n}").json()["mergeable_state"] == "unknown"
    before = {n: _get(sandbox, f"/repos/{REPO}/pulls/{n}") for n in (a, b, c)}
    assert all(r.json()["mergeable_state"] == "clean" for r in before.values())
    old_main = sandbox.branch_sha(REPO, "main")
    pr = gh(sandbox, "alice").get_repo(REPO).get_pull(a)
    merged = pr.merge(sha=pr.head.sha, merge_method="merge")
    assert merged.merged
    new_main = sandbox.branch_sha(REPO, "main")
    assert new_main == merged.sha != old_main
    for n in (b, c):  # the base moved: computing again
        assert _get(sandbox, f"/repos/{REPO}/pulls/{n}").json()["mergeable"] is None
    after_b = _get(sandbox, f"/repos/{REPO}/pulls/{b}", before[b].headers["ETag"])
    assert after_b.status_code == 200
    assert after_b.json()["base"]["sha"] == new_main
    assert (after_b.json()["mergeable"], after_b.json()["mergeable_state"]) == (False, "dirty")
    after_c = _get(sandbox, f"/repos/{REPO}/pulls/{c}", before[c].headers["ETag"])
    assert after_c.status_code == 200
    assert after_c.json()["base"]["sha"] == new_main
    assert after_c.json()["mergeable"] is True
    branch = _get(sandbox, f"/repos/{REPO}/branches/main").json()
    assert branch["commit"]["sha"] == new_main


def test_ref_updates_through_the_api_are_seen(sandbox: Any) -> None:
    """PATCH/DELETE git/refs and a new commit on the PR branch show up in reads at once."""
    n = _pr(sandbox, "agent/refs", {"a.txt": "1\n"})
    second = sandbox.commit_files(REPO, "agent/refs", {"a.txt": "2\n"}, "second")
    first = _get(sandbox, f"/repos/{REPO}/pulls/{n}").json()
    assert first["head"]["sha"] == second
    parent = _get(sandbox, f"/repos/{REPO}/commits/{second}").json()["parents"][0]["sha"]
    auth = {"Authorization": f"token {sandbox.tokens['alice']}"}
    r = requests.patch(
        f"{sandbox.base_url}/repos/{REPO}/git/refs/heads/agent/refs",
        json={"sha": parent, "force": True},
        headers=auth,
        timeout=10,
    )
    assert r.status_code == 200, r.text
    assert _get(sandbox, f"/repos/{REPO}/pulls/{n}").json()["head"]["sha"] == parent
    ref = _get(sandbox, f"/repos/{REPO}/git/ref/heads/agent/refs").json()
    assert ref["object"]["sha"] == parent
    r = requests.post(
        f"{sandbox.base_url}/repos/{REPO}/git/refs",
        json={"ref": "refs/heads/copy", "sha": second},
        headers=auth,
        timeout=10,
    )
    assert r.status_code == 201, r.text
    assert _get(sandbox, f"/repos/{REPO}/branches/copy").json()["commit"]["sha"] == second
    r = requests.delete(
        f"{sandbox.base_url}/repos/{REPO}/git/refs/heads/copy", headers=auth, timeout=10
    )
    assert r.status_code == 204
    assert _get(sandbox, f"/repos/{REPO}/branches/copy").status_code == 404
    assert sandbox.branch_sha(REPO, "copy") is None


def test_reactions_comments_and_labels_change_etags(sandbox: Any) -> None:
    """A new reaction changes the reactions list's and the issue's ETags; so do comments."""
    n = _pr(sandbox, "agent/react", {"r.txt": "r\n"})
    paths = [
        f"/repos/{REPO}/issues/{n}/reactions",
        f"/repos/{REPO}/issues/{n}",
        f"/repos/{REPO}/issues?per_page=100",
        f"/repos/{REPO}/issues/{n}/comments",
        f"/repos/{REPO}/pulls?per_page=100",
    ]
    etags = {p: _get(sandbox, p).headers["ETag"] for p in paths}
    assert all(_get(sandbox, p, etags[p]).status_code == 304 for p in paths)
    issue = gh(sandbox, "bob").get_repo(REPO).get_issue(n)
    issue.create_reaction("+1")
    for p in paths[:3]:
        r = _get(sandbox, p, etags[p])
        assert r.status_code == 200, p
        etags[p] = r.headers["ETag"]
    assert [x["content"] for x in _get(sandbox, paths[0]).json()] == ["+1"]
    issue.create_comment("/approve A")
    assert _get(sandbox, paths[3], etags[paths[3]]).status_code == 200
    issue.add_to_labels("do-not-merge")
    assert _get(sandbox, paths[4], etags[paths[4]]).status_code == 200


def test_check_runs_for_a_ref_follow_new_runs(sandbox: Any) -> None:
    """check-runs for a sha: 304 while nothing changes, 200 once a run is added."""
    n = _pr(sandbox, "agent/checks", {"c.txt": "c\n"})
    head = _get(sandbox, f"/repos/{REPO}/pulls/{n}").json()["head"]["sha"]
    token = sandbox.installation_token(sandbox.installation_id)
    auth = {"Authorization": f"token {token}"}
    url = f"{sandbox.base_url}/repos/{REPO}/commits/{head}/check-runs"
    first = requests.get(url, headers=auth, timeout=10)
    assert first.json()["total_count"] == 0
    etag = first.headers["ETag"]
    assert requests.get(url, headers={**auth, "If-None-Match": etag}, timeout=10).status_code == 304
    r = requests.post(
        f"{sandbox.base_url}/repos/{REPO}/check-runs",
        json={"name": "L1.C3", "head_sha": head, "status": "completed", "conclusion": "success"},
        headers=auth,
        timeout=10,
    )
    assert r.status_code == 201
    again = requests.get(url, headers={**auth, "If-None-Match": etag}, timeout=10)
    assert again.status_code == 200
    assert [c["name"] for c in again.json()["check_runs"]] == ["L1.C3"]


def test_conditional_polls_run_no_git(sandbox: Any) -> None:
    """Warm re-polls of a PR, its compare and its checks start no git process."""
    n = _pr(sandbox, "agent/quiet", {"q.txt": "q\n"})
    pr = _get(sandbox, f"/repos/{REPO}/pulls/{n}").json()
    paths = [
        f"/repos/{REPO}/pulls/{n}",
        f"/repos/{REPO}/compare/{pr['base']['sha']}...{pr['head']['sha']}",
        f"/repos/{REPO}/commits/{pr['head']['sha']}/check-runs",
        f"/repos/{REPO}/pulls/{n}/files",
        f"/repos/{REPO}/pulls/{n}/commits",
        f"/repos/{REPO}/pulls?per_page=100",
        f"/repos/{REPO}/contents/README.md?ref=main",
    ]
    etags = {p: _get(sandbox, p).headers["ETag"] for p in paths}
    g = sandbox.backend.git(REPO)
    before = g.subprocesses
    for p in paths:
        assert _get(sandbox, p, etags[p]).status_code == 304, p
        assert _get(sandbox, p).status_code == 200, p
    assert g.subprocesses == before


def test_connections_are_kept_alive(sandbox: Any) -> None:
    """A requests.Session reuses one connection for GETs, 304s, errors, POSTs and git fetches."""
    url = f"{sandbox.base_url}/repos/{REPO}"
    conns = sandbox._server.sandbox_connections
    opened = conns.opened
    with requests.Session() as s:
        s.headers["Authorization"] = f"token {sandbox.tokens['alice']}"
        r = s.get(url, timeout=10)
        assert r.headers.get("Connection", "").lower() != "close"
        assert int(r.headers["Content-Length"]) == len(r.content)
        assert (
            s.get(url, headers={"If-None-Match": r.headers["ETag"]}, timeout=10).status_code == 304
        )
        assert s.get(f"{url}/pulls/999", timeout=10).status_code == 404
        assert s.post(f"{url}/issues", data=b"{not json", timeout=10).status_code == 400
        assert s.post(f"{url}/issues", json={"title": "t"}, timeout=10).status_code == 201
        refs = s.get(f"{sandbox.base_url}/{REPO}.git/info/refs?service=git-upload-pack", timeout=10)
        assert refs.status_code == 200
        assert s.get(url, timeout=10).status_code == 200
    assert conns.opened == opened + 1


def test_stop_closes_idle_keep_alive_connections(sandbox: Any) -> None:
    """After stop() a kept-alive connection is not served by the stopped sandbox."""
    url = f"{sandbox.base_url}/repos/{REPO}"
    with requests.Session() as s:
        assert s.get(url, timeout=10).status_code == 200
        sandbox.stop()
        with pytest.raises(requests.ConnectionError):
            s.get(url, timeout=10)


def test_writes_are_persisted_on_stop(sandbox: Any, tmp_path: Path) -> None:
    """Saves are coalesced in the background; stop() writes what is pending."""
    n = _pr(sandbox, "agent/persist", {"p.txt": "p\n"})
    gh(sandbox, "bob").get_repo(REPO).get_issue(n).create_comment("persist me")
    sandbox.stop()
    import json

    state = json.loads((sandbox.state_dir / "state.json").read_text())
    comments = state["repos"][REPO]["comments"].values()
    assert [c["body"] for c in comments] == ["persist me"]


def test_a_check_run_completing_and_a_status_posted_change_their_etags(sandbox: Any) -> None:
    """What the change detector polls for a PR waiting on CI: the head's check runs answer
    304 while a run is in progress and 200 once it completes (a PATCH, no new run); the
    combined status answers 304 until a status is posted, then 200."""
    n = _pr(sandbox, "agent/ci", {"ci.txt": "ci\n"})
    head = _get(sandbox, f"/repos/{REPO}/pulls/{n}").json()["head"]["sha"]
    token = sandbox.installation_token(sandbox.installation_id)
    auth = {"Authorization": f"token {token}"}
    created = requests.post(
        f"{sandbox.base_url}/repos/{REPO}/check-runs",
        json={"name": "ci", "head_sha": head, "status": "in_progress"},
        headers=auth,
        timeout=10,
    )
    assert created.status_code == 201
    runs = f"{sandbox.base_url}/repos/{REPO}/commits/{head}/check-runs?per_page=100"
    status = f"{sandbox.base_url}/repos/{REPO}/commits/{head}/status"
    tags = {u: requests.get(u, headers=auth, timeout=10).headers["ETag"] for u in (runs, status)}
    for u in (runs, status):
        assert (
            requests.get(u, headers={**auth, "If-None-Match": tags[u]}, timeout=10).status_code
            == 304
        )
    done = requests.patch(
        f"{sandbox.base_url}/repos/{REPO}/check-runs/{created.json()['id']}",
        json={"status": "completed", "conclusion": "success"},
        headers=auth,
        timeout=10,
    )
    assert done.status_code == 200
    again = requests.get(runs, headers={**auth, "If-None-Match": tags[runs]}, timeout=10)
    assert again.status_code == 200
    assert [c["status"] for c in again.json()["check_runs"]] == ["completed"]
    assert (
        requests.get(
            status, headers={**auth, "If-None-Match": tags[status]}, timeout=10
        ).status_code
        == 304
    )
    posted = requests.post(
        f"{sandbox.base_url}/repos/{REPO}/statuses/{head}",
        json={"state": "success", "context": "legacy-ci"},
        headers={"Authorization": f"token {sandbox.tokens['alice']}"},
        timeout=10,
    )
    assert posted.status_code == 201
    after = requests.get(status, headers={**auth, "If-None-Match": tags[status]}, timeout=10)
    assert after.status_code == 200 and after.json()["state"] == "success"
