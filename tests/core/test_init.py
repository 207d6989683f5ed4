"""`capdaemon init`: the written starter config loads and validates; nothing is overwritten."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    """No flags: the files equal the packaged sample byte for byte, and a new deployment
    starts in shadow mode (it merges nothing until switched to enforce)."""
    target = tmp_path / "cfg"
    assert cli(["init", str(target)]) == 0
    for src in sample_config_dir().rglob("*"):
        if src.is_file() and "__pycache__" not in src.parts:
            rel = src.relative_to(sample_config_dir())
            assert (target / rel).read_bytes() == src.read_bytes(), rel
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


# What the demo's world put into every new deployment: none of it may reach a real config.
DEMO_VALUES = (
    "multiagent_protocol",
    "db/seeds",
    "post_to_slack",
    "Makefile",
    "Asia/Seoul",
    "1001",
    "alice",
    "bob",
    "acme",
    "SPEC",
    "widgets",
)


def test_init_writes_a_generic_config_without_the_demos_world(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every file `init` writes is free of the demo's values and of references to documents
    the user does not have; no user rule is active; nothing is supervised or owned until the
    operator says so."""
    from capdaemon.commands._common import load_user_rules_for

    target = tmp_path / "cfg"
    assert cli(["init", str(target)]) == 0
    for path in target.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            found = [v for v in DEMO_VALUES if v in text]
            assert found == [], (path.name, found)
    config = load_config(target)
    assert config.repos == () and config.owners == () and config.canonical_app is None
    assert config.own_repo is None and config.schedule.timezone == "UTC"
    assert load_user_rules_for(config) == ()
    assert (target / "skills" / "classifier" / "_example_rule.py").is_file()  # off, documented


def _clone(tmp_path: Path) -> Path:
    """A real git clone whose default branch is master, with Python and TypeScript files, a
    docs folder and a CI workflow, and an origin on GitHub."""
    import subprocess

    clone = tmp_path / "shop"
    files = {
        "src/shop/__init__.py": "",
        "src/shop/cart.py": "TOTAL = 0\n",
        "web/app.ts": "export const a = 1\n",
        "docs/guide.md": "# Guide\n",
        ".github/workflows/ci.yml": (
            "name: CI\non: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n"
            "    steps: []\n  lint:\n    name: Lint code\n    steps: []\n"
        ),
    }
    for rel, text in files.items():
        (clone / rel).parent.mkdir(parents=True, exist_ok=True)
        (clone / rel).write_text(text, encoding="utf-8")

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(clone), *args], check=True, capture_output=True)

    git("init", "-q", "-b", "master")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "init")
    git("remote", "add", "origin", "git@github.com:shopco/shop.git")
    return clone


def test_init_detect_prints_what_it_found_and_writes_it_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--detect on a real clone: prints the default branch (master), languages, top folders
    and CI workflows; the config supervises origin's repo on master, has the source root, and
    suggests the CI checks (pinned to GitHub Actions) and safe folders as comments."""
    import yaml

    target = tmp_path / "cfg"
    assert cli(["init", str(target), "--detect", str(_clone(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "default branch: master" in out
    assert "languages: Python (2 files), TypeScript (1 files)" in out
    assert "top folders: docs/, src/, web/" in out
    assert "ci.yml (checks: test, Lint code)" in out
    config = load_config(target)
    assert [(r.name, r.base) for r in config.repos] == [("shopco/shop", "master")]
    assert config.classifier.source_root == "src/shop"
    main = (target / "capdaemon.yml").read_text(encoding="utf-8")
    assert "#   default branch: master" in main
    [suggested] = [ln for ln in main.splitlines() if "# extra_checks: [{" in ln]
    assert yaml.safe_load(suggested.split("# ", 1)[1])["extra_checks"] == [
        {"context": "test", "app_id": 15368},
        {"context": "Lint code", "app_id": 15368},
    ]
    assert config.repos[0].extra_checks == ()  # a suggestion: requiring them is the operator's
    assert "# known_safe_dirs: [docs/]" in (target / "classifier.yml").read_text("utf-8")


def test_demo_config_is_the_demos_own(tmp_path: Path) -> None:
    """The demo keeps its world (acme/widgets, owners alice and bob, its user rule) in its own
    folder, which `init` never copies."""
    from capdaemon.commands._common import load_user_rules_for
    from capdaemon.resources import demo_config_dir

    demo = load_config(demo_config_dir())
    assert [r.name for r in demo.repos] == ["acme/widgets"] and demo.owners == ("alice", "bob")
    assert len(load_user_rules_for(demo)) == 1
    assert demo_config_dir() != sample_config_dir()


_OWNER = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9-]{0,20}", fullmatch=True)
_NAME = st.from_regex(r"[A-Za-z0-9._-]{1,30}", fullmatch=True).filter(
    lambda n: n not in (".", "..") and not n.endswith(".git")
)


@settings(max_examples=60, deadline=None)
@given(owner=_OWNER, name=_NAME, form=st.sampled_from(["https", "ssh", "scp"]), git=st.booleans())
def test_origin_urls_give_owner_and_name(
    tmp_path_factory: pytest.TempPathFactory, owner: str, name: str, form: str, git: bool
) -> None:
    """Every way GitHub spells a clone URL (https, ssh://, scp-like; with or without .git)
    gives back OWNER/NAME, as git itself stores it in the clone's config."""
    import subprocess

    from capdaemon.commands.init import _origin_repo

    clone = tmp_path_factory.mktemp("clone")
    suffix = ".git" if git else ""
    url = {
        "https": f"https://github.com/{owner}/{name}{suffix}",
        "ssh": f"ssh://git@github.com/{owner}/{name}{suffix}",
        "scp": f"git@github.com:{owner}/{name}{suffix}",
    }[form]
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "remote", "add", "origin", url], check=True)
    assert _origin_repo(clone) == f"{owner}/{name}"
