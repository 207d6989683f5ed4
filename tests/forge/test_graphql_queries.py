"""Every GraphQL query the forge can send is valid on GitHub's published schema."""

from __future__ import annotations

import pytest
from graphql import FragmentDefinitionNode, OperationDefinitionNode, parse, validate

from capdaemon.forge.client import Forge
from capdaemon.forge.errors import ForgeError
from capdaemon.forge.gql import PULLS_PAGE, QUERIES, REACTION_CONTENT, SMALL_PULLS_PAGE
from ghsandbox.gql import github_schema
from ghsandbox.gql.cost import plan_query
from ghsandbox.gql.resolvers import REST_TO_REACTION, served

VARIABLES = {
    "owner": "acme",
    "name": "widgets",
    "number": 1,
    "after": None,
    "base": "main",
    "first": PULLS_PAGE,
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_query_is_valid_on_githubs_schema(name: str) -> None:
    """The query parses and validates against schema.graphql (GitHub's, not the sandbox's)."""
    assert validate(github_schema(), parse(QUERIES[name])) == []


COST = {
    "comments": 1,
    "reactions": 1,
    "open_pulls": 3,
    "open_pulls_with_base": 3,
    "rollups": 1,
    "rollups_small": 1,
    "merge_checks": 1,
    "merge_checks_small": 1,
    "pull_before_merge": 1,
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_query_cost_and_is_served_by_the_sandbox(name: str) -> None:
    """Priced by GitHub's formula a page costs 1 point (3 for 100 open PRs with their labels,
    head commit and check rollup), and the sandbox serves every field (so the end-to-end tests
    exercise the very queries production sends)."""
    doc = parse(QUERIES[name])
    (op,) = [d for d in doc.definitions if isinstance(d, OperationDefinitionNode)]
    frags = {d.name.value: d for d in doc.definitions if isinstance(d, FragmentDefinitionNode)}
    plan = plan_query(github_schema(), op, frags, VARIABLES, served)
    assert plan.errors == []
    assert plan.cost == COST[name]


@pytest.mark.parametrize("name", ["open_pulls", "open_pulls_with_base"])
def test_a_small_page_of_open_prs_costs_one_point(name: str) -> None:
    """A page of SMALL_PULLS_PAGE open PRs, with or without the base branch, is 1 point by
    GitHub's formula (a page of 100 is 3; one PR more is 2)."""
    doc = parse(QUERIES[name])
    (op,) = [d for d in doc.definitions if isinstance(d, OperationDefinitionNode)]
    for first, cost in ((SMALL_PULLS_PAGE, 1), (SMALL_PULLS_PAGE + 1, 2)):
        plan = plan_query(github_schema(), op, {}, {**VARIABLES, "first": first}, served)
        assert plan.errors == [] and plan.cost == cost, (first, plan.cost)


def test_reaction_contents_map_both_ways() -> None:
    """GraphQL's ReactionContent values and REST's contents are the same eight reactions."""
    assert {v: k for k, v in REACTION_CONTENT.items()} == REST_TO_REACTION
    enum = github_schema().get_type("ReactionContent")
    assert set(REACTION_CONTENT) == set(enum.values)  # type: ignore[union-attr]


def test_only_listed_queries_are_sent(forge: Forge) -> None:
    """The forge refuses to send a query that is not in QUERIES (so the tests above cover all)."""
    with pytest.raises(ForgeError, match="not one of the forge's queries"):
        forge.graphql("{ viewer { login } }", {}, "viewer")
