"""capdaemon.gitdiff on real temporary git repositories."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from capdaemon.gitdiff import GitError, diff_range, merge_base, resolve
from capdaemon.gitlog import commits_range, read_file
from capdaemon.model import MODE_SUBMODULE, MODE_SYMLINK, FileStatus


def _by_path(files):
    return {f.path: f for f in files}


def test_modified_file_has_counts_and_github_style_patch(repo):
    """A one-line edit: status modified, 1/1 counts, patch is the hunk text starting at @@."""
    repo.write("README.md", "# Widgets\n\nThis project makes widgets.\n")
    repo.commit("typo")
    (f,) = diff_range(repo.path, "main", "feat")
    assert (f.path, f.status, f.additions, f.deletions) == ("README.md", FileStatus.MODIFIED, 1, 1)
    assert f.patch.startswith("@@ ")
    assert "-This projet makes widgets." in f.patch and "+This project makes widgets." in f.patch
    assert not f.patch.endswith("\n")
    assert (f.old_mode, f.new_mode) == ("100644", "100644")


def test_added_and_deleted_files(repo):
    """Additions carry no old mode; deletions carry no new mode and status removed."""
    repo.write("examples/new_demo.py", "print('new')\n")
    repo.remove("examples/old.py")
    repo.commit("add and delete")
    files = _by_path(diff_range(repo.path, "main", "feat"))
    new, old = files["examples/new_demo.py"], files["examples/old.py"]
    assert (new.status, new.old_mode, new.new_mode, new.additions) == (
        FileStatus.ADDED,
        None,
        "100644",
        1,
    )
    assert (old.status, old.old_mode, old.new_mode, old.deletions) == (
        FileStatus.REMOVED,
        "100644",
        None,
        1,
    )


def test_rename_keeps_both_paths(repo):
    """A rename lists the new path with previous_path set to the old one."""
    repo.git("mv", "examples/old.py", "examples/renamed.py")
    repo.commit("rename")
    (f,) = diff_range(repo.path, "main", "feat")
    assert (f.status, f.path, f.previous_path) == (
        FileStatus.RENAMED,
        "examples/renamed.py",
        "examples/old.py",
    )
    assert f.patch == ""


def test_copy_is_detected_with_its_source(repo):
    """A copy of a file modified in the same range is status copied with previous_path."""
    body = "".join(f"line {i}\n" for i in range(40))
    repo.write("lib/a.py", body)
    repo.commit("base lib")
    repo.git("branch", "-f", "main", "HEAD")
    repo.write("lib/a.py", body + "extra\n")
    repo.write("lib/b.py", body)
    repo.commit("copy")
    files = _by_path(diff_range(repo.path, "main", "feat"))
    assert files["lib/b.py"].status is FileStatus.COPIED
    assert files["lib/b.py"].previous_path == "lib/a.py"
    assert files["lib/a.py"].status is FileStatus.MODIFIED


def test_symlink_mode(repo):
    """A new symlink carries mode 120000 and its target as content."""
    repo.symlink("link-to-readme", "README.md")
    repo.commit("link")
    (f,) = diff_range(repo.path, "main", "feat", contents_for=lambda p: True)
    assert (f.status, f.new_mode, f.head_content) == (FileStatus.ADDED, MODE_SYMLINK, "README.md")


def test_submodule_pointer(repo):
    """A gitlink (160000) entry is reported with the submodule mode and no content."""
    sha = "1234567890abcdef1234567890abcdef12345678"
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{sha},vendor/lib")
    repo.commit("submodule")
    (f,) = diff_range(repo.path, "main", "feat", contents_for=lambda p: True)
    assert (f.path, f.new_mode, f.head_content) == ("vendor/lib", MODE_SUBMODULE, None)
    assert f"Subproject commit {sha}" in f.patch


def test_submodule_pointer_change_is_modified_between_gitlinks(repo):
    """Moving a submodule pointer keeps mode 160000 on both sides."""
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{'a' * 40},vendor/lib")
    repo.commit("submodule")
    repo.git("branch", "-f", "main", "HEAD")
    repo.git("update-index", "--cacheinfo", f"160000,{'b' * 40},vendor/lib")
    repo.commit("bump")
    (f,) = diff_range(repo.path, "main", "feat")
    assert (f.status, f.old_mode, f.new_mode) == (
        FileStatus.MODIFIED,
        MODE_SUBMODULE,
        MODE_SUBMODULE,
    )


def test_mode_only_change_is_changed(repo):
    """chmod +x with no content change is status changed with both modes."""
    (repo.path / "app/main.py").chmod(0o755)
    repo.git("add", "app/main.py")
    repo.commit("exec")
    (f,) = diff_range(repo.path, "main", "feat")
    assert (f.status, f.old_mode, f.new_mode, f.patch) == (
        FileStatus.CHANGED,
        "100644",
        "100755",
        "",
    )


def test_type_change_file_to_symlink_is_changed(repo):
    """A file replaced by a symlink (git T) is status changed; the patch joins both halves."""
    repo.remove("app/main.py")
    repo.symlink("app/main.py", "../README.md")
    repo.commit("typechange")
    (f,) = diff_range(repo.path, "main", "feat")
    assert (f.status, f.old_mode, f.new_mode) == (FileStatus.CHANGED, "100644", MODE_SYMLINK)
    assert "-print('hi')" in f.patch and "+../README.md" in f.patch


def test_binary_file_has_no_patch(repo):
    """A binary file's patch is None (unavailable) and its contents are not read as text."""
    repo.write("img/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00binary")
    repo.commit("logo")
    (f,) = diff_range(repo.path, "main", "feat", contents_for=lambda p: True)
    assert (f.path, f.patch, f.head_content, f.additions) == ("img/logo.png", None, None, 0)


