"""The conditional-request cache: pooled connections on 304s, sizing from the work, and no
content-addressed bodies."""

from __future__ import annotations

from collections.abc import Callable

from capdaemon.forge.client import Forge
from capdaemon.forge.etagcache import CacheEntry, EtagCache, content_addressed
from ghsandbox import Sandbox


def test_304s_reuse_the_pooled_connection(
    sandbox: Sandbox, make_forge: Callable[..., Forge], open_pr: Callable[..., int]
) -> None:
    """Twenty repeated conditional reads answered 304 open no new TCP connection (closing the
    unread 304 opened one per request)."""
    f = make_forge(app=True)
    f.batch_gathering = False  # the REST PR list: a conditional GET each time
    open_pr({"docs/a.md": "# a\n"})
    assert len(f.list_open_prs(sandbox.repo)) == 1
    before = sandbox.connections_opened()
    sent = f.transport.stats.sent
    for _ in range(20):
        assert len(f.list_open_prs(sandbox.repo)) == 1
    assert f.transport.stats.sent - sent == 20
    assert f.transport.stats.not_modified >= 20
    assert sandbox.connections_opened() - before <= 1


def test_content_addressed_reads_stay_out_of_the_etag_cache(
    sandbox: Sandbox, make_forge: Callable[..., Forge]
) -> None:
    """A git blob read by sha (immutable; the forge keeps its own content-addressed cache)
    takes no slot in the conditional-request cache; a PR list does."""
    f = make_forge(app=True)
    f.batch_gathering = False  # the REST PR list, which the conditional-request cache keeps
    sha = sandbox.branch_sha(sandbox.repo, "main")
    f.session.http.get(f"/repos/{sandbox.repo}/git/commits/{sha}")
    assert len(f.transport.cache) == 0
    f.list_open_prs(sandbox.repo)
    assert len(f.transport.cache) == 1
    assert content_addressed(f"https://x/api/v3/repos/o/r/git/blobs/{sha}")
    assert content_addressed(f"https://x/repos/o/r/compare/{sha}...{sha}?per_page=1")
    assert not content_addressed(f"https://x/repos/o/r/commits/{sha}/check-runs")
    assert not content_addressed(f"https://x/repos/o/r/compare/main...{sha}")


def _entry(i: int) -> CacheEntry:
    return CacheEntry(f'"e{i}"', {}, b"x" * 10)


def test_cache_grows_to_the_working_set_and_evicts_idle_entries() -> None:
    """The working set of a tick is never evicted (a cold start over more PRs than the starting
    size keeps every ETag for the next tick); entries idle for two ticks go first."""
    c = EtagCache(max_entries=4)
    c.new_tick()
    for i in range(10):
        c.put((f"u{i}", "a", ""), _entry(i))
    assert len(c) == 10 and c.evictions == 0
    c.new_tick()  # the next tick uses all ten again: still no eviction
    assert all(c.get((f"u{i}", "a", "")) is not None for i in range(10))
    c.new_tick()
    c.new_tick()  # two ticks in which u0..u9 were not used
    for i in range(10, 30):
        c.put((f"u{i}", "a", ""), _entry(i))
    assert c.evictions > 0
    assert c.get(("u0", "a", "")) is None and c.get(("u29", "a", "")) is not None


def test_cache_byte_bound_still_holds() -> None:
    """However the entry count grows, the bytes of bodies stay under max_bytes."""
    c = EtagCache(max_entries=2, max_bytes=100)
    for i in range(50):
        c.put((f"u{i}", "a", ""), _entry(i))
    assert c.nbytes <= 100
