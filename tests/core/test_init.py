"""`capdaemon init`: the written starter config loads and validates; nothing is overwritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from capdaemon.cli import main as cli
from capdaemon.config import load_config
from capdaemon.resources import sample_config_dir


def test_init_writes_a_config_that_loads_and_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sample, with --repo/--owner/--bot-repo filled, passes config validation."""
    target = tmp_path / "cfg"
    code = cli(
        [
            "init",
            str(target),
            "--repo",
            "me/app",
            "--repo",
            "me/lib",
            "--owner",
            "me",
            "--owner",
            "you",
            "--bot-repo",
            "me/ops",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "capdaemon doctor" in out
    config = load_config(target)
    assert [r.name for r in config.repos] == ["me/app", "me/lib"]
    assert config.owners == ("me", "you")
    assert config.ballot_repo == "me/ops"
    # every sample file is there, comments kept
    sample = sorted(p.relative_to(sample_config_dir()) for p in sample_config_dir().rglob("*.yml"))
    assert sorted(p.relative_to(target) for p in target.rglob("*.yml")) == sample
    assert "# capdaemon.yml" in (target / "capdaemon.yml").read_text(encoding="utf-8")


def test_init_without_arguments_writes_the_sample_in_shadow_mode(tmp_path: Path) -> None:
    """No flags: the files equal the packaged sample byte for byte, except that a new
    deployment starts in shadow mode (it merges nothing until switched to enforce)."""
    target = tmp_path / "cfg"
    assert cli(["init", str(target)]) == 0
    for src in sample_config_dir().rglob("*"):
        if src.is_file() and "__pycache__" not in src.parts:
            rel = src.relative_to(sample_config_dir())
            if rel != Path("capdaemon.yml"):
                assert (target / rel).read_bytes() == src.read_bytes(), rel
    sample = (sample_config_dir() / "capdaemon.yml").read_text(encoding="utf-8").splitlines()
    mine = (target / "capdaemon.yml").read_text(encoding="utf-8").splitlines()
    assert [(a, b) for a, b in zip(sample, mine, strict=True) if a != b] == [
        (line, line.replace("mode: enforce ", "mode: shadow  "))
        for line in sample
        if line.startswith("mode: enforce")
    ]
    assert load_config(target).mode == "shadow"


def test_init_never_overwrites_an_existing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One existing file: exit 2, that file named and untouched, and no other file written."""
    target = tmp_path / "cfg"
    target.mkdir()
    mine = target / "classifier.yml"
    mine.write_text("source_root: mine\n", encoding="utf-8")
    assert cli(["init", str(target), "--owner", "me"]) == 2
    err = capsys.readouterr().err
    assert str(mine) in err and "never overwrites" in err and len(err.strip().splitlines()) == 1
    assert mine.read_text(encoding="utf-8") == "source_root: mine\n"
    assert sorted(p.name for p in target.iterdir()) == ["classifier.yml"]


def test_init_detect_suggests_source_root_and_safe_folders(tmp_path: Path) -> None:
    """--detect: src/<pkg> becomes the source root; docs/tests are suggested, commented out
    (carving folders out is the operator's decision: fail closed until then)."""
    clone = tmp_path / "clone"
    (clone / "src" / "shop").mkdir(parents=True)
    (clone / "src" / "shop" / "__init__.py").write_text("", encoding="utf-8")
    (clone / "docs").mkdir()
    (clone / "tests").mkdir()
    target = tmp_path / "cfg"
    assert cli(["init", str(target), "--detect", str(clone)]) == 0
    config = load_config(target)
    assert config.classifier.source_root == "src/shop"
    text = (target / "classifier.yml").read_text(encoding="utf-8")
    assert "# known_safe_dirs: [docs/, tests/]" in text
    assert "docs/" not in config.classifier.noncritical_dirs


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--repo", "not-a-repo"), ("--owner", "bad login"), ("--detect", "/nonexistent/clone")],
)
def test_init_bad_input_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    """A bad flag value: exit 2, one line naming the flag, nothing created."""
    target = tmp_path / "cfg"
    assert cli(["init", str(target), flag, value]) == 2
    err = capsys.readouterr().err
    assert flag in err and len(err.strip().splitlines()) == 1
    assert not target.exists()
