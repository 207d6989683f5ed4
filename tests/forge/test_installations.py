"""Several App installations: each request carries the token of the installation on its account."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests

from capdaemon.config import GitHubConfig
from capdaemon.forge.client import Forge
from capdaemon.forge.errors import NotFound, NotInstalled
from capdaemon.forge.installations import RELIST_AFTER
from ghsandbox import CommitSpec, Person, Sandbox
from ghsandbox import testing as std
from tests.conftest import start_sandbox


@pytest.fixture
def two_orgs(tmp_path: Path, sandbox_keys: tuple[std.AppKeys, Path, Path]) -> Iterator[Sandbox]:
    """The standard sandbox plus org globex, where the App has a second installation."""
    sb = start_sandbox(tmp_path / "sandbox", sandbox_keys, extend=std.with_second_org)
    try:
        yield sb
    finally:
        sb.stop()


def _forge(sb: Sandbox, *, pinned: int | None = None, clock: object = None) -> Forge:
    cfg = GitHubConfig(
        base_url=sb.base_url,
        app_id=std.APP_ID,
        private_key_file=str(sb.app_key_path),  # type: ignore[attr-defined]
        installation_id=pinned,
    )
    return Forge.from_config(cfg, sleep=lambda _s: None, write_interval=0, clock=clock)  # type: ignore[arg-type]


def _open(sb: Sandbox, repo: str, files: dict[str, str | None], branch: str = "agent-1/x") -> int:
    sb.commit_files(repo, branch, files, "Change", author="agent-1", parent_branch="main")
    return sb.open_pr(repo, branch, "main", "A change", "body", "agent-1")


def _requests(sb: Sandbox, prefix: str) -> int:
    ends = sb.counters()["endpoints"]
    return sum(v["requests"] for k, v in ends.items() if k.startswith(prefix))


def test_each_account_is_read_and_written_with_its_own_installation(two_orgs: Sandbox) -> None:
    """One Forge with no installation configured serves repos of two organisations: reads (REST
    and the GraphQL batch query) and writes (a check run) each go with that organisation's
    installation token, and each installation's rate limit is tracked on its own."""
    sb = two_orgs
    a = _open(sb, std.REPO, {"docs/a.md": "# a\n"})
    g = _open(sb, std.SECOND_REPO, {"docs/g.md": "# g\n"})
    f = _forge(sb)
    try:
        assert [p.number for p in f.list_open_prs(std.REPO)] == [a]
        assert [p.number for p in f.list_open_prs(std.SECOND_REPO)] == [g]
        snap = f.snapshot(std.SECOND_REPO, g)
        assert [x.path for x in snap.files] == ["docs/g.md"]
        f.publish_check(
            std.SECOND_REPO,
            snap.head_sha,
            success=True,
            title="A",
            summary="ok",
            marker={"kind": "check"},
        )
        runs = [r for r in f.commit_checks(std.SECOND_REPO, snap.head_sha) if r.name == "L1.C3"]
        assert [(r.app_slug, r.app_id) for r in runs] == [(std.APP_SLUG, std.APP_ID)]
        assert f.snapshot(std.REPO, a).files[0].path == "docs/a.md"
        limits = {k: r.limit for k, r in f.transport.rates.items()}
        assert limits == {
            str(std.INSTALLATION_ID): 5000,
            str(std.SECOND_INSTALLATION_ID): std.SECOND_RATE_LIMIT,
        }
        left = f.rate_budget()["by_installation"]
        assert set(left) == {str(std.INSTALLATION_ID), str(std.SECOND_INSTALLATION_ID)}
        assert f.rate_budget()["limit"] == 5000  # the tighter of the two is what a tick plans by
        assert f.installations is not None
        assert f.installations.accounts() == {
            std.ORG: std.INSTALLATION_ID,
            std.SECOND_ORG: std.SECOND_INSTALLATION_ID,
        }
    finally:
        f.close()


