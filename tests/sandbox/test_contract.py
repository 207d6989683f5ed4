"""Contract test: capdaemon's endpoints via PyGithub, validated against GitHub's OpenAPI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import github
import jsonschema
import pytest
from github import InputGitTreeElement

from .helpers import app_gh, gh, integration, settled_pull

OPENAPI = Path(__file__).resolve().parents[1] / "data" / "openapi"


# GitHub's legacy alias of .../commits/{ref}/statuses (PyGithub uses it).
ALIASES = {"GET /repos/{}/{}/statuses/{}": "GET /repos/{}/{}/commits/{}/statuses"}


def _norm(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path).replace("{}...{}", "{}")


RATE_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
                "X-RateLimit-Used", "X-RateLimit-Resource")  # fmt: skip
RULESET = {
    "name": "main",
    "target": "branch",
    "enforcement": "active",
    "conditions": {"ref_name": {"include": ["~DEFAULT_BRANCH"], "exclude": []}},
    "rules": [
        {"type": "non_fast_forward"},
        {
            "type": "required_status_checks",
            "parameters": {
                "strict_required_status_checks_policy": False,
                "required_status_checks": [{"context": "L1.C3", "integration_id": 1001}],
            },
        },
    ],
}


def _load_schemas() -> dict[str, tuple[str, dict[str, Any]]]:
    index = json.loads((OPENAPI / "index.json").read_text())
    out = {}
    for op, meta in index.items():
        out[f"{meta['method']} {_norm(meta['path'])}"] = (
            op,
            json.loads((OPENAPI / meta["file"]).read_text()),
        )
    return out


def _scenario(sb: Any) -> None:
    """Exercise every operation capdaemon relies on, as the daemon and the agents would."""
    alice = gh(sb, "alice")
    agent = gh(sb, "agent-1")
    me = alice.get_user()
    assert me.login == "alice"
    assert alice.get_user("bob").login == "bob"
    assert alice.get_rate_limit().rate.limit == 5000

    gi = integration(sb)
    assert gi.get_app().slug == "capdaemon"
    assert [i.id for i in gi.get_installations()] == [sb.installation_id]
    assert gi.get_repo_installation("acme", "widgets").id == sb.installation_id
    assert gi.get_access_token(sb.installation_id).token.startswith("ghs_")
    bot = app_gh(sb)

    me.create_repo("scratch", auto_init=True)
    alice.get_organization("acme").create_repo("gadgets", auto_init=True)

    repo = agent.get_repo("acme/widgets")
    main = repo.get_branch("main")
    assert [b.name for b in repo.get_branches()] == ["main"]
    ref = repo.create_git_ref("refs/heads/feature", main.commit.sha)
    blob = repo.create_git_blob("print('hi')\n", "utf-8")
    tree = repo.create_git_tree(
        [InputGitTreeElement("src/hi.py", "100644", "blob", sha=blob.sha)],
        repo.get_git_tree(main.commit.sha),
    )
    commit = repo.create_git_commit("Add hi", tree, [repo.get_git_commit(main.commit.sha)])
    ref.edit(commit.sha)
    assert repo.get_git_ref("heads/feature").object.sha == commit.sha
    assert [r.ref for r in repo.get_git_matching_refs("heads/")] == [
        "refs/heads/feature",
        "refs/heads/main",
    ]
    assert repo.get_git_tree(commit.sha, recursive=True).tree
    assert repo.get_git_blob(blob.sha).content
    assert repo.get_contents("src/hi.py", ref="feature").decoded_content == b"print('hi')\n"
    assert repo.compare("main", "feature").ahead_by == 1
    assert repo.get_commit(commit.sha).files[0].filename == "src/hi.py"

    pr = repo.create_pull(base="main", head="feature", title="Add hi", body="Agent-Session: x")
    pr.edit(title="Add hi (edited)")
    assert [p.number for p in repo.get_pulls(state="open")] == [pr.number]
    pr = repo.get_pull(pr.number)
    assert [f.filename for f in pr.get_files()] == ["src/hi.py"]
    assert [c.sha for c in pr.get_commits()] == [commit.sha]

    brepo = bot.get_repo("acme/widgets")
    run = brepo.create_check_run("L1.C3", head_sha=pr.head.sha, status="in_progress")
    run.edit(status="completed", conclusion="success", output={"title": "ok", "summary": "A"})
    assert brepo.get_check_run(run.id).conclusion == "success"
    head_commit = brepo.get_commit(pr.head.sha)
    assert [r.name for r in head_commit.get_check_runs()] == ["L1.C3"]
    head_commit.create_status("success", "https://ci.example.com/1", "CI passed", "ci/build")
    assert head_commit.get_combined_status().state == "success"
    assert [s.context for s in head_commit.get_statuses()] == ["ci/build"]

    admin_repo = alice.get_repo("acme/widgets")
    admin_main = admin_repo.get_branch("main")
    admin_main.edit_protection(
        checks=[("L1.C3", sb.app_id)], enforce_admins=True, allow_force_pushes=False
    )
    assert admin_main.get_protection().required_status_checks.contexts == ["L1.C3"]
    assert admin_repo.get_collaborator_permission("agent-1") == "write"

    label = admin_repo.create_label("decision:pending-owner", "d93f0b", "waiting for an owner")
    assert admin_repo.get_label(label.name).color == "d93f0b"
    issue = brepo.create_issue(
        "Ballot for #1", body="<!-- capdaemon: {} -->", labels=["decision:pending-owner"]
    )
    issue.add_to_labels("needs-owner")
    issue.remove_from_labels("needs-owner")
    assert [lab.name for lab in issue.get_labels()] == ["decision:pending-owner"]
    assert {lab.name for lab in admin_repo.get_labels()} >= {
        "decision:pending-owner",
        "needs-owner",
    }
    assert [e.event for e in issue.get_events()] == ["labeled", "labeled", "unlabeled"]
    comment = issue.create_comment("/approve A")
    alice_issue = admin_repo.get_issue(issue.number)
    alice_issue.create_reaction("+1")
    assert [r.content for r in alice_issue.get_reactions()] == ["+1"]
    bcomment = brepo.get_issue(issue.number).get_comment(comment.id)
    bcomment.edit("/approve A (edited)")
    alice_issue.get_comment(comment.id).create_reaction("heart")
    assert [r.content for r in bcomment.get_reactions()] == ["heart"]
    assert [c.body for c in alice_issue.get_comments()] == ["/approve A (edited)"]
    assert {i.number for i in admin_repo.get_issues(state="all")} == {pr.number, issue.number}
    alice_issue.edit(state="closed")

    status = brepo.get_pull(pr.number).merge(sha=pr.head.sha, merge_method="squash")
    assert status.merged


def _access_and_errors(sb: Any) -> None:
    """The collaborator list and rulesets (read by protect --check and the merge gate), and the
    errors clients meet: a 404, a 422 over a size limit, a secondary-rate-limit 403."""
    alice = gh(sb, "alice")
    repo = alice.get_repo("acme/widgets")
    assert {c.login for c in repo.get_collaborators(affiliation="all")} >= {"agent-1", "alice"}
    paged = gh(sb, "alice", per_page=1).get_repo("acme/widgets")
    assert len(list(paged.get_collaborators())) >= 3  # follows /repositories/{id} Link URLs
    rq = alice.requester
    _, rs = rq.requestJsonAndCheck("POST", "/repos/acme/widgets/rulesets", input=RULESET)
    rq.requestJsonAndCheck("GET", "/repos/acme/widgets/rulesets")
    rq.requestJsonAndCheck("GET", f"/repos/acme/widgets/rulesets/{rs['id']}")
    rq.requestJsonAndCheck("GET", "/repos/acme/widgets/rules/branches/main")
    with pytest.raises(github.UnknownObjectException):
        repo.get_contents(".capdaemon.yml")
    with pytest.raises(github.GithubException) as exc:
        repo.create_issue("too long", body="x" * 65537)
    assert exc.value.status == 422
    sb.set_fidelity(points_per_minute=1)
    sb.advance_clock(61)  # a fresh minute: one point left per endpoint
    assert list(repo.get_labels())
    with pytest.raises(github.GithubException) as exc:
        list(repo.get_labels())
    assert exc.value.status == 403
    sb.set_fidelity(points_per_minute=900)
    kinds = {e.type for e in repo.get_events()}  # what the scenario did, in the events feed
    assert {"PushEvent", "PullRequestEvent", "IssuesEvent", "IssueCommentEvent"} <= kinds


def _error_schema(status: int) -> dict[str, Any]:
    name = "validation-error" if status == 422 else "basic-error"
    return dict(json.loads((OPENAPI / f"errors__{name}.json").read_text()))


def test_every_endpoint_matches_github_openapi(sandbox: Any) -> None:
    """Each JSON response capdaemon relies on validates against GitHub's OpenAPI schema, error
    bodies too, with the headers clients depend on (X-RateLimit-*, ETag, Link, Retry-After)."""
    schemas = _load_schemas()
    recorded = sandbox.record_responses(True)
    _scenario(sandbox)
    _access_and_errors(sandbox)
    seen: set[str] = set()
    failures = []
    statuses: set[int] = set()
    links: list[str] = []
    for endpoint, status, body, headers in recorded:
        method, path = endpoint.split(" ", 1)
        key = ALIASES.get(f"{method} {_norm(path)}", f"{method} {_norm(path)}")
        statuses.add(status)
        if status != 401 and not all(h in headers for h in RATE_HEADERS):
            failures.append(f"{endpoint} {status}: no X-RateLimit-* headers")
        if status >= 400:
            schema = _error_schema(status)
            if not isinstance(body, dict) or not {"message", "documentation_url"} <= set(body):
                failures.append(f"{endpoint} {status}: error body {body!r}")
            if status == 403 and "secondary" in str(body) and "Retry-After" not in headers:
                failures.append(f"{endpoint}: secondary rate limit without Retry-After")
        elif key not in schemas or status not in (200, 201):
            continue
        else:
            op, schema = schemas[key]
            seen.add(op)
            if method == "GET" and "ETag" not in headers:
                failures.append(f"{op}: no ETag")
            if "Link" in headers:
                links.append(headers["Link"])
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(body), key=str)
        for err in errors[:3]:
            where = "/".join(map(str, err.absolute_path))
            failures.append(f"{endpoint} {status}: {where}: {err.message[:200]}")
    assert not failures, "\n".join(failures)
    missing = {op for op, _ in schemas.values()} - seen
    assert not missing, f"operations never exercised: {sorted(missing)}"
    assert {403, 404, 422} <= statuses
    repo_id = sandbox.backend.repo("acme/widgets")["id"]
    assert any(f"/repositories/{repo_id}/collaborators?" in link for link in links)


def test_pygithub_reads_the_fields_capdaemon_uses(sandbox: Any) -> None:
    """PyGithub's PullRequest exposes heads, bases, author, draft, labels, mergeable."""
    sandbox.commit_files(
        "acme/widgets", "feat", {"a.txt": "a\n"}, "add a", author="agent-1", parent_branch="main"
    )
    n = sandbox.open_pr("acme/widgets", "feat", "main", "Add a", "body", "agent-1", draft=True)
    pr = settled_pull(gh(sandbox, "alice").get_repo("acme/widgets"), n)
    assert (pr.head.ref, pr.base.ref, pr.user.login, pr.draft, pr.state) == (
        "feat",
        "main",
        "agent-1",
        True,
        "open",
    )
    assert pr.head.sha == sandbox.branch_sha("acme/widgets", "feat")
    assert pr.base.sha == sandbox.branch_sha("acme/widgets", "main")
    assert pr.mergeable is True and pr.mergeable_state == "draft"
    assert pr.merged is False and pr.labels == []
    assert isinstance(pr.created_at.tzinfo, type(pr.updated_at.tzinfo))
    assert isinstance(pr, github.PullRequest.PullRequest)
