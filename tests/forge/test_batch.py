"""Batch gathering: one GraphQL page of open PRs with their checks, failing closed per PR."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import github

from capdaemon.forge.batch import _commits_error, _kept, _summary
from capdaemon.forge.client import CHECK_NAME, Forge
from ghsandbox import CommitSpec, Person, Sandbox

CHECK_RUNS = "GET /repos/{owner}/{repo}/commits/{ref}/check-runs"
STATUS = "GET /repos/{owner}/{repo}/commits/{ref}/status"
BATCH = "POST /graphql CapdaemonOpenPulls"


def _as(sandbox: Sandbox, login: str) -> github.Github:
    return github.Github(
        base_url=sandbox.base_url,
        auth=github.Auth.Token(sandbox.tokens[login]),
        seconds_between_requests=None,
        seconds_between_writes=None,
        retry=None,
    )


def _seen(sandbox: Sandbox) -> dict[str, int]:
    """Requests per endpoint since the last reset (installation tokens aside)."""
    return {
        k: v["requests"]
        for k, v in sandbox.counters()["endpoints"].items()
        if v["requests"] and not k.endswith("/access_tokens")
    }


def _rest_forge(make_forge: Callable[..., Forge]) -> Forge:
    f = make_forge(app=True)
    f.batch_gathering = False
    return f


def test_batch_list_and_checks_equal_the_rest_reads(
    forge: Forge, make_forge: Callable[..., Forge], sandbox: Sandbox, open_pr: Callable[..., int]
) -> None:
    """The GraphQL page gives the same PR summaries, check runs and statuses as REST, in one
    request, and later check reads of those heads cost nothing this tick."""
    numbers = [open_pr({f"docs/p{i}.md": f"{i}\n"}, branch=f"b{i}") for i in range(3)]
    rest = _rest_forge(make_forge)
    alice = _as(sandbox, "alice").get_repo(sandbox.repo)
    alice.get_issue(numbers[1]).add_to_labels("do-not-merge")
    head = rest.pull_status(sandbox.repo, numbers[0]).head_sha
    alice.get_commit(head).create_status(state="pending", context="ci/unit", description="wait")
    alice.get_commit(head).create_status(state="failure", context="ci/lint")
    app_repo = _as_app(sandbox).get_repo(sandbox.repo)
    app_repo.create_check_run("capdaemon/L1", head, status="in_progress")
    app_repo.create_check_run(
        "judge",
        head,
        status="completed",
        conclusion="neutral",
        output={"title": "t", "summary": "Quadrant: A", "text": "why"},
    )
    sandbox.reset_counters()
    batch = forge.list_open_prs(sandbox.repo)
    assert _seen(sandbox) == {BATCH: 1}
    expected = rest.list_open_prs(sandbox.repo)
    assert [p.number for p in batch] == numbers
    for got, want in zip(batch, expected, strict=True):
        assert (got.number, got.head_sha, got.head_ref, got.base_ref, got.author, got.draft) == (
            want.number,
            want.head_sha,
            want.head_ref,
            want.base_ref,
            want.author,
            want.draft,
        )
        assert got.labels == want.labels
    for p in batch:
        runs = forge.check_runs(p.repo, p.head_sha)
        statuses = forge.commit_statuses(p.repo, p.head_sha)
        want_runs = rest.check_runs(p.repo, p.head_sha)
        want_statuses = rest.commit_statuses(p.repo, p.head_sha)
        assert [_fields(r) for r in runs] == [_fields(r) for r in want_runs]
        assert sorted(map(_fields, statuses)) == sorted(map(_fields, want_statuses))
    sandbox.reset_counters()
    for p in batch:
        forge.check_runs(p.repo, p.head_sha)
        forge.commit_statuses(p.repo, p.head_sha)
    assert _seen(sandbox) == {}  # served from the batch: no request at all


def _as_app(sandbox: Sandbox) -> github.Github:
    token = sandbox.installation_token(sandbox.installation_id)
    return github.Github(
        base_url=sandbox.base_url,
        auth=github.Auth.Token(token),
        seconds_between_requests=None,
        seconds_between_writes=None,
        retry=None,
    )


def _fields(c: Any) -> tuple[Any, ...]:
    return (
        c.name,
        c.status,
        c.conclusion,
        c.app_slug,
        c.app_id,
        c.output_title,
        c.output_summary,
        c.output_text,
    )


def test_a_pr_with_an_incomplete_rollup_is_read_through_rest_alone(
    forge: Forge, sandbox: Sandbox, open_pr: Callable[..., int]
) -> None:
    """A head with more than 100 status contexts does not fit the page: that PR's checks are
    read through REST; the other PR's checks still come from the batch."""
    crowded = open_pr({"docs/a.md": "a\n"}, branch="crowded")
    quiet = open_pr({"docs/b.md": "b\n"}, branch="quiet")
    alice = _as(sandbox, "alice").get_repo(sandbox.repo)
    heads = {p.number: p.head_sha for p in forge.list_open_prs(sandbox.repo)}
    commit = alice.get_commit(heads[crowded])
    for i in range(101):
        commit.create_status(state="success", context=f"ci/{i}")
    forge.new_tick()
    prs = forge.list_open_prs(sandbox.repo)
    sandbox.reset_counters()
    assert forge.check_runs(sandbox.repo, heads[quiet]) == []
    assert _seen(sandbox) == {}
    assert len(forge.commit_statuses(sandbox.repo, heads[crowded])) == 101
    assert _seen(sandbox) == {STATUS: 1}
    assert [p.number for p in prs] == [crowded, quiet]


