"""The changed-path set of a range never shrinks whatever the checkout's `.git/` holds (config,
included files, info/, shallow, replace refs) or its `.gitmodules`/`.gitattributes` say: the
oracle is git itself on a pristine bare clone made before the checkout was touched."""

from __future__ import annotations

import os
import subprocess
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capdaemon.gitdiff import GitError, diff_range
from capdaemon.gitlog import commits_range

from .conftest import GitRepo, classify_cli

OLD_LINK, NEW_LINK = "1" * 40, "2" * 40
_PRISTINE = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
             "HOME": os.devnull, "XDG_CONFIG_HOME": os.devnull}  # fmt: skip

_OPTIONS = [
    "[diff]\n\tignoreSubmodules = all\n",
    "[diff]\n\tignoreSubmodules = dirty\n",
    "[diff]\n\trenames = copies\n\tnoprefix = true\n",
    "[diff]\n\texternal = /bin/false\n",
    '[submodule "lib"]\n\tignore = all\n',
    '[submodule "lib"]\n\tpath = elsewhere\n',
    "[core]\n\tbigFileThreshold = 1\n",
    "[core]\n\tquotepath = on\n\tignoreCase = true\n",
    "[core]\n\tattributesFile = agent.attributes\n",
    "[core]\n\tfsmonitor = false\n\tcommitGraph = true\n\tuseReplaceRefs = true\n",
    "[status]\n\tsubmoduleSummary = true\n\tshowUntrackedFiles = no\n",
    "[log]\n\tshowSignature = true\n",
]
_GITMODULES = st.one_of(
    st.just(None),
    st.sampled_from(["all", "dirty", "untracked", "none"]).map(
        lambda v: f'[submodule "lib"]\n\tpath = vendor/lib\n\turl = ../lib\n\tignore = {v}\n'
    ),
)
_ATTRIBUTES = st.sampled_from(["", "* -diff\n", "* binary\n", "*.txt diff=agent\n", "* -text\n"])


def _pristine_paths(bare: Path, base: str, head: str) -> set[str]:
    """git's own changed paths on a bare clone with no configuration at all."""
    out = subprocess.run(
        ["git", f"--git-dir={bare}", "diff", "--name-only", "-z", "--no-renames",
         "--ignore-submodules=none", f"{base}...{head}"],
        capture_output=True, env=_PRISTINE, check=True,
    ).stdout  # fmt: skip
    return {p.decode() for p in out.split(b"\0") if p}


def _build(root: Path, base_modules: str | None, head_modules: str | None, attrs: str):
    """main: files, a gitlink, optional .gitmodules/.gitattributes; feat: edits, a deletion,
    a rename, the gitlink bumped, optional .gitmodules change. Returns (repo, base, c1, head)."""
    r = GitRepo(root / "w")
    r.write("a.txt", "one\n" * 20)
    r.write("dir/b.txt", "two\n")
    r.write("dir/gone.txt", "bye\n")
    r.write("keep/moved.py", "".join(f"x{i} = {i}\n" for i in range(30)))
    if base_modules is not None:
        r.write(".gitmodules", base_modules)
    if attrs:
        r.write(".gitattributes", attrs)
    r.git("update-index", "--add", "--cacheinfo", f"160000,{OLD_LINK},vendor/lib")
    base = r.commit("base")
    r.branch("feat")
    r.write("a.txt", "one\n" * 19 + "uno\n")
    r.remove("dir/gone.txt")
    r.git("mv", "keep/moved.py", "keep/renamed.py")
    c1 = r.commit("edits")
    r.git("update-index", "--cacheinfo", f"160000,{NEW_LINK},vendor/lib")
    if head_modules is not None and head_modules != base_modules:
        r.write(".gitmodules", head_modules)
    head = r.commit("bump")
    return r, base, c1, head