@pytest.mark.parametrize(
    "name",
    ["docs/with space.md", "docs/ünïcödé 한국어.md", "docs/new\nline.md", 'docs/quo"te\\.md'],
)
def test_odd_paths_survive(repo, name):
    """Paths with spaces, Unicode, newlines, quotes and backslashes come back byte-exact."""
    repo.write(name, "hello\n")
    repo.write("README.md", "changed\n")
    repo.commit("odd path")
    files = _by_path(diff_range(repo.path, "main", "feat", contents_for=lambda p: True))
    assert set(files) == {name, "README.md"}
    assert files[name].patch == "@@ -0,0 +1 @@\n+hello"
    assert files[name].head_content == "hello\n"
    assert files["README.md"].patch.startswith("@@ ")


def test_odd_path_rename(repo):
    """A rename into a path with a newline keeps both paths."""
    repo.git("mv", "examples/old.py", "examples/ol\nd é.py")
    repo.commit("rename")
    (f,) = diff_range(repo.path, "main", "feat")
    assert (f.previous_path, f.path) == ("examples/old.py", "examples/ol\nd é.py")


def test_contents_only_where_asked(repo):
    """base/head contents are read only for the paths contents_for accepts, and for modified
    files whose hunks look like comment edits (the comment-only carve-out reads them whole)."""
    repo.write("README.md", "new readme\n")
    repo.write("app/main.py", "# entry point\nprint('hi')\n")
    repo.commit("two")
    files = _by_path(diff_range(repo.path, "main", "feat", contents_for=lambda p: p == "README.md"))
    assert files["README.md"].base_content.startswith("# Widgets")
    assert files["README.md"].head_content == "new readme\n"
    assert files["app/main.py"].base_content is not None  # comment-only candidate: read whole
    assert files["app/main.py"].head_content == "# entry point\nprint('hi')\n"
    repo.write("app/main.py", "# entry point\nprint('bye')\n")
    repo.commit("code")
    files = _by_path(diff_range(repo.path, "main", "feat", contents_for=lambda p: p == "README.md"))
    assert files["app/main.py"].base_content is None and files["app/main.py"].head_content is None


def test_patches_off(repo):
    """patches=False leaves every patch None but keeps the counts."""
    repo.write("README.md", "x\n")
    repo.commit("x")
    (f,) = diff_range(repo.path, "main", "feat", patches=False)
    assert f.patch is None and f.additions == 1


def test_range_is_from_the_merge_base(repo):
    """Commits that land on base after the fork do not show up (base...head semantics)."""
    repo.write("README.md", "feature\n")
    repo.commit("feature")
    repo.git("switch", "-q", "main")
    repo.write("examples/later.py", "x\n")
    later = repo.commit("later on main")
    files = diff_range(repo.path, "main", "feat")
    assert [f.path for f in files] == ["README.md"]
    assert merge_base(repo.path, "main", "feat") != later