def test_a_failed_batch_falls_back_to_the_rest_list(
    forge: Forge, sandbox: Sandbox, open_pr: Callable[..., int]
) -> None:
    """A GraphQL 502 that outlasts the retries: the REST list is used and every PR's checks
    are read through REST (nothing is taken from a batch that did not arrive)."""
    n = open_pr({"docs/a.md": "a\n"})
    sandbox.faults("POST", r"^/graphql#", status=502, count=10)
    prs = forge.list_open_prs(sandbox.repo)
    assert [p.number for p in prs] == [n]
    sandbox.clear_faults()
    sandbox.reset_counters()
    forge.check_runs(sandbox.repo, prs[0].head_sha)
    assert _seen(sandbox) == {CHECK_RUNS: 1}


def test_errors_are_confined_to_the_pr_they_name() -> None:
    """An error under one PR's `commits` drops only that PR's checks; any other path (or none)
    is not confined, and an incomplete rollup or a moved head keeps nothing."""
    assert _commits_error({"path": ["repository", "pullRequests", "nodes", 7, "commits"]}) == 7
    assert _commits_error({"path": ["repository", "pullRequests", "nodes", 7, "labels"]}) is None
    assert _commits_error({"path": ["repository", "pullRequests"]}) is None
    assert _commits_error({"message": "boom"}) is None
    node: dict[str, Any] = {
        "headRefOid": "a" * 40,
        "commits": {"nodes": [{"commit": {"oid": "a" * 40, "statusCheckRollup": None}}]},
    }
    assert _kept(node) == ((), ())
    moved = {**node, "headRefOid": "b" * 40}
    assert _kept(moved) is None
    more = {
        "headRefOid": "a" * 40,
        "commits": {
            "nodes": [
                {
                    "commit": {
                        "oid": "a" * 40,
                        "statusCheckRollup": {
                            "contexts": {"pageInfo": {"hasNextPage": True}, "nodes": []}
                        },
                    }
                }
            ]
        },
    }
    assert _kept(more) is None
    assert _kept({"headRefOid": "a" * 40, "commits": None}) is None


PULL = "GET /repos/{owner}/{repo}/pulls/{number}"


