"""The GraphQL endpoint: GitHub's schema, the same state as REST, edit records, cost, faults."""

from __future__ import annotations

from typing import Any

import github
import pytest

from .helpers import app_gh, gh

COMMENTS = """
query($owner: String!, $name: String!, $number: Int!) {
  rateLimit { cost remaining resetAt limit used }
  repository(owner: $owner, name: $name) {
    issue(number: $number) {
      comments(first: 100) {
        nodes {
          databaseId body createdAt updatedAt lastEditedAt includesCreatedEdit
          author { __typename login } editor { login }
        }
        pageInfo { hasNextPage endCursor }
      }
      reactions(first: 100) { nodes { databaseId content createdAt user { login } } }
    }
  }
}
"""


def _q(client: github.Github, query: str, **variables: Any) -> dict[str, Any]:
    _headers, data = client.requester.graphql_query(query, variables)
    return data["data"]


def test_edit_record_shows_a_same_second_edit_by_someone_else(sandbox: Any) -> None:
    """REST cannot tell a same-second edit (updated_at == created_at); GraphQL's edit record can."""
    sandbox.set_clock(sandbox.now())  # frozen: the edit lands in the same second
    repo = app_gh(sandbox).get_repo("acme/widgets")
    issue = repo.create_issue("Ballot")
    alice = gh(sandbox, "alice").get_repo("acme/widgets").get_issue(issue.number)
    plain = alice.create_comment("Looks fine.")
    target = alice.create_comment("Checking.")
    agent = gh(sandbox, "agent-1").get_repo("acme/widgets")
    edited = agent.get_issue(issue.number).get_comment(target.id)
    edited.edit("/approve A")
    rest = repo.get_issue(issue.number).get_comments()[1]
    assert rest.body == "/approve A" and rest.updated_at == rest.created_at
    data = _q(app_gh(sandbox), COMMENTS, owner="acme", name="widgets", number=issue.number)
    nodes = data["repository"]["issue"]["comments"]["nodes"]
    assert [n["databaseId"] for n in nodes] == [plain.id, target.id]
    assert nodes[0]["lastEditedAt"] is None and nodes[0]["includesCreatedEdit"] is False
    assert nodes[1]["lastEditedAt"] is not None and nodes[1]["includesCreatedEdit"] is True
    assert nodes[1]["author"] == {"__typename": "User", "login": "alice"}
    assert nodes[1]["editor"] == {"login": "agent-1"}
    assert nodes[1]["body"] == "/approve A"


def test_reactions_and_bot_authors_match_rest(sandbox: Any) -> None:
    """Reactions map +1 to THUMBS_UP; a bot author is a Bot whose login has no [bot] suffix."""
    repo = app_gh(sandbox).get_repo("acme/widgets")
    issue = repo.create_issue("Ballot")
    issue.create_comment("bot text")
    alice = gh(sandbox, "alice").get_repo("acme/widgets").get_issue(issue.number)
    r = alice.create_reaction("+1")
    data = _q(app_gh(sandbox), COMMENTS, owner="acme", name="widgets", number=issue.number)
    got = data["repository"]["issue"]
    assert got["comments"]["nodes"][0]["author"] == {"__typename": "Bot", "login": "capdaemon"}
    reaction = got["reactions"]["nodes"][0]
    assert reaction["databaseId"] == r.id and reaction["content"] == "THUMBS_UP"
    assert reaction["user"] == {"login": "alice"}
    assert data["rateLimit"]["cost"] == 1 and data["rateLimit"]["limit"] == 5000


def test_pull_requests_with_check_rollup(sandbox: Any) -> None:
    """A page of open PRs carries head, base, labels, draft, mergeability and the check rollup."""
    head = sandbox.commit_files(
        "acme/widgets", "feat", {"f.txt": "f\n"}, "f", author="agent-1", parent_branch="main"
    )
    number = sandbox.open_pr("acme/widgets", "feat", "main", "PR", "", "agent-1")
    app = app_gh(sandbox)
    repo = app.get_repo("acme/widgets")
    repo.get_issue(number).add_to_labels("risk:low")
    repo.create_check_run("capdaemon/L1", head, status="in_progress")
    repo.get_commit(head).create_status("success", context="ci/unit")
    query = """
    query($cursor: String) {
      repository(owner: "acme", name: "widgets") {
        pullRequests(states: [OPEN], first: 50, after: $cursor,
                     orderBy: {field: CREATED_AT, direction: ASC}) {
          totalCount
          pageInfo { hasNextPage endCursor }
          nodes {
            number headRefOid baseRefOid isDraft mergeable updatedAt
            author { login } labels(first: 20) { nodes { name } }
            commits(last: 1) { nodes { commit { oid statusCheckRollup { state
              contexts(first: 50) { nodes {
                __typename
                ... on CheckRun { name status conclusion checkSuite { app { databaseId slug } } }
                ... on StatusContext { context state creator { login } }
              } } } } } }
          }
        }
      }
    }"""
    data = _q(app, query, cursor=None)
    prs = data["repository"]["pullRequests"]
    assert prs["totalCount"] == 1 and prs["pageInfo"]["hasNextPage"] is False
    pr = prs["nodes"][0]
    # GitHub computes mergeability in the background: the query is the PR's first read
    assert pr["mergeable"] == "UNKNOWN"
    rest = repo.get_pull(number)
    assert rest.mergeable is True  # a later read, REST or GraphQL, shows the result
    again = _q(app, query, cursor=None)["repository"]["pullRequests"]["nodes"][0]
    assert again["mergeable"] == "MERGEABLE"
    assert (pr["number"], pr["headRefOid"], pr["isDraft"]) == (number, head, False)
    assert pr["baseRefOid"] == rest.base.sha
    assert pr["labels"]["nodes"] == [{"name": "risk:low"}]
    commit = pr["commits"]["nodes"][0]["commit"]
    assert commit["oid"] == head
    rollup = commit["statusCheckRollup"]
    assert rollup["state"] == "PENDING"
    assert rollup["contexts"]["nodes"] == [
        {
            "__typename": "CheckRun",
            "name": "capdaemon/L1",
            "status": "IN_PROGRESS",
            "conclusion": None,
            "checkSuite": {"app": {"databaseId": sandbox.app_id, "slug": sandbox.app_slug}},
        },
        {
            "__typename": "StatusContext",
            "context": "ci/unit",
            "state": "SUCCESS",
            "creator": {"login": "capdaemon"},
        },
    ]


