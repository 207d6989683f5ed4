"""What each open PR waits on, against the state the daemon wrote."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from capdaemon.dashboard.prfacts import PRFacts, World, waiting_on
from capdaemon.dashboard.readmodel import ReadModel, build
from capdaemon.dashboard.site import render
from capdaemon.decide.breaker import BreakerState
from capdaemon.filenames import BREAKER_FILE, BUDGET_FILE, PRS_FILE
from capdaemon.state import atomic_write_json
from capdaemon.stores.safety_state import BreakerFile, read_breaker

from .conftest import DashState

REF = "acme/widgets#9"
HEAD = "a" * 40
TRIPPED = BreakerState(tripped=True, tripped_at=datetime(2026, 5, 1, tzinfo=UTC))

facts = st.builds(
    PRFacts,
    state=st.sampled_from(["open", "merged", "closed"]),
    head_sha=st.just(HEAD),
    quadrant=st.sampled_from(["A", "B", "C", "D", "", "Z"]),
    check_success=st.booleans(),
    mergeable=st.sampled_from([True, False, None]),
    blocking=st.lists(st.sampled_from(["hold", "wip"]), max_size=2).map(tuple),
    auto_revert=st.booleans(),
    ballot_status=st.sampled_from(["", "pending", "approved", "rejected", "deferred", "x"]),
    ballot_head=st.sampled_from([HEAD, "b" * 40]),
    ballot_open=st.booleans(),
    merge_blocked_head=st.sampled_from(["", HEAD]),
    pending=st.booleans(),
    merge_policy=st.sampled_from(["auto", "tiered", "manual"]),
)
worlds = st.builds(
    World,
    breaker=st.sampled_from([None, BreakerState(), TRIPPED]),
    budget_waiting=st.sampled_from([frozenset(), frozenset({REF})]),
    tiers=st.sampled_from(
        [None, {}, {REF: {"head_sha": HEAD, "tier": 2, "merge_policy": "tiered"}}]
    ),
    one_tap=st.sampled_from([None, {}, {REF: {"state": "pending"}}, {REF: {"state": "approved"}}]),
)


@settings(max_examples=400, deadline=None)
@given(f=facts, world=worlds)
def test_nothing_to_wait_on_only_when_every_gate_is_open(f: PRFacts, world: World) -> None:
    """A PR is shown in the merge queue (waits on nothing) only when it is open, classified
    at its head with capdaemon's check green, no blocking label, not known to conflict, the
    breaker readable and letting it through, not held by the budget, no action in flight,
    and a D (or tier 2/3, or tiered with its tier unknown) has an owner's approval for this
    very head; a manual one never. Every wait names one of the known kinds."""
    waits = waiting_on(REF, f, world)
    kinds = {k for k, _ in waits}
    if f.state != "open":
        assert waits == ()
        return
    if waits:
        return
    assert f.quadrant in ("A", "B", "C", "D") and f.check_success and not f.blocking
    assert f.mergeable is not False and f.merge_blocked_head != HEAD and not f.pending
    assert world.breaker is not None and (not world.breaker.tripped or f.auto_revert)
    assert REF not in world.budget_waiting and f.merge_policy != "manual"
    approved = f.ballot_status == "approved" and f.ballot_head == HEAD
    tapped = (world.one_tap or {}).get(REF, {}).get("state") == "approved"
    if f.quadrant == "D" or (f.merge_policy == "tiered" and world.tiers is None):
        assert approved
    if f.merge_policy == "tiered" and world.tiers == {}:
        assert approved  # tier unknown for this head: a full ballot (fail closed)
    if f.merge_policy == "tiered" and world.tiers and world.tiers.get(REF):
        assert approved or tapped
    assert kinds == set()


def _model(state: DashState) -> ReadModel:
    return build(state.state_dir, state.config(), state.now)


def _waits(model: ReadModel, n: int) -> set[str]:
    return {k for k, _ in model.waiting(model.by_ref[f"acme/widgets#{n}"])}


def test_the_scenario_prs_wait_on_what_the_state_says(dash_state: DashState) -> None:
    """The D PR waits on its ballot (and on its check, which a D fails until approved), the
    task PR under `manual` on a human (and on its check, which stays pending until the owner
    answers), the merged ones on nothing; the table says so."""
    model = _model(dash_state)
    prs = dash_state.prs
    assert _waits(model, prs["script"]) == {"ballot", "check"}
    assert _waits(model, prs["scope"]) == {"owner", "check"}
    assert _waits(model, prs["typo"]) == set() and _waits(model, prs["img"]) == set()
    page = render(model, "prs.html").body
    assert page.count('data-wait="ballot"') == 1 and page.count('data-wait="owner"') == 1
    assert page.count('data-state="merged"') == 2 and page.count('data-state="open"') == 2
    assert 'href="https://github.com/acme/widgets/pull/2"' in page or "on GitHub" not in page


def test_a_tripped_breaker_a_held_budget_and_a_conflict_are_waits(
    dash_state: DashState, tmp_path: Path
) -> None:
    """Change the state as the daemon would (breaker tripped, the budget holding a PR, GitHub
    reporting a conflict): each open PR now waits on that too, and filters find them."""
    state = dash_state.copy(tmp_path / "s")
    sd = state.state_dir
    bf = read_breaker(sd)
    atomic_write_json(sd / BREAKER_FILE, BreakerFile(TRIPPED, bf.incident_issue).to_json())
    ref = f"acme/widgets#{state.prs['script']}"
    atomic_write_json(sd / BUDGET_FILE, {"version": 1, "waiting": {ref: {}}})
    raw = json.loads((sd / PRS_FILE).read_text())
    raw["prs"][ref]["mergeable"] = False
    atomic_write_json(sd / PRS_FILE, raw)
    (sd / "prs.journal").unlink(missing_ok=True)
    model = _model(state)
    assert {"breaker", "budget", "mergeability", "ballot"} <= _waits(model, state.prs["script"])
    assert "breaker" in _waits(model, state.prs["scope"])
    shown = render(model, "prs.html", params={"waiting": "budget"}).body
    assert shown.count('class="why"') == 1 and f">#{state.prs['script']}<" in shown
    assert render(model, "queue.html").body.count('class="none"') == 1  # nothing ready


def test_filters_and_sort_are_server_side(dash_state: DashState) -> None:
    """repo, state, quadrant and author filters and the sort order work without a script."""
    model = _model(dash_state)

    def numbers(**params: str) -> list[str]:
        body = render(model, "prs.html", params=params).body
        return [p.split("<")[0] for p in body.split('class="why">#')[1:]]

    assert sorted(numbers(state="merged")) == sorted(
        str(dash_state.prs[k]) for k in ("typo", "img")
    )
    assert numbers(quadrant="B") == [str(dash_state.prs["scope"])]
    assert numbers(author="nobody") == []
    assert numbers(sort="number", order="asc") == ["1", "2", "3", "4"]
    assert numbers(sort="number", order="desc") == ["4", "3", "2", "1"]
    assert len(numbers(repo="acme/widgets")) == 4 and numbers(repo="acme/other") == []


def test_each_pr_links_to_its_page_on_github(dash_state: DashState) -> None:
    """With the API at api.github.com, each row and story links the PR's github.com page."""
    config = dash_state.config()
    config = replace(config, github=replace(config.github, base_url="https://api.github.com"))
    model = build(dash_state.state_dir, config, dash_state.now)
    page = render(model, "prs.html").body
    for n in dash_state.prs.values():
        assert f'href="https://github.com/acme/widgets/pull/{n}"' in page
    story = render(model, "pr/acme_widgets_2.html").body
    assert 'href="https://github.com/acme/widgets/pull/2"' in story


def test_an_approved_green_pr_is_in_the_merge_queue(dash_state: DashState, tmp_path: Path) -> None:
    """The D PR once its ballot approves its head and its check is green (as the daemon
    records it): it waits on nothing and the merge queue lists it; approved for an older
    head, it waits on the ballot again."""
    state = dash_state.copy(tmp_path / "s")
    sd, ref = state.state_dir, f"acme/widgets#{state.prs['script']}"
    raw = json.loads((sd / PRS_FILE).read_text())
    rec = raw["prs"][ref]
    rec.update(check_success=True, mergeable=True)
    rec["ballot"].update(status="approved", head_sha=rec["head_sha"])
    atomic_write_json(sd / PRS_FILE, raw)
    (sd / "prs.journal").unlink(missing_ok=True)
    model = _model(state)
    assert _waits(model, state.prs["script"]) == set()
    assert [r.ref for r in model.queue()] == [ref]
    assert f">{ref}</a>" in render(model, "queue.html").body
    rec["ballot"]["head_sha"] = "f" * 40
    atomic_write_json(sd / PRS_FILE, raw)
    assert _waits(_model(state), state.prs["script"]) == {"ballot"}