def test_a_batched_pr_snapshots_without_reading_the_pr_and_equals_the_rest_snapshot(
    forge: Forge, make_forge: Callable[..., Forge], sandbox: Sandbox, open_pr: Callable[..., int]
) -> None:
    """Every fact a snapshot takes from the PR itself (base sha, counts, title, body, labels,
    mergeability) comes with the page of open PRs: no `GET /pulls/N`, and the snapshot is the
    one the REST read gives (mergeability once GitHub has computed it)."""
    n = open_pr({"docs/a.md": "a\n", "docs/b.md": "b\n"}, branch="two", title="Two files")
    sandbox.commit_files(sandbox.repo, "two", {"docs/c.md": "c\n"}, "More")
    _as(sandbox, "alice").get_repo(sandbox.repo).get_issue(n).add_to_labels("risk:low")
    rest = _rest_forge(make_forge)
    rest.pull_status(sandbox.repo, n)  # GitHub's first read: mergeability still computing
    forge.new_tick()
    (pr,) = forge.list_open_prs(sandbox.repo)
    assert (pr.mergeable, pr.mergeable_known) == (True, True)
    sandbox.reset_counters()
    snap = forge.snapshot(sandbox.repo, n)
    assert PULL not in _seen(sandbox), _seen(sandbox)
    want = rest.snapshot(sandbox.repo, n)
    assert snap.files_complete and snap.commits_complete and len(snap.files) == 3
    assert len(snap.commits) == 2
    for name in ("head_sha", "base_sha", "base_ref", "head_ref", "author", "draft", "title"):
        assert getattr(snap, name) == getattr(want, name), name
    assert (snap.body, snap.labels, snap.files, snap.commits) == (
        want.body,
        want.labels,
        want.files,
        want.commits,
    )
    assert snap.mergeable is want.mergeable is True


def test_unknown_and_conflicting_mergeability_are_never_mergeable(
    forge: Forge, sandbox: Sandbox, open_pr: Callable[..., int]
) -> None:
    """A PR GitHub has not computed yet lists as UNKNOWN (None, known); one that conflicts with
    its base as CONFLICTING (False)."""
    clash = open_pr({"docs/x.md": "theirs\n"}, branch="clash")
    sandbox.commit_files(sandbox.repo, "main", {"docs/x.md": "ours\n"}, "Ours")
    forge.new_tick()
    (first,) = forge.list_open_prs(sandbox.repo)
    assert (first.mergeable, first.mergeable_known) == (None, True)
    assert forge.snapshot(sandbox.repo, clash).mergeable is None
    forge.new_tick()
    (again,) = forge.list_open_prs(sandbox.repo)
    assert (again.number, again.mergeable, again.mergeable_known) == (clash, False, True)


def test_the_check_we_write_needs_no_read_and_joins_the_rollup(
    forge: Forge, sandbox: Sandbox, open_pr: Callable[..., int]
) -> None:
    """With the head's rollup from this tick's batch, publishing L1.C3 reads no check runs,
    and the merge gate's view of the head (rollup_checks) carries the run just written in
    place of the earlier one."""
    n = open_pr({"docs/a.md": "a\n"})
    forge.new_tick()
    (pr,) = forge.list_open_prs(sandbox.repo)
    marker = {"kind": "l1c3", "pr": f"{sandbox.repo}#{n}", "head": pr.head_sha}
    sandbox.reset_counters()
    assert forge.publish_check(
        sandbox.repo, pr.head_sha, success=False, title="no", summary="s", marker=marker
    )
    assert CHECK_RUNS not in _seen(sandbox)
    assert forge.publish_check(
        sandbox.repo, pr.head_sha, success=True, title="ok", summary="s", marker=marker
    )
    assert CHECK_RUNS not in _seen(sandbox)
    assert not forge.publish_check(
        sandbox.repo, pr.head_sha, success=True, title="ok", summary="s", marker=marker
    )
    seen = _seen(sandbox)
    assert CHECK_RUNS not in seen
    assert seen.get("POST /repos/{owner}/{repo}/check-runs") == 1
    assert seen.get("PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}") == 1
    rollup = forge.rollup_checks(sandbox.repo, pr.head_sha)
    assert rollup is not None
    (mine,) = [c for c in rollup if c.name == CHECK_NAME]
    assert (mine.status, mine.conclusion, mine.output_title) == ("completed", "success", "ok")
    # GitHub agrees: one run of ours, green (a REST read in a new tick)
    forge.new_tick()
    (run,) = forge.check_runs(sandbox.repo, pr.head_sha)
    assert (run.conclusion, run.output_title) == ("success", "ok")


def _node(**over: Any) -> dict[str, Any]:
    node: dict[str, Any] = {
        "number": 7,
        "headRefOid": "a" * 40,
        "headRefName": "feature",
        "baseRefOid": "b" * 40,
        "baseRefName": "main",
        "isDraft": False,
        "title": "T",
        "body": "B",
        "mergeable": "MERGEABLE",
        "changedFiles": 2,
        "author": {"__typename": "User", "login": "agent-1"},
        "labels": {"totalCount": 0, "nodes": []},
        "commits": {"totalCount": 3, "nodes": []},
    }
    node.update(over)
    return node


