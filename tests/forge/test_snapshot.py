"""Snapshot gathering on the sandbox: pages, caps, modes, label events, check runs, base policy."""

from __future__ import annotations

from collections.abc import Callable

from capdaemon.forge.client import Forge, _from_patch, git_blob_sha
from capdaemon.model import MODE_SUBMODULE, MODE_SYMLINK, FileStatus
from ghsandbox import CommitSpec, Sandbox


def test_small_pr_snapshot_has_files_commits_modes_and_contents(
    sandbox: Sandbox, open_pr: Callable[..., int], forge: Forge
) -> None:
    """A small PR gives a complete snapshot: statuses, patches, parents, trailers, modes."""
    n = open_pr(
        {
            "src/widgets/core.py": "def add(a, b):\n    return b + a\n",
            "config/app.yml": "retries: 3\n",
            "tools/run.sh": {"content": "#!/bin/sh\necho hi\n", "mode": "100755"},
            "docs/guide.md": None,
        },
        message="Tweak\n\nAgent-Session: claude/opus-4/session-0001\nTask-Id: task-1\n",
    )
    snap = forge.snapshot(sandbox.repo, n)
    assert snap.files_complete and snap.commits_complete and snap.incomplete_reason is None
    by = {f.path: f for f in snap.files}
    assert by["src/widgets/core.py"].status is FileStatus.MODIFIED
    assert (
        by["src/widgets/core.py"].patch and "+    return b + a" in by["src/widgets/core.py"].patch
    )
    assert by["docs/guide.md"].status is FileStatus.REMOVED and by["docs/guide.md"].new_mode is None
    assert by["tools/run.sh"].modes == (None, "100755")
    assert (
        by["config/app.yml"].head_content == "retries: 3\n"
        and by["config/app.yml"].base_content is None
    )
    assert (
        by["src/widgets/core.py"].head_content is None
    )  # not a config/bot-source file: no content read
    (c,) = snap.commits
    assert c.parents == (sandbox.branch_sha(sandbox.repo, "main"),)
    assert "Agent-Session: claude/opus-4/session-0001" in c.message
    assert c.committed_at is not None and c.committed_at.tzinfo is not None
    assert snap.author == "agent-1" and snap.ref == f"{sandbox.repo}#{n}"


def test_symlink_submodule_and_mode_change_are_reported(
    sandbox: Sandbox, open_pr: Callable[..., int], forge: Forge
) -> None:
    """Modes come from the git trees: symlink 120000, submodule 160000, a 100644→100755 change."""
    sub_sha = sandbox.branch_sha(sandbox.repo, "main")
    n = open_pr(
        {
            "link": {"content": "README.md", "mode": "120000"},
            "vendor/lib": {"content": sub_sha, "mode": "160000"},
            "src/widgets/core.py": {
                "content": "def add(a, b):\n    return a + b\n",
                "mode": "100755",
            },
        }
    )
    snap = forge.snapshot(sandbox.repo, n)
    by = {f.path: f for f in snap.files}
    assert by["link"].new_mode == MODE_SYMLINK
    assert by["link"].head_content == "README.md"  # a link's target is always read
    assert by["vendor/lib"].new_mode == MODE_SUBMODULE
    assert by["src/widgets/core.py"].modes == ("100644", "100755")
    assert snap.files_complete


def test_many_pages_of_files_are_all_gathered(
    sandbox: Sandbox, open_pr: Callable[..., int], forge: Forge
) -> None:
    """A PR with 450 files (past compare's 300) is read page by page from the PR files API."""
    files = {f"data/f{i:04d}.txt": f"{i}\n" for i in range(450)}
    n = open_pr(files)
    sandbox.reset_counters()
    snap = forge.snapshot(sandbox.repo, n)
    assert snap.files_complete and len(snap.files) == 450
    assert {f.path for f in snap.files} == set(files)
    pages = sandbox.counters()["endpoints"]["GET /repos/{owner}/{repo}/pulls/{number}/files"][
        "requests"
    ]
    assert pages == 5


def test_file_cap_gives_incomplete_snapshot(
    sandbox: Sandbox, open_pr: Callable[..., int], forge: Forge
) -> None:
    """More than 3,000 changed files: GitHub lists 3,000, so the snapshot is marked incomplete."""
    n = open_pr({f"bulk/f{i:04d}.txt": "x\n" for i in range(3001)})
    snap = forge.snapshot(sandbox.repo, n)
    assert not snap.files_complete
    assert snap.incomplete_reason and "3000" in snap.incomplete_reason
    assert len(snap.files) == 3000


