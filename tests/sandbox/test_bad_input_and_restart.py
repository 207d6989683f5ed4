"""Bad input gets GitHub's error bodies; malformed seeds are refused; a restart keeps all data."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import requests

from ghsandbox import CommitSpec, Person, Sandbox, SeedError, load_seed

from .helpers import gh, settled_pull


def _post(sb: Any, path: str, data: bytes | str, login: str = "alice") -> requests.Response:
    return requests.post(
        f"{sb.base_url}{path}",
        data=data,
        timeout=5,
        headers={"Authorization": f"token {sb.tokens[login]}", "Content-Type": "application/json"},
    )


def test_malformed_json_is_a_400(sandbox: Any) -> None:
    """A body that is not JSON gets 400 'Problems parsing JSON' with a documentation_url."""
    r = _post(sandbox, "/repos/acme/widgets/issues", b"{not json")
    assert r.status_code == 400
    assert r.json()["message"] == "Problems parsing JSON"
    assert "documentation_url" in r.json()


def test_missing_and_mistyped_fields_are_422(sandbox: Any) -> None:
    """Missing title → missing_field; a number where a string is expected → invalid."""
    r = _post(sandbox, "/repos/acme/widgets/issues", '{"body": "no title"}')
    assert r.status_code == 422
    assert r.json()["message"] == "Validation Failed"
    assert r.json()["errors"] == [{"resource": "Issue", "field": "title", "code": "missing_field"}]
    r = _post(sandbox, "/repos/acme/widgets/pulls", '{"title": "t", "head": 5, "base": "main"}')
    assert r.status_code == 422
    assert r.json()["errors"] == [{"resource": "PullRequest", "field": "head", "code": "invalid"}]
    r = _post(
        sandbox, "/repos/acme/widgets/pulls", '{"title": "t", "head": "nope", "base": "main"}'
    )
    assert r.status_code == 422


def test_unknown_things_are_404(sandbox: Any) -> None:
    """Unknown repos, users, issues and routes are 404 Not Found with GitHub's body."""
    headers = {"Authorization": f"token {sandbox.tokens['alice']}"}
    for path in (
        "/repos/acme/nope",
        "/users/nobody",
        "/repos/acme/widgets/issues/999",
        "/no/such/route",
    ):
        r = requests.get(f"{sandbox.base_url}{path}", headers=headers, timeout=5)
        assert r.status_code == 404, path
        assert r.json()["message"] == "Not Found"
        assert r.json()["documentation_url"].startswith("https://docs.github.com/")


def test_duplicate_pr_and_empty_pr_are_refused(sandbox: Any) -> None:
    """A second PR for the same head, or a PR without commits, is a 422 like on GitHub."""
    sandbox.commit_files(
        "acme/widgets", "feat", {"x": "1\n"}, "x", author="agent-1", parent_branch="main"
    )
    sandbox.open_pr("acme/widgets", "feat", "main", "t", "", "agent-1")
    r = _post(
        sandbox,
        "/repos/acme/widgets/pulls",
        '{"title": "t", "head": "feat", "base": "main"}',
        "agent-1",
    )
    assert r.status_code == 422 and "already exists" in r.json()["errors"][0]["message"]
    sandbox.commit_files("acme/widgets", "empty", {}, "nothing", parent_branch="main")
    r = _post(
        sandbox,
        "/repos/acme/widgets/pulls",
        '{"title": "t", "head": "main", "base": "main"}',
        "agent-1",
    )
    assert r.status_code == 422


@pytest.mark.parametrize(
    ("seed", "key"),
    [
        ({"users": [{"token": "x"}]}, "users[0].login"),
        ({"users": [{"login": "a", "type": "Robot"}]}, "users[0].type"),
        ({"repos": [{"owner": "ghost", "name": "r"}]}, "repos[0].owner"),
        ({"apps": [{"id": "one", "slug": "s", "public_key": "x"}]}, "apps[0].id"),
        ({"apps": [{"id": 1, "slug": "s"}]}, "apps[0].public_key"),
        ({"rate_limit": {"core": "lots"}}, "rate_limit.core"),
        ({"colour": "blue"}, "<root>.colour"),
    ],
)
def test_malformed_seed_is_refused_naming_the_key(seed: dict[str, Any], key: str) -> None:
    """load_seed raises SeedError whose message names the offending key."""
    with pytest.raises(SeedError, match=key.replace("[", r"\[").replace("]", r"\]")):
        load_seed(seed)