def _attack(git_dir: Path, base: str, c1: str, head: str, data: st.DataObject) -> None:
    """Write what an agent could write under .git/: config and an included file, info/,
    shallow, replace refs."""
    opts = data.draw(st.lists(st.sampled_from(_OPTIONS), max_size=4), label="config")
    included = data.draw(st.lists(st.sampled_from(_OPTIONS), max_size=3), label="include")
    with (git_dir / "config").open("a", encoding="utf-8") as f:
        f.write("".join(opts))
        if included:
            (git_dir / "agent.inc").write_text("".join(included), encoding="utf-8")
            f.write("[include]\n\tpath = agent.inc\n")
    (git_dir.parent / "agent.attributes").write_text("* -diff\n", encoding="utf-8")
    info = git_dir / "info"
    info.mkdir(exist_ok=True)
    grafts = data.draw(st.sampled_from(["", f"{head} {base}\n", f"{c1}\n", f"{base} {head}\n"]))
    (info / "grafts").write_text(grafts, encoding="utf-8")
    (info / "attributes").write_text(data.draw(_ATTRIBUTES, label="info/attributes"))
    (info / "exclude").write_text(data.draw(st.sampled_from(["", "*\n", "vendor/\n"])))
    shallow = data.draw(st.sampled_from(["", c1, head]), label="shallow")
    if shallow:
        (git_dir / "shallow").write_text(f"{shallow}\n", encoding="utf-8")
    replaced = data.draw(st.sampled_from(["", head, base]), label="replace")
    if replaced:
        (git_dir / "refs" / "replace").mkdir(parents=True, exist_ok=True)
        other = base if replaced == head else head
        (git_dir / "refs" / "replace" / replaced).write_text(f"{other}\n", encoding="utf-8")


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    base_modules=_GITMODULES,
    head_modules=_GITMODULES,
    attrs=_ATTRIBUTES,
    patches=st.booleans(),
    data=st.data(),
)
def test_changed_paths_never_shrink(tmp_path_factory, base_modules, head_modules, attrs, patches,
                                    data) -> None:  # fmt: skip
    """Whatever the checkout's .git/ and committed .gitmodules/.gitattributes hold, every path
    git lists on a pristine bare clone is in the range capdaemon reads (the gitlink included)."""
    root = tmp_path_factory.mktemp("prop")
    r, base, c1, head = _build(root, base_modules, head_modules, attrs)
    bare = root / "pristine.git"
    subprocess.run(["git", "clone", "-q", "--bare", "--no-local", str(r.path), str(bare)],
                   env=_PRISTINE, check=True)  # fmt: skip
    expected = _pristine_paths(bare, base, head)
    assert "vendor/lib" in expected
    _attack(r.path / ".git", base, c1, head, data)
    files = diff_range(r.path, base, head, patches=patches)
    seen = {f.path for f in files} | {f.previous_path for f in files if f.previous_path}
    assert expected <= seen, expected - seen


def test_classify_reports_a_gitlink_bump_hidden_by_gitmodules(capsys, repo, sample_config):
    """`capdaemon classify` on a branch whose only change is a submodule bump that the base's
    committed `.gitmodules` (ignore = all) and the checkout's config hide from git."""
    repo.git("switch", "-q", "main")
    repo.write(".gitmodules", '[submodule "lib"]\n\tpath = vendor/lib\n\turl = ../lib\n'
               "\tignore = all\n")  # fmt: skip
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{OLD_LINK},vendor/lib")
    repo.commit("vendor lib")
    repo.git("switch", "-q", "-C", "feat")
    repo.git("update-index", "--cacheinfo", f"160000,{NEW_LINK},vendor/lib")
    repo.commit("bump lib")
    repo.git("config", "diff.ignoreSubmodules", "all")
    hidden = repo.git("diff", "--name-only", "main...feat")
    assert "vendor/lib" not in hidden  # the attack works on git
    code, out, err = classify_cli(capsys, repo, sample_config)
    assert code == 0, err
    assert "vendor/lib" in out and "1 file(s)" in out


def test_home_git_config_does_not_hide_a_gitlink_bump(repo, tmp_path, monkeypatch):
    """A `~/.gitconfig` and `~/.config/git/attributes` (writable by an agent running as the
    same user) that hide submodules and mark everything binary change nothing."""
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{OLD_LINK},vendor/lib")
    repo.commit("vendor lib")
    repo.git("branch", "-f", "main", "HEAD")
    repo.git("update-index", "--cacheinfo", f"160000,{NEW_LINK},vendor/lib")
    repo.write("app/main.py", "# entry\nprint('hello')\n")
    repo.commit("bump")
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".gitconfig").write_text("[diff]\n\tignoreSubmodules = all\n")
    (home / ".config" / "git" / "attributes").write_text("* -diff\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    files = {f.path: f for f in diff_range(repo.path, "main", "feat")}
    assert set(files) == {"vendor/lib", "app/main.py"}
    assert files["app/main.py"].patch and "+print('hello')" in files["app/main.py"].patch


def test_forged_commit_object_is_refused(repo):
    """The agent rewrites a commit's object file with another message (a trailer that changes
    the verdict): git shows the forgery; capdaemon checks the hash and refuses."""
    sha = repo.commit("plain change", allow_empty=True)
    repo.commit("next change", allow_empty=True)
    raw = repo.git("cat-file", "commit", sha).encode()
    forged = raw.replace(b"plain change", b"plain change\n\nReviewed-by: owner")
    loose = repo.path / ".git" / "objects" / sha[:2] / sha[2:]
    loose.chmod(0o644)
    loose.write_bytes(zlib.compress(b"commit %d\0" % len(forged) + forged))
    assert "Reviewed-by" in repo.git("log", "--format=%B", "main..feat")  # git reads the forgery
    with pytest.raises(GitError, match="hash mismatch"):
        commits_range(repo.path, "main", "feat")