def test_commit_cap_gives_incomplete_snapshot(
    sandbox: Sandbox, open_pr: Callable[..., int], forge: Forge
) -> None:
    """More than 250 commits: the commit list is cut, so the snapshot is marked incomplete."""
    main = sandbox.branch_sha(sandbox.repo, "main")
    who = sandbox.backend.person("agent-1")
    specs = [
        CommitSpec(
            branch="many",
            files={"n.txt": f"{i}\n"},
            message=f"c{i}",
            author=who,
            when=sandbox.now(),
            parent=main if i == 0 else None,
        )
        for i in range(251)
    ]
    sandbox.bulk_commits(sandbox.repo, specs)
    n = sandbox.open_pr(sandbox.repo, "many", "main", "many commits", "", "agent-1")
    snap = forge.snapshot(sandbox.repo, n)
    assert not snap.commits_complete
    assert snap.incomplete_reason and "250" in snap.incomplete_reason


def test_label_events_carry_actors(
    sandbox: Sandbox, open_pr: Callable[..., int], forge: Forge, make_forge: Callable[..., Forge]
) -> None:
    """labeled/unlabeled events are gathered with who did them and when."""
    n = open_pr({"README.md": "# widgets!\n"})
    agent = make_forge(token=sandbox.tokens["agent-1"])
    owner = make_forge(token=sandbox.tokens[sandbox.owner])
    agent.add_labels(sandbox.repo, n, ["decision:auto-revert"])
    agent.remove_label(sandbox.repo, n, "decision:auto-revert")
    owner.add_labels(sandbox.repo, n, ["decision:auto-revert"])
    snap = forge.snapshot(sandbox.repo, n)
    assert snap.labels == ("decision:auto-revert",)
    seen = [(e.action, e.actor) for e in snap.label_events if e.label == "decision:auto-revert"]
    assert seen == [("labeled", "agent-1"), ("unlabeled", "agent-1"), ("labeled", sandbox.owner)]
    assert all(e.at.tzinfo is not None for e in snap.label_events)


def test_check_runs_from_two_apps(
    sandbox: Sandbox, open_pr: Callable[..., int], forge: Forge, make_forge: Callable[..., Forge]
) -> None:
    """Check runs on the head keep the App that published each (capdaemon vs another App)."""
    n = open_pr({"README.md": "# widgets?\n"})
    head = forge.snapshot(sandbox.repo, n).head_sha
    evil = make_forge(app="evil")
    evil.publish_check(
        sandbox.repo,
        head,
        success=True,
        title="Quadrant: A",
        summary="Quadrant: A",
        marker={"kind": "judgment"},
        name="classifier-judgment",
    )
    forge.publish_check(
        sandbox.repo, head, success=False, title="D", summary="pending", marker={"kind": "check"}
    )
    snap = forge.snapshot(sandbox.repo, n)
    apps = {(r.name, r.app_slug) for r in snap.check_runs}
    assert apps == {("classifier-judgment", "evil-app"), ("L1.C3", "capdaemon")}


def test_policy_is_read_from_base_branch_while_head_changes_it(
    sandbox: Sandbox, open_pr: Callable[..., int], forge: Forge
) -> None:
    """`.capdaemon.yml` comes from the base branch even when the PR rewrites it."""
    sandbox.commit_files(sandbox.repo, "main", {".capdaemon.yml": "owners: [alice]\n"}, "policy")
    n = open_pr({".capdaemon.yml": "owners: [mallory]\n"})
    snap = forge.snapshot(sandbox.repo, n)
    assert snap.base_policy_text == "owners: [alice]\n"
    assert any(f.path == ".capdaemon.yml" for f in snap.files)


def test_missing_policy_is_none(
    sandbox: Sandbox, open_pr: Callable[..., int], forge: Forge
) -> None:
    """No `.capdaemon.yml` on the base branch gives base_policy_text None, snapshot complete."""
    n = open_pr({"README.md": "# w\n"})
    snap = forge.snapshot(sandbox.repo, n)
    assert snap.base_policy_text is None and snap.files_complete


def test_modified_config_file_gets_base_and_head_content(
    sandbox: Sandbox, open_pr: Callable[..., int], forge: Forge
) -> None:
    """A modified config file carries both texts (blobs); an added one is rebuilt from its patch."""
    sandbox.commit_files(sandbox.repo, "main", {"config/a.toml": "x = 1\n"}, "base config")
    n = open_pr({"config/a.toml": "x = 2\ny = 3\n", "config/new.json": '{"a": 1}'})
    by = {f.path: f for f in forge.snapshot(sandbox.repo, n).files}
    assert by["config/a.toml"].base_content == "x = 1\n"
    assert by["config/a.toml"].head_content == "x = 2\ny = 3\n"
    assert by["config/new.json"].head_content == '{"a": 1}'  # no final newline survives the rebuild


def test_content_from_patch_is_only_trusted_when_the_blob_sha_matches() -> None:
    """An added file rebuilt from its patch must hash to its git blob sha, else None (fetch)."""
    patch = "@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file"
    assert _from_patch(patch, "+", git_blob_sha(b"a\nb")) == "a\nb"
    assert _from_patch(patch, "+", git_blob_sha(b"a\nb\n")) is None
    assert _from_patch(None, "+", git_blob_sha(b"")) is None