def test_pr_counts_and_a_conflict_match_rest(sandbox: Any) -> None:
    """``changedFiles`` and ``commits.totalCount`` are REST's ``changed_files`` and
    ``commits``; a PR that conflicts with its base is CONFLICTING once computed, as REST's
    ``mergeable`` is false."""
    sandbox.commit_files("acme/widgets", "feat", {"a.txt": "a\n"}, "a", parent_branch="main")
    sandbox.commit_files("acme/widgets", "feat", {"b.txt": "b\n", "c.txt": "c\n"}, "bc")
    sandbox.commit_files(
        "acme/widgets", "clash", {"README.md": "theirs\n"}, "x", parent_branch="main"
    )
    sandbox.commit_files("acme/widgets", "main", {"README.md": "ours\n"}, "y")
    feat = sandbox.open_pr("acme/widgets", "feat", "main", "feat", "", "agent-1")
    clash = sandbox.open_pr("acme/widgets", "clash", "main", "clash", "", "agent-1")
    app = app_gh(sandbox)
    query = """query($n: Int!) { repository(owner: "acme", name: "widgets") {
      pullRequest(number: $n) { changedFiles mergeable commits(last: 1) { totalCount } } } }"""
    for number in (feat, clash):
        _q(app, query, n=number)  # the first read: GitHub is still computing mergeability
        pr = _q(app, query, n=number)["repository"]["pullRequest"]
        rest = app.get_repo("acme/widgets").get_pull(number)
        assert (pr["changedFiles"], pr["commits"]["totalCount"]) == (
            rest.changed_files,
            rest.commits,
        )
        assert pr["mergeable"] == {True: "MERGEABLE", False: "CONFLICTING"}[rest.mergeable]
    assert _q(app, query, n=feat)["repository"]["pullRequest"]["changedFiles"] == 3
    assert _q(app, query, n=clash)["repository"]["pullRequest"]["mergeable"] == "CONFLICTING"


