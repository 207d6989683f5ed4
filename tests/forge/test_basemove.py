"""A compare carried to a new base commit only when git itself gives the same merge base."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from capdaemon.forge.basemove import carried_compare
from capdaemon.forge.client import Forge
from capdaemon.forge.session import Compared
from ghsandbox import Sandbox

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


class Repo:
    """A scratch git repository whose commits each add one file to their first parent's."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.files: dict[str, dict[str, str]] = {}
        self.parents: dict[str, tuple[str, ...]] = {}
        self.git("init", "-q")

    def git(self, *args: str, stdin: str | None = None) -> str:
        return subprocess.run(
            ["git", "-C", str(self.path), *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=True,
            env=ENV,
        ).stdout.strip()

    def commit(self, parents: tuple[str, ...], name: str) -> str:
        files = dict(self.files[parents[0]]) if parents else {}
        files[name] = name + "\n"
        entries = "".join(
            f"100644 blob {self.git('hash-object', '-w', '--stdin', stdin=text)}\t{path}\n"
            for path, text in sorted(files.items())
        )
        tree = self.git("mktree", stdin=entries)
        args = [a for p in parents for a in ("-p", p)]
        sha = self.git("commit-tree", tree, *args, "-m", name)
        self.files[sha], self.parents[sha] = files, parents
        return sha

    def compare(self, base: str, head: str) -> Compared | None:
        """What GitHub's `base...head` gives (commits and merge base), from git."""
        try:
            mb = self.git("merge-base", base, head)
        except subprocess.CalledProcessError:
            return None
        shas = self.git("rev-list", head, f"^{mb}").split()
        return {
            "files": [],
            "commits": [{"sha": s} for s in shas],
            "total_commits": len(shas),
            "merge_base": mb,
        }


dags = st.lists(st.tuples(st.integers(0, 100), st.integers(-1, 100)), min_size=1, max_size=6)


@settings(max_examples=40, deadline=None)
@given(
    history=dags,
    x_pick=st.integers(0, 100),
    chain_len=st.integers(1, 3),
    after=st.lists(st.tuples(st.integers(0, 100), st.integers(-1, 100)), max_size=4),
    h_pick=st.integers(0, 100),
)
def test_carried_only_when_git_gives_the_same_merge_base(
    history: list[tuple[int, int]],
    x_pick: int,
    chain_len: int,
    after: list[tuple[int, int]],
    h_pick: int,
) -> None:
    """Random histories (merges included), a base X moved along a chain of single-parent
    commits to Y, a head H anywhere (on the chain too): the compare of X...H is carried to
    Y...H exactly when git's merge bases of (Y, H) and (X, H) are the same and the diffs
    from them to H are equal."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = Repo(Path(tmp))
        shas = [repo.commit((), "root")]

        def grow(steps: list[tuple[int, int]], tag: str) -> None:
            for i, (a, b) in enumerate(steps):
                first = shas[a % len(shas)]
                second = shas[b % len(shas)] if b >= 0 else None
                parents = (first,) if second in (None, first) else (first, second)
                shas.append(repo.commit(parents, f"{tag}{i}"))

        grow(history, "h")
        x = shas[x_pick % len(shas)]
        chain = [x]
        for i in range(chain_len):
            chain.append(repo.commit((chain[-1],), f"c{i}"))
        shas.extend(chain[1:])
        grow(after, "a")
        y, head = chain[-1], shas[h_pick % len(shas)]
        known = repo.compare(x, head)
        got = carried_compare(
            y,
            head,
            repo.parents.get,
            lambda older, h: known if (older, h) == (x, head) else None,
        )
        on_chain = any(_is_ancestor(repo, c, head) for c in chain[1:])
        assert (got is not None) == (known is not None and not on_chain)
        if got is not None:
            both = [sorted(repo.git("merge-base", "--all", b, head).split()) for b in (x, y)]
            assert both[0] == both[1]
            diffs = [repo.git("diff", "--name-status", f"{b}...{head}") for b in (x, y)]
            assert diffs[0] == diffs[1]


def _is_ancestor(repo: Repo, commit: str, head: str) -> bool:
    try:
        repo.git("merge-base", "--is-ancestor", commit, head)
    except subprocess.CalledProcessError:
        return False
    return True


def test_a_merge_commit_on_the_base_carries_nothing() -> None:
    """Only single-parent steps are walked: a two-parent base commit means a read."""
    compared: Compared = {"files": [], "commits": [], "total_commits": 0, "merge_base": "m"}
    parents = {"y": ("x", "z")}
    assert carried_compare("y", "h", parents.get, lambda _b, _h: compared) is None


def test_a_cut_commit_list_carries_nothing() -> None:
    """A compare whose commit list GitHub cut (over 250) cannot prove the head is not built on
    the new base commit."""
    cut: Compared = {
        "files": [],
        "commits": [{"sha": "c"}],
        "total_commits": 300,
        "merge_base": "m",
    }
    assert carried_compare("y", "h", {"y": ("x",)}.get, lambda _b, _h: cut) is None


def _endpoint_requests(sandbox: Sandbox, name: str) -> int:
    return int(sandbox.counters()["endpoints"].get(name, {}).get("requests", 0))


def test_a_pr_is_judged_at_the_base_its_neighbour_squashed_onto_without_a_compare(
    forge: Forge, make_forge: Callable[..., Forge], sandbox: Sandbox
) -> None:
    """Two PRs from main; the first is squash-merged (its merge commit checked on main, as the
    daemon does). The second, listed at the new base, is read with no compare, no tree and no
    blob request, and its snapshot is the one a fresh forge reads."""
    repo = sandbox.repo
    sandbox.commit_files(repo, "one", {"docs/one.md": "1\n"}, "one", parent_branch="main")
    sandbox.commit_files(repo, "two", {"docs/two.md": "2\n"}, "two", parent_branch="main")
    n1 = sandbox.open_pr(repo, "one", "main", "one")
    n2 = sandbox.open_pr(repo, "two", "main", "two")
    forge.new_tick()
    forge.list_open_prs(repo, "main")
    forge.snapshot(repo, n2)
    head1 = forge.snapshot(repo, n1).head_sha
    merged = forge.merge(repo, n1, head1, "squash", base="main")
    assert forge.branch_contains(repo, "main", merged)
    sandbox.reset_counters()
    forge.new_tick()
    forge.list_open_prs(repo, "main")
    got = forge.snapshot(repo, n2)
    assert got.base_sha == merged
    seen = {k for k, v in sandbox.counters()["endpoints"].items() if v["requests"]}
    assert not [k for k in seen if "/compare/" in k or "/git/" in k or "/files" in k], seen
    fresh = make_forge(app=True).snapshot(repo, n2)
    assert (got.files, got.commits, got.files_complete, got.commits_complete) == (
        fresh.files,
        fresh.commits,
        fresh.files_complete,
        fresh.commits_complete,
    )
    assert got.files_complete and {f.path for f in got.files} == {"docs/two.md"}


def test_a_head_built_on_the_new_base_commit_is_compared_again(
    forge: Forge, make_forge: Callable[..., Forge], sandbox: Sandbox
) -> None:
    """Attack on the carry: the agent's head contains the commit the base then moves to (the
    compare at the old base lists it). The carry is refused: a compare is read, and what the
    PR is judged on is GitHub's answer at the new base, not the old one."""
    repo = sandbox.repo
    old = sandbox.branch_sha(repo, "main")
    y = sandbox.commit_files(repo, "next", {"docs/y.md": "y\n"}, "y", parent_branch="main")
    sandbox.commit_files(repo, "next", {"src/x.py": "x = 1\n"}, "more")
    n = sandbox.open_pr(repo, "next", "main", "built on y")
    forge.new_tick()
    forge.list_open_prs(repo, "main")
    before = forge.snapshot(repo, n)
    assert before.base_sha == old and {f.path for f in before.files} == {"docs/y.md", "src/x.py"}
    sandbox.backend.git(repo).update_ref("refs/heads/main", y, old)
    sandbox.backend.after_push(repo)
    forge.commit_parents(repo, y)
    sandbox.reset_counters()
    forge.new_tick()
    forge.list_open_prs(repo, "main")
    got = forge.snapshot(repo, n)
    assert got.base_sha == y
    assert _endpoint_requests(sandbox, "GET /repos/{owner}/{repo}/compare/{basehead}") == 1
    # one whole compare at the new base: not a carried answer GitHub's counts then disown
    assert _endpoint_requests(sandbox, "GET /repos/{owner}/{repo}/pulls/{number}/files") == 0
    assert {f.path for f in got.files} == {"src/x.py"}
    assert got.files == make_forge(app=True).snapshot(repo, n).files
