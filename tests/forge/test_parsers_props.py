"""Property tests of two parsers: GraphQL's base-branch Ref, and the kept sha-bound reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from capdaemon.daemon.core.tickdata import required_checks
from capdaemon.forge.refrules import branch_facts
from capdaemon.forge.session import ShaCaches
from capdaemon.forge.shapersist import ShaCacheError, dump, restore

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
contexts = st.lists(st.sampled_from(["a", "b", "ci", "lint", "capdaemon/L1.C3"]), max_size=3)


@st.composite
def refs(draw: st.DrawFn) -> dict[str, Any]:
    """A well-formed Ref answer: a classic rule (or none) and some ruleset rules."""
    classic = draw(st.booleans())
    rule = {
        "pattern": "main",
        "isAdminEnforced": draw(st.booleans()),
        "allowsForcePushes": draw(st.booleans()),
        "allowsDeletions": draw(st.booleans()),
        "requiresApprovingReviews": draw(st.booleans()),
        "requiredApprovingReviewCount": draw(st.integers(0, 6)),
        "requiresStatusChecks": True,
        "requiresStrictStatusChecks": draw(st.booleans()),
        "requiredStatusChecks": [
            {"context": c, "app": draw(st.none() | st.just({"databaseId": 7}))}
            for c in draw(contexts)
        ],
    }
    nodes = []
    for ctxs in draw(st.lists(contexts, max_size=3)):
        nodes.append(
            {
                "type": "REQUIRED_STATUS_CHECKS",
                "parameters": {
                    "__typename": "RequiredStatusChecksParameters",
                    "strictRequiredStatusChecksPolicy": False,
                    "requiredStatusChecks": [{"context": c, "integrationId": None} for c in ctxs],
                },
            }
        )
    return {
        "target": {"oid": "a" * 40},
        "refUpdateRule": {"pattern": "main"} if classic else None,
        "branchProtectionRule": rule if classic else None,
        "rules": {"pageInfo": {"hasNextPage": False}, "nodes": nodes},
    }


@given(json_values)
def test_any_answer_is_facts_or_none(ref: Any) -> None:
    """Whatever GitHub (or a proxy) answers, the parser gives facts or None, never raises."""
    got = branch_facts(ref)
    assert got is None or isinstance(got.sha, str)


@given(refs())
def test_every_required_check_survives_the_fold(ref: dict[str, Any]) -> None:
    """Each check the classic rule or a ruleset requires is in the folded document."""
    got = branch_facts(ref)
    assert got is not None
    wanted = {
        c["context"] for c in (ref["branchProtectionRule"] or {}).get("requiredStatusChecks", [])
    }
    for node in ref["rules"]["nodes"]:
        wanted |= {c["context"] for c in node["parameters"]["requiredStatusChecks"]}
    assert wanted <= {r.context for r in required_checks(got.protection or {})}


@given(refs())
def test_a_hidden_classic_rule_is_never_no_rule(ref: dict[str, Any]) -> None:
    """A rule that exists (refUpdateRule) but is not shown to us makes the answer unusable."""
    ref["refUpdateRule"] = {"pattern": "main"}
    ref["branchProtectionRule"] = None
    assert branch_facts(ref) is None


@given(refs(), st.sampled_from(["PULL_REQUEST", "REQUIRED_STATUS_CHECKS"]))
def test_a_folded_rule_without_its_parameters_is_unusable(ref: dict[str, Any], kind: str) -> None:
    """A pull_request or required_status_checks rule whose parameters did not come could hide
    a requirement: the answer is not used."""
    ref["rules"]["nodes"].append({"type": kind, "parameters": None})
    assert branch_facts(ref) is None


@settings(max_examples=200)
@given(st.dictionaries(st.sampled_from(["compares", "paths", "blobs", "trees"]), json_values))
def test_a_kept_file_is_restored_or_refused(data: dict[str, Any]) -> None:
    """Any content of the kept fields restores or raises ShaCacheError naming it; never another
    error, and nothing is put into the caches when refused."""
    caches = ShaCaches()
    try:
        restore(data, Path("forge-cache.json"), caches)
    except ShaCacheError:
        assert dump(caches) == {"trees": [], "compares": [], "paths": [], "blobs": []}
