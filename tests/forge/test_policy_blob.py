"""`.capdaemon.yml` at a new base commit: read only when its blob changed (the tick's page says
which blob it is), and the page's answer is git's own."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import github
from github import Auth

from capdaemon.forge.client import Forge
from ghsandbox import Sandbox

POLICY_READS = (
    "GET /repos/{owner}/{repo}/contents/{path}",
    "GET /repos/{owner}/{repo}/git/blobs/{sha}",
)
FILE_QUERY = """
query($owner: String!, $name: String!, $oid: GitObjectID!, $path: String!) {
  repository(owner: $owner, name: $name) {
    object(oid: $oid) { ... on Commit { file(path: $path) { oid mode type path name } } }
  }
}"""


def _policy_reads(sandbox: Sandbox) -> int:
    seen = sandbox.counters()["endpoints"]
    return sum(seen.get(k, {}).get("requests", 0) for k in POLICY_READS)


def _tick_policy(forge: Forge, sandbox: Sandbox) -> str | None:
    forge.new_tick()
    forge.list_open_prs(sandbox.repo, "main")
    return forge.policy_text(sandbox.repo, "main")


def test_a_new_base_commit_reads_the_policy_only_when_the_file_changed(
    forge: Forge, sandbox: Sandbox, open_pr: Callable[..., int]
) -> None:
    """Three base commits: the file added (read once), another file changed (no read: same
    blob), the file tightened (read again, and the new text is what the tick sees)."""
    open_pr({"docs/a.md": "a\n"})
    sandbox.commit_files(sandbox.repo, "main", {".capdaemon.yml": "version: 1\n"}, "policy")
    sandbox.reset_counters()
    assert _tick_policy(forge, sandbox) == "version: 1\n"
    assert _policy_reads(sandbox) == 1
    sandbox.commit_files(sandbox.repo, "main", {"docs/b.md": "b\n"}, "unrelated")
    sandbox.reset_counters()
    assert _tick_policy(forge, sandbox) == "version: 1\n"
    assert _policy_reads(sandbox) == 0
    tighter = "version: 1\ncritical_paths: ['docs/**']\n"
    sandbox.commit_files(sandbox.repo, "main", {".capdaemon.yml": tighter}, "tighten")
    sandbox.reset_counters()
    assert _tick_policy(forge, sandbox) == tighter
    assert _policy_reads(sandbox) == 1


def test_a_branch_without_the_file_costs_no_read(
    forge: Forge, sandbox: Sandbox, open_pr: Callable[..., int]
) -> None:
    """No `.capdaemon.yml` on the base: known from the page (GitHub counts every 404)."""
    open_pr({"docs/a.md": "a\n"})
    sandbox.commit_files(sandbox.repo, "main", {"docs/b.md": "b\n"}, "move the base")
    sandbox.reset_counters()
    assert _tick_policy(forge, sandbox) is None
    assert _policy_reads(sandbox) == 0


def test_a_linked_policy_file_is_read_as_before(
    forge: Forge, make_forge: Callable[..., Forge], sandbox: Sandbox, open_pr: Callable[..., int]
) -> None:
    """A link named `.capdaemon.yml` is not a plain file: the page's blob is not trusted for
    it; the tick reads it the REST way, and sees what a forge without the page sees."""
    open_pr({"docs/a.md": "a\n"})
    link = {"content": "docs/policy.yml", "mode": "120000"}
    files = {"docs/policy.yml": "version: 1\n", ".capdaemon.yml": link}
    sandbox.commit_files(sandbox.repo, "main", files, "linked policy")
    sandbox.reset_counters()
    got = _tick_policy(forge, sandbox)
    seen = sandbox.counters()["endpoints"]
    assert seen.get(POLICY_READS[0], {}).get("requests", 0) == 1
    assert got == make_forge(app=True).policy_text(sandbox.repo, "main")


def test_commit_file_answers_what_git_ls_tree_says(sandbox: Sandbox) -> None:
    """The sandbox's `Commit.file` against git itself: a file, an executable, a link, a
    directory and a missing path at one commit."""
    files = {
        "a.yml": "x: 1\n",
        "bin/run": {"content": "#!/bin/sh\n", "mode": "100755"},
        "link": {"content": "a.yml", "mode": "120000"},
    }
    sha = sandbox.commit_files(sandbox.repo, "main", files, "entries")
    gh = github.Github(base_url=sandbox.base_url, auth=Auth.Token(sandbox.tokens[sandbox.owner]))
    owner, name = sandbox.repo.split("/")
    git_dir = sandbox.backend.git(sandbox.repo).path
    for path in ("a.yml", "bin/run", "link", "bin", "missing.yml"):
        variables = {"owner": owner, "name": name, "oid": sha, "path": path}
        _headers, data = gh.requester.graphql_query(FILE_QUERY, variables)
        got = data["data"]["repository"]["object"]["file"]
        out = subprocess.run(
            ["git", "--git-dir", str(git_dir), "ls-tree", sha, "--", path],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        if not out:
            assert got is None, path
            continue
        mode, typ, oid = out.split("\t")[0].split()
        assert got == {
            "oid": oid,
            "mode": int(mode, 8),
            "type": typ,
            "path": path,
            "name": path.rsplit("/", 1)[-1],
        }