def test_empty_range(repo):
    """An empty commit gives no files and one commit."""
    repo.commit("nothing", allow_empty=True)
    assert diff_range(repo.path, "main", "feat") == []
    assert len(commits_range(repo.path, "main", "feat")) == 1


def test_many_files_one_patch_run(repo):
    """300 files come back in order, each with its own patch."""
    for i in range(300):
        repo.write(f"gen/f{i:03}.txt", f"v {i}\n")
    repo.commit("many")
    files = diff_range(repo.path, "main", "feat")
    assert len(files) == 300
    assert all(f.patch == f"@@ -0,0 +1 @@\n+v {int(f.path[5:8])}" for f in files)


def test_commits_range_fields(repo):
    """Commits come oldest first with parents, full message (trailers kept) and aware dates."""
    first = repo.commit("first\n\nbody line", allow_empty=True)
    second = repo.commit(
        "second\n\nAgent-Session: claude-code/claude-opus-4/sess-12345678", allow_empty=True
    )
    commits = commits_range(repo.path, "main", "feat")
    assert [c.sha for c in commits] == [first, second]
    assert commits[1].parents == (first,)
    assert commits[0].message == "first\n\nbody line"
    assert commits[1].message.endswith("Agent-Session: claude-code/claude-opus-4/sess-12345678")
    c = commits[0]
    assert (c.author_name, c.author_email, c.committer_email) == (
        "Ada Agent",
        "ada@example.com",
        "ada@example.com",
    )
    assert isinstance(c.authored_at, datetime) and c.authored_at.tzinfo is not None
    assert c.committed_at.utcoffset() is not None


def test_unknown_revision_names_ref_and_repo(repo):
    """A missing ref raises GitError naming the ref and the repository."""
    with pytest.raises(GitError, match=r"unknown revision 'nope' in .*widgets"):
        diff_range(repo.path, "main", "nope")


def test_option_like_ref_is_refused(repo):
    """A ref that looks like a git option is refused before git sees it."""
    with pytest.raises(GitError, match="invalid revision"):
        resolve(repo.path, "--output=/tmp/x")


def test_not_a_git_repository(tmp_path: Path):
    """A plain folder raises GitError 'not a git repository: DIR'."""
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(GitError, match=r"not a git repository: .*plain"):
        resolve(plain, "HEAD")


def test_missing_directory(tmp_path: Path):
    """A folder that does not exist raises GitError naming it."""
    with pytest.raises(GitError, match="not a git repository"):
        diff_range(tmp_path / "absent", "main", "HEAD")


def test_read_file_at_revision(repo):
    """read_file returns a file's text at a revision, None when absent there."""
    repo.write("README.md", "head version\n")
    repo.commit("x")
    assert read_file(repo.path, "main", "README.md").startswith("# Widgets")
    assert read_file(repo.path, "feat", "README.md") == "head version\n"
    assert read_file(repo.path, "main", ".capdaemon.yml") is None


def test_counts_from_patch_match_numstat(repo):
    """Counts taken from the patch equal git's --numstat counts (patches=False path)."""
    repo.write("README.md", "a\nb\nc\n")
    repo.git("mv", "examples/old.py", "examples/moved.py")
    repo.write("examples/moved.py", "print('old')\nprint('more')\n")
    repo.write("img/x.bin", b"\x00\x01\x02")
    repo.remove("app/main.py")
    repo.symlink("app/main.py", "../README.md")
    repo.commit("mix")
    with_patch = diff_range(repo.path, "main", "feat")
    numstat = diff_range(repo.path, "main", "feat", patches=False)
    assert [(f.path, f.additions, f.deletions) for f in with_patch] == [
        (f.path, f.additions, f.deletions) for f in numstat
    ]


def test_resolve_many_names_the_bad_ref(repo):
    """Resolving several refs at once still names exactly the missing one."""
    with pytest.raises(GitError, match="unknown revision 'ghost'"):
        diff_range(repo.path, "ghost", "feat")


def test_rename_contents_read_the_previous_blob(repo):
    """For a renamed file the base content is the old path's text, the head content the new."""
    repo.git("mv", "examples/old.py", "examples/new.py")
    repo.write("examples/new.py", "print('old')\nprint('new')\n")
    repo.commit("rename + edit")
    (f,) = diff_range(repo.path, "main", "feat", contents_for=lambda p: True)
    assert f.previous_path == "examples/old.py"
    assert (f.base_content, f.head_content) == ("print('old')\n", "print('old')\nprint('new')\n")