def test_page_links_by_repository_id_stay_with_their_installation(two_orgs: Sandbox) -> None:
    """GitHub's `Link` URLs name a repository by id (`/repositories/{id}/pulls?page=2`), not by
    owner: the second page of globex's PRs must still go with globex's installation (with
    acme's token it is a 404, and the list would be refused as incomplete)."""
    sb = two_orgs
    main = sb.branch_sha(std.SECOND_REPO, "main")
    who = Person("agent-1", "agent-1@agents.example.com")
    when = datetime.now(UTC)
    specs = [
        CommitSpec(f"agent-1/p{i}", {f"docs/p{i}.md": f"{i}\n"}, f"P{i}", who, when, main)
        for i in range(101)
    ]
    sb.bulk_commits(std.SECOND_REPO, specs)
    sb.bulk_open_prs(
        std.SECOND_REPO,
        [{"head": s.branch, "base": "main", "title": s.message, "user": "agent-1"} for s in specs],
    )
    f = _forge(sb)
    f.batch_gathering = False  # the REST list: 100 a page, then a Link by repository id
    try:
        prs = f.list_open_prs(std.SECOND_REPO)
    finally:
        f.close()
    assert len(prs) == 101
    who_asked = sb.counters()["identities"]
    assert who_asked[f"installation:{std.SECOND_INSTALLATION_ID}"]["requests"] == 2  # 2 pages
    assert f"installation:{std.INSTALLATION_ID}" not in who_asked


def test_an_account_without_the_app_is_refused_before_any_request(two_orgs: Sandbox) -> None:
    """A repo on an account the App is not installed on fails as NotInstalled naming it, and no
    request with another installation's token is sent there; the installations are listed again
    only after RELIST_AFTER (an App installed meanwhile is found then)."""
    sb = two_orgs
    sb.create_repo(std.OUTSIDER, "tools", files={"README.md": "# tools\n"})
    now = [datetime.now(UTC)]
    f = _forge(sb, clock=lambda: now[0])
    try:
        sb.reset_counters()
        for _ in range(2):
            with pytest.raises(NotInstalled, match=f"not installed on '{std.OUTSIDER}'"):
                f.list_open_prs(f"{std.OUTSIDER}/tools")
        assert _requests(sb, "GET /app/installations") == 1
        assert _requests(sb, f"GET /repos/{std.OUTSIDER}") == 0
        assert _requests(sb, "POST /graphql") == 0
        now[0] += RELIST_AFTER + timedelta(seconds=1)
        with pytest.raises(NotInstalled):
            f.list_open_prs(f"{std.OUTSIDER}/tools")
        assert _requests(sb, "GET /app/installations") == 2
    finally:
        f.close()


def test_a_pinned_installation_is_used_for_every_account(two_orgs: Sandbox) -> None:
    """With `github.installation_id` set, every request goes with that installation's token:
    globex's repo is then simply not visible (404), and the installations are never listed."""
    sb = two_orgs
    g = _open(sb, std.SECOND_REPO, {"docs/g.md": "# g\n"})
    f = _forge(sb, pinned=std.INSTALLATION_ID)
    try:
        sb.reset_counters()
        with pytest.raises(NotFound) as refused:
            f.snapshot(std.SECOND_REPO, g)
        assert not isinstance(refused.value, NotInstalled)
        assert _requests(sb, "GET /app/installations") == 0
    finally:
        f.close()


def test_no_token_goes_to_another_host(two_orgs: Sandbox) -> None:
    """The Transport puts installation tokens on requests itself, so it must never put one on
    a request to another host (a redirect off the API, a link elsewhere): that request goes out
    without `Authorization`, while the same path on the API gets its installation's token."""
    seen: list[str | None] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization"))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    f = _forge(two_orgs)
    session = requests.Session()
    session.mount("http://", f.transport)
    try:
        elsewhere = f"http://127.0.0.1:{other.server_address[1]}/repos/{std.ORG}/widgets"
        assert session.get(elsewhere, timeout=10).status_code == 200
        own = session.get(f"{two_orgs.base_url}/repos/{std.REPO}", timeout=10)
        assert own.status_code == 200  # the API itself: authorized as acme's installation
    finally:
        other.shutdown()
        f.close()
    assert seen == [None]