def test_pagination_cursors_walk_every_item(sandbox: Any) -> None:
    """``first``/``after`` pages through all comments exactly once."""
    repo = app_gh(sandbox).get_repo("acme/widgets")
    issue = repo.create_issue("Ballot")
    ids = [issue.create_comment(f"c{i}").id for i in range(5)]
    query = """query($after: String, $n: Int!) { repository(owner: "acme", name: "widgets") {
      issue(number: $n) { comments(first: 2, after: $after) {
        nodes { databaseId } pageInfo { hasNextPage endCursor } } } } }"""
    seen: list[int] = []
    after = None
    while True:
        page = _q(app_gh(sandbox), query, after=after, n=issue.number)["repository"]["issue"][
            "comments"
        ]
        seen += [n["databaseId"] for n in page["nodes"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == ids


def _errors(client: github.Github, query: str, **variables: Any) -> list[dict[str, Any]]:
    with pytest.raises(github.GithubException) as exc:
        client.requester.graphql_query(query, variables)
    return list(exc.value.data["errors"])


def test_unserved_field_is_an_error_naming_it(sandbox: Any) -> None:
    """A field GitHub has but the sandbox does not serve: an error naming it, no data at all."""
    errors = _errors(
        app_gh(sandbox),
        '{ repository(owner: "acme", name: "widgets") { nameWithOwner stargazerCount } }',
    )
    assert len(errors) == 1
    assert "stargazerCount" in errors[0]["message"] and "Repository" in errors[0]["message"]
    assert errors[0]["type"] == "SANDBOX_UNSERVED_FIELD"
    assert errors[0]["path"] == ["repository", "stargazerCount"]


def test_schema_validation_pagination_and_not_found(sandbox: Any) -> None:
    """Invalid fields, unbounded connections and unknown repositories fail like on GitHub."""
    client = app_gh(sandbox)
    bad = _errors(client, '{ repository(owner: "acme", name: "widgets") { noSuchField } }')
    assert "Cannot query field 'noSuchField' on type 'Repository'" in bad[0]["message"]
    unbounded = _errors(
        client, '{ repository(owner: "acme", name: "widgets") { pullRequests { totalCount } } }'
    )
    assert unbounded[0]["type"] == "MISSING_PAGINATION_BOUNDARIES"
    assert "pullRequests" in unbounded[0]["message"]
    too_many = "pullRequests(first: 101) { totalCount }"
    big = _errors(client, f'{{ repository(owner: "acme", name: "widgets") {{ {too_many} }} }}')
    assert big[0]["type"] == "EXCESSIVE_PAGINATION"
    with pytest.raises(github.UnknownObjectException):
        client.requester.graphql_query(
            '{ repository(owner: "acme", name: "nope") { nameWithOwner } }', {}
        )
    sandbox.create_repo("acme", "secret", private=True)
    hidden = _errors(
        gh(sandbox, "mallory"), '{ repository(owner: "acme", name: "secret") { nameWithOwner } }'
    )
    assert hidden[0]["type"] == "NOT_FOUND"


def test_cost_follows_githubs_formula_and_has_its_own_budget(sandbox: Any) -> None:
    """100 PRs × (labels + commits + contexts) = 1 + 300 requests → 3 points; REST untouched."""
    client = app_gh(sandbox)
    query = """{ rateLimit { cost used remaining }
      repository(owner: "acme", name: "widgets") { pullRequests(first: 100) { nodes {
        labels(first: 10) { totalCount }
        commits(last: 1) { nodes { commit { statusCheckRollup { contexts(first: 10) {
          totalCount } } } } } } } } }"""
    before = sandbox.counters()["identities"].get(f"installation:{sandbox.installation_id}", {})
    first = _q(client, query)["rateLimit"]
    second = _q(client, query)["rateLimit"]
    assert first["cost"] == 3 and second["cost"] == 3
    assert second["used"] == first["used"] + 3
    assert second["remaining"] == 5000 - second["used"]
    assert sandbox.app.graphql.total_points() >= 6
    rate = client.get_rate_limit()
    assert rate.resources.core.used <= 2 + before.get("counted", 0)  # the token requests only


def test_graphql_budget_runs_out(sandbox: Any) -> None:
    """When the 5,000 points are spent the endpoint answers RATE_LIMITED with its headers."""
    client = app_gh(sandbox)
    _q(client, "{ rateLimit { cost } }")
    bucket = sandbox.app.limiter.bucket(f"installation:{sandbox.installation_id}:graphql", 5000)
    bucket.used = 5000
    with pytest.raises(github.GithubException) as exc:
        client.requester.graphql_query("{ rateLimit { cost } }", {})
    assert exc.value.status == 403
    assert exc.value.data["errors"][0]["type"] == "RATE_LIMITED"
    assert exc.value.headers["x-ratelimit-resource"] == "graphql"
    assert exc.value.headers["x-ratelimit-remaining"] == "0"


def test_faults_and_counters_apply_to_graphql(sandbox: Any) -> None:
    """A scripted 502 hits /graphql like any REST path; requests are counted as POST /graphql."""
    client = app_gh(sandbox)
    sandbox.reset_counters()
    sandbox.faults("POST", r"^/graphql#", status=502)
    with pytest.raises(github.GithubException) as exc:
        client.requester.graphql_query("{ rateLimit { cost } }", {})
    assert exc.value.status == 502
    assert _q(client, "{ rateLimit { cost } }")["rateLimit"]["cost"] == 1
    row = sandbox.counters()["endpoints"]["POST /graphql"]
    assert row["requests"] == 2 and row["faults"] == 1 and row["counted"] == 0  # REST budget


def test_ghes_path_and_authentication(sandbox: Any) -> None:
    """``/api/graphql`` (GitHub Enterprise Server) answers too; anonymous callers get 401."""
    ghes = github.Github(
        base_url=sandbox.api_v3_url,
        auth=github.Auth.Token(sandbox.tokens["alice"]),
        retry=None,
    )
    assert ghes.requester.graphql_url.endswith("/api/graphql")
    assert _q(ghes, "{ rateLimit { cost } }") == {"rateLimit": {"cost": 1}}
    anon = github.Github(base_url=sandbox.base_url, retry=None)
    with pytest.raises(github.GithubException) as exc:
        anon.requester.graphql_query("{ rateLimit { cost } }", {})
    assert exc.value.status == 401


def test_a_fault_can_target_one_operation(sandbox: Any) -> None:
    """Faults match ``/graphql#OperationName``: a 502 scripted for one query leaves others."""
    client = app_gh(sandbox)
    sandbox.faults("POST", r"^/graphql#Other$", status=502)
    assert _q(client, "query Mine { rateLimit { cost } }") == {"rateLimit": {"cost": 1}}
    with pytest.raises(github.GithubException) as exc:
        client.requester.graphql_query("query Other { rateLimit { cost } }", {})
    assert exc.value.status == 502