def test_cli_refuses_a_bad_seed_file(tmp_path: Path) -> None:
    """`sandbox serve` with a malformed seed file exits 2 and names the key on stderr."""
    seed = tmp_path / "seed.yml"
    seed.write_text("users:\n  - login: alice\n    type: Martian\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from ghsandbox import cli_main; sys.exit(cli_main(sys.argv[1:]))",
            "serve",
            "--root",
            str(tmp_path / "s"),
            "--seed",
            str(seed),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 2
    assert "users[0].type" in proc.stderr


def test_cli_serves_and_prints_the_base_url_first(tmp_path: Path) -> None:
    """`sandbox serve --port 0` prints the base URL on its first line and answers REST calls."""
    seed = tmp_path / "seed.yml"
    seed.write_text(
        "users:\n  - {login: alice, token: tok-a}\nrepos:\n  - {owner: alice, name: demo}\n"
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from ghsandbox import cli_main; sys.exit(cli_main(sys.argv[1:]))",
            "serve",
            "--root",
            str(tmp_path / "s"),
            "--port",
            "0",
            "--seed",
            str(seed),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().strip()
        assert base.startswith("http://127.0.0.1:")
        r = requests.get(
            f"{base}/repos/alice/demo", headers={"Authorization": "token tok-a"}, timeout=5
        )
        assert r.json()["default_branch"] == "main"
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


def test_restart_keeps_data_and_tokens(sandbox: Any) -> None:
    """After stop/start on the same root: PRs, issues, comments, labels, refs survive."""
    sandbox.commit_files(
        "acme/widgets", "feat", {"x.py": "1\n"}, "x", author="agent-1", parent_branch="main"
    )
    number = sandbox.open_pr("acme/widgets", "feat", "main", "Keep me", "", "agent-1")
    repo = gh(sandbox, "alice").get_repo("acme/widgets")
    issue = repo.create_issue("Ballot", labels=["decision:pending-owner"])
    issue.create_comment("/approve A")
    head = repo.get_pull(number).head.sha
    root, seed = sandbox.state_dir, sandbox.seed
    sandbox.stop()
    again = Sandbox.start(root, seed)
    try:
        again.tokens = sandbox.tokens
        repo2 = gh(again, "alice").get_repo("acme/widgets")
        pr = settled_pull(repo2, number)
        assert (pr.title, pr.head.sha, pr.mergeable) == ("Keep me", head, True)
        issue2 = repo2.get_issue(issue.number)
        assert [c.body for c in issue2.get_comments()] == ["/approve A"]
        assert [lab.name for lab in issue2.labels] == ["decision:pending-owner"]
        assert len(repo2.get_issues(state="all").get_page(0)) == 2, "the seed is not applied twice"
        assert repo2.get_contents("README.md").decoded_content.startswith(b"# widgets")
    finally:
        again.stop()


def test_corrupt_state_refuses_to_start(tmp_path: Path) -> None:
    """A corrupt state.json is never overwritten: start fails with a message naming the file."""
    root = tmp_path / "s"
    root.mkdir()
    (root / "state.json").write_text("{truncated")
    from ghsandbox import StoreError

    with pytest.raises(StoreError, match=r"state\.json"):
        Sandbox.start(root, None)
    assert (root / "state.json").read_text() == "{truncated"


def test_github_limits_on_files_and_commits(sandbox: Any) -> None:
    """A PR lists at most 3,000 files and 250 commits, like GitHub."""
    when = datetime(2026, 1, 1, tzinfo=UTC)
    who = Person("Agent One", "agent-1@agents.example.com")
    base = sandbox.branch_sha("acme/widgets", "main")
    specs = [
        CommitSpec(
            branch="big",
            files={f"gen/f{i:04}.txt": f"{i}\n" for i in range(3050)},
            message="many files",
            author=who,
            when=when,
            parent=base,
        )
    ]
    specs += [
        CommitSpec(
            branch="big", files={"counter.txt": f"{i}\n"}, message=f"c{i}", author=who, when=when
        )
        for i in range(259)
    ]
    sandbox.bulk_commits("acme/widgets", specs)
    number = sandbox.open_pr("acme/widgets", "big", "main", "Big", "", "agent-1")
    pr = gh(sandbox, "alice", per_page=100).get_repo("acme/widgets").get_pull(number)
    assert pr.changed_files == 3051 and pr.commits == 260
    assert pr.get_files().totalCount == 3000
    assert pr.get_commits().totalCount == 250
