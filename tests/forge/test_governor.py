"""Every request waits at one point per installation until GitHub's secondary limits (with a
20 % margin) have room, one request in flight at a time: the sandbox, enforcing the limit as
GitHub documents it, never refuses one (without the governor it refused the burst)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from capdaemon.forge.client import Forge
from capdaemon.forge.governor import Governor, Window, rest_points
from ghsandbox import Sandbox

from .sharedclock import SharedClock

REPO = "acme/widgets"
QUERY = 'query Repo { repository(owner: "acme", name: "widgets") { name } }'


def _paced(sandbox: Sandbox, forge: Forge) -> SharedClock:
    clock = SharedClock(sandbox)
    forge.transport.sleep = clock.sleep
    forge.transport.governor.now = clock
    return clock


def _installation(sandbox: Sandbox) -> dict[str, object]:
    return sandbox.secondary_stats()[f"installation:{sandbox.installation_id}"]


def test_a_burst_of_reads_waits_for_the_minute_instead_of_being_refused(
    sandbox: Sandbox, forge: Forge
) -> None:
    """760 reads of one repo (each a point, conditional or not) against a sandbox refusing
    over 720 points a minute: none refused, at most 720 in any minute, the excess waited."""
    sandbox.set_fidelity(rest_points_per_minute=720, points_per_minute=0)
    clock = _paced(sandbox, forge)
    forge.renew_token()
    sandbox.reset_counters()
    for _ in range(760):
        forge.session.http.get(f"/repos/{REPO}")
    stats = _installation(sandbox)
    assert stats["refused"] == {}
    assert stats["rest_points_max_minute"] <= 720
    assert sandbox.counters()["total"]["errors"] == 0
    assert clock.slept and sum(clock.slept) <= 61
    assert forge.transport.stats.paced >= 1


def test_writes_count_five_points(sandbox: Sandbox, forge: Forge) -> None:
    """150 label edits (750 points) within 720 a minute: the governor holds the last few."""
    sandbox.set_fidelity(rest_points_per_minute=720, points_per_minute=0)
    clock = _paced(sandbox, forge)
    forge.renew_token()
    forge.session.http.req("POST", f"/repos/{REPO}/labels", body={"name": "tide"})
    sandbox.reset_counters()
    for i in range(150):
        body = {"description": f"edit {i}"}
        forge.session.http.req("PATCH", f"/repos/{REPO}/labels/tide", body=body)
    stats = _installation(sandbox)
    assert stats["refused"] == {} and stats["rest_points_max_minute"] <= 720
    assert clock.slept


def test_graphql_points_have_their_own_minute(sandbox: Sandbox, forge: Forge) -> None:
    """A governor allowed 3 GraphQL points a minute, against a sandbox refusing the 4th: five
    queries all answered, REST reads in between not held up by them."""
    sandbox.set_fidelity(graphql_points_per_minute=3)
    forge.transport.governor = Governor(graphql_per_minute=3, sleep=forge.transport.governor.sleep)
    clock = _paced(sandbox, forge)
    forge.renew_token()
    for _ in range(5):
        with forge.session.http.requester() as rq:
            rq.graphql_query(QUERY, {})
        forge.session.http.get(f"/repos/{REPO}")
    stats = _installation(sandbox)
    assert stats["refused"] == {} and stats["graphql_points_max_minute"] <= 3
    assert len(clock.slept) == 1  # the 4th query waited for the minute; the reads never did


def test_one_request_in_flight_per_installation(sandbox: Sandbox, forge: Forge) -> None:
    """Eight threads reading at once (each answer 20 ms slow): GitHub sees one request of
    the installation in flight at a time."""
    forge.renew_token()
    sandbox.faults("GET", r"^/repos/acme/widgets", kind="delay", delay=0.02, count=10**6)
    sandbox.reset_counters()

    def reads() -> None:
        for _ in range(5):
            forge.session.http.get(f"/repos/{REPO}/labels")

    threads = [threading.Thread(target=reads) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sandbox.clear_faults()
    assert sandbox.counters()["total"]["errors"] == 0
    assert _installation(sandbox)["peak_inflight"] == 1


def test_another_installation_is_not_held_up(
    sandbox: Sandbox, make_forge: Callable[..., Forge]
) -> None:
    """A lane is per budget key: a spent minute of one key does not delay another's request."""
    governor = Governor(rest_per_minute=2, sleep=lambda s: None, now=lambda: 0.0)
    for _ in range(2):
        with governor.slot("5001", "GET", "/x", graphql=False) as waited:
            assert waited == 0
    with governor.slot("6002", "GET", "/x", graphql=False) as waited:
        assert waited == 0
    with governor.slot("5001", "GET", "/x", graphql=False) as waited:
        assert waited == 60


def test_the_window_frees_exactly_what_the_request_needs() -> None:
    """A write (5 points) into a full window waits for the oldest points that make room."""
    window = Window(10)
    for at in (0.0, 10.0, 20.0, 30.0, 40.0):
        window.add(at, 2)
    assert window.wait(45.0, 1) == 15.0  # the 2 points of t=0 leave at 60
    assert window.wait(45.0, 5) == 35.0  # 6 points must leave: t=0, 10, 20 → at 80
    assert rest_points("get") == 1 and rest_points("PUT") == 5