def test_pr_facts_from_a_page_fail_closed_field_by_field() -> None:
    """A PR node missing any fact a snapshot needs gives no facts (the PR is read through
    REST); a mergeability GitHub has not computed, or a value GitHub's enum does not have, is
    never mergeable."""
    pr, facts = _summary("acme/widgets", _node())
    assert (pr.mergeable, pr.mergeable_known) == (True, True)
    assert facts is not None and (facts.commits, facts.changed_files) == (3, 2)
    pr, facts = _summary("acme/widgets", _node(mergeable="CONFLICTING"))
    assert (pr.mergeable, pr.mergeable_known, facts and facts.mergeable) == (False, True, False)
    pr, facts = _summary("acme/widgets", _node(mergeable="UNKNOWN"))
    assert (pr.mergeable, pr.mergeable_known) == (None, True)
    assert facts is not None and facts.mergeable is None
    for bad in (
        {"mergeable": "MAYBE"},
        {"mergeable": None},
        {"changedFiles": None},
        {"commits": {"nodes": []}},
        {"baseRefOid": None},
        {"title": None},
        {"body": None},
        {"author": None},
    ):
        pr, facts = _summary("acme/widgets", _node(**bad))
        assert facts is None, bad
        if "mergeable" in bad:
            assert (pr.mergeable, pr.mergeable_known) == (None, False), bad


def test_a_write_we_cannot_read_back_drops_the_kept_rollup(
    forge: Forge, sandbox: Sandbox, open_pr: Callable[..., int]
) -> None:
    """When capdaemon wrote on a head but cannot tell what GitHub now shows, the merge gate
    does not decide on the rollup read before the write: that head is read through REST."""
    open_pr({"docs/a.md": "a\n"})
    forge.new_tick()
    (pr,) = forge.list_open_prs(sandbox.repo)
    assert forge.rollup_checks(sandbox.repo, pr.head_sha) == []
    forge._batch.note_run(sandbox.repo, pr.head_sha, None)
    assert forge.rollup_checks(sandbox.repo, pr.head_sha) is None
    sandbox.reset_counters()
    assert forge.check_runs(sandbox.repo, pr.head_sha) == []
    assert _seen(sandbox) == {CHECK_RUNS: 1}


def _open_many(sandbox: Sandbox, first: int, count: int) -> None:
    main = sandbox.branch_sha(sandbox.repo, "main")
    who = Person("agent-1", "agent-1@agents.example.com")
    when = datetime.now(UTC)
    specs = [
        CommitSpec(f"agent-1/many{i}", {f"docs/m{i}.md": f"{i}\n"}, f"M{i}", who, when, main)
        for i in range(first, first + count)
    ]
    sandbox.bulk_commits(sandbox.repo, specs)
    sandbox.bulk_open_prs(
        sandbox.repo,
        [{"head": s.branch, "base": "main", "title": s.message, "user": "agent-1"} for s in specs],
    )


def _listed(forge: Forge, sandbox: Sandbox) -> tuple[int, int]:
    """One tick's listing: (open PRs listed, GraphQL points it cost)."""
    before = sandbox.app.graphql.total_points()
    forge.new_tick()
    prs = forge.list_open_prs(sandbox.repo, "main")
    return len(prs), sandbox.app.graphql.total_points() - before


def test_a_repo_with_few_open_prs_is_listed_for_one_point(forge: Forge, sandbox: Sandbox) -> None:
    """The first listing asks for 100 (3 points); while a repo has few open PRs the next ask
    for 49 (1 point). When it grows past a page, every PR is still listed (a second page) and
    the next listing asks for 100 again."""
    _open_many(sandbox, 0, 5)
    assert _listed(forge, sandbox) == (5, 3)
    assert _listed(forge, sandbox) == (5, 1)
    _open_many(sandbox, 5, 60)
    assert _listed(forge, sandbox) == (65, 1 + 3)
    assert _listed(forge, sandbox) == (65, 3)
