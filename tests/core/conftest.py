"""Fixtures for the core tests: real throw-away git repositories and a sample-config copy."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# the demo's world (config/ is the generic sample `init` writes)
DEMO_CONFIG = ROOT / "capdaemon" / "demo" / "config"

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Ada Agent",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Agent",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


class GitRepo:
    """A real git repository in a temp dir, with helpers to write files and commit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, input: bytes | None = None) -> str:
        """Run git in the repo; return stdout (raises on failure)."""
        env = {**os.environ, **_GIT_ENV}
        proc = subprocess.run(
            ["git", "-C", str(self.path), *args],
            input=input,
            capture_output=True,
            env=env,
            check=True,
        )
        return proc.stdout.decode("utf-8", "replace")

    def write(self, rel: str, content: str | bytes, *, mode: int | None = None) -> None:
        """Write a file (creating folders) and stage it."""
        p = self.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            p.write_text(content, encoding="utf-8")
        else:
            p.write_bytes(content)
        if mode is not None:
            p.chmod(mode)
        self.git("add", "--", rel)

    def symlink(self, rel: str, target: str) -> None:
        """Create and stage a symlink."""
        p = self.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.symlink_to(target)
        self.git("add", "--", rel)

    def remove(self, rel: str) -> None:
        """Delete and stage the deletion of a file."""
        self.git("rm", "-q", "--", rel)

    def commit(self, message: str, *, allow_empty: bool = False) -> str:
        """Commit what is staged; return the new sha."""
        args = ["commit", "-q", "-m", message]
        if allow_empty:
            args.append("--allow-empty")
        self.git(*args)
        return self.git("rev-parse", "HEAD").strip()

    def branch(self, name: str, start: str = "HEAD") -> None:
        """Create and switch to a branch."""
        self.git("switch", "-q", "-c", name, start)


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    """A repo whose `main` has a README, an example, app code and a CI workflow; on `feat`."""
    r = GitRepo(tmp_path / "widgets")
    r.write("README.md", "# Widgets\n\nThis projet makes widgets.\n")
    r.write("examples/old.py", "print('old')\n")
    r.write(".github/workflows/ci.yml", "on: push\njobs:\n  t:\n    steps:\n      - run: pytest\n")
    r.write("app/main.py", "# entry\nprint('hi')\n")
    r.commit("initial")
    r.branch("feat")
    return r


@pytest.fixture
def sample_config(tmp_path: Path) -> Path:
    """A private copy of the shipped sample config directory."""
    dst = tmp_path / "config"
    shutil.copytree(DEMO_CONFIG, dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def classify_cli(capsys, repo: GitRepo, config: Path, *extra: str) -> tuple[int, str, str]:
    """Run `capdaemon classify` in-process on `repo` (main...feat) at a fixed `now`."""
    from capdaemon.cli import main

    code = main(
        [
            "classify",
            "--repo",
            str(repo.path),
            "--base",
            "main",
            "--head",
            "feat",
            "--config",
            str(config),
            "--now",
            "2026-05-25T12:00:00Z",
            *extra,
        ]
    )
    out, err = capsys.readouterr()
    return code, out, err
