"""GraphQL ``Repository.object``: commits by sha with their check rollup state, null for an
unknown sha, priced by GitHub's formula (no connection: 1 point for any number of objects)."""

from __future__ import annotations

from typing import Any

import github
from graphql import parse, validate

from capdaemon.forge.gql import ROLLUP_SLOTS, ROLLUPS_QUERY
from ghsandbox.gql import github_schema

from .helpers import app_gh

UNKNOWN = "0123456789abcdef0123456789abcdef01234567"


def _objects_query(oids: list[str]) -> str:
    heads = "\n".join(
        f'    h{i}: object(oid: "{oid}") {{ __typename ... on Commit {{ oid statusCheckRollup '
        "{ state } } }"
        for i, oid in enumerate(oids)
    )
    return (
        "{ rateLimit { cost nodeCount }\n"
        f'  repository(owner: "acme", name: "widgets") {{\n{heads}\n  }}\n}}'
    )


def _commits(sandbox: Any, n: int) -> list[str]:
    return [
        sandbox.commit_files(
            "acme/widgets", f"b{i}", {f"f{i}.txt": f"{i}\n"}, "f", parent_branch="main"
        )
        for i in range(n)
    ]


def test_two_hundred_objects_cost_one_point_and_match_the_schema(sandbox: Any) -> None:
    """200 aliased objects (commits with each rollup state, and unknown shas) in one query: the
    query validates on GitHub's schema, `rateLimit { cost }` is 1, each commit's state is the
    one its checks give, a commit without checks has no rollup, an unknown sha is null."""
    pending, passed, failed, bare = _commits(sandbox, 4)
    repo = app_gh(sandbox).get_repo("acme/widgets")
    repo.create_check_run("ci", pending, status="in_progress")
    repo.create_check_run("ci", passed, status="completed", conclusion="success")
    repo.create_check_run("ci", failed, status="completed", conclusion="failure")
    oids = [pending, passed, failed, bare, UNKNOWN] * 40
    query = _objects_query(oids)
    assert validate(github_schema(), parse(query)) == []
    _headers, body = app_gh(sandbox).requester.graphql_query(query, {})
    assert "errors" not in body, body
    data = body["data"]
    assert data["rateLimit"]["cost"] == 1
    got = data["repository"]
    want = {pending: "PENDING", passed: "SUCCESS", failed: "FAILURE"}
    for i, oid in enumerate(oids):
        node = got[f"h{i}"]
        if oid == UNKNOWN:
            assert node is None
        elif oid == bare:
            assert node == {"__typename": "Commit", "oid": bare, "statusCheckRollup": None}
        else:
            assert node["oid"] == oid and node["statusCheckRollup"] == {"state": want[oid]}


def test_the_forges_rollup_query_costs_one_point_for_its_full_size(sandbox: Any) -> None:
    """The forge's query of ROLLUP_SLOTS heads (each a repository and an object: no connection)
    answers every head and is charged 1 point."""
    (sha,) = _commits(sandbox, 1)
    client = app_gh(sandbox)
    variables: dict[str, str] = {}
    for i in range(ROLLUP_SLOTS):
        variables |= {f"o{i}": "acme", f"n{i}": "widgets", f"s{i}": sha if i % 2 else UNKNOWN}
    before = sandbox.app.graphql.total_points()
    _headers, body = client.requester.graphql_query(ROLLUPS_QUERY, variables)
    assert "errors" not in body, body
    assert sandbox.app.graphql.total_points() - before == 1
    data = body["data"]
    assert data["h1"]["object"] == {"oid": sha, "statusCheckRollup": None}
    assert data["h0"] == {"object": None}


def test_an_expression_names_a_branch_and_a_tree_is_refused_by_name(sandbox: Any) -> None:
    """`expression: "main"` is the branch's head commit; a tree's sha is not served (an error
    naming it, never a silent null); giving both arguments is refused."""
    client = app_gh(sandbox)
    head = client.get_repo("acme/widgets").get_branch("main").commit
    query = '{ repository(owner: "acme", name: "widgets") { object(expression: "main") { oid } } }'
    _h, body = client.requester.graphql_query(query, {})
    assert body["data"]["repository"]["object"] == {"oid": head.sha}
    tree = head.commit.tree.sha
    query = (
        f'{{ repository(owner: "acme", name: "widgets") {{ object(oid: "{tree}") {{ oid }} }} }}'
    )
    try:
        _h, body = client.requester.graphql_query(query, {})
    except github.GithubException as exc:  # a 200 with errors, or refused outright
        body = exc.data
    assert any("tree" in str(e.get("message")) for e in body["errors"])
