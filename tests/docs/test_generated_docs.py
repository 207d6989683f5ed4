"""The reference pages are generated from their one home and kept current: the configuration
reference from schemas/ (every key described), the CLI reference from the parsers."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
assert _spec and _spec.loader
gen_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_docs)

SCHEMA_FILES = sorted(p.name for p in (ROOT / "schemas").glob("*.schema.json"))


def test_every_schema_has_a_reference_page() -> None:
    assert sorted(gen_docs.CONFIG_PAGES) == SCHEMA_FILES


@pytest.mark.parametrize("schema_file", SCHEMA_FILES)
def test_every_key_of_every_schema_is_described(schema_file: str) -> None:
    """A key without a description fails here, named with its path."""
    schema = json.loads((ROOT / "schemas" / schema_file).read_text(encoding="utf-8"))
    assert schema.get("description"), f"{schema_file}: the schema itself has no description"
    bare = [path for path, sub in gen_docs.schema_keys(schema) if not sub.get("description")]
    assert bare == [], f"{schema_file}: keys without a description: {bare}"


def test_the_generated_pages_are_up_to_date() -> None:
    """Each page equals what the generator makes now: a schema or parser change without
    regenerating fails here, naming the page."""
    stale = [
        str(path.relative_to(ROOT))
        for path, text in gen_docs.pages().items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]
    assert stale == [], f"run scripts/gen_docs.py: {stale}"


def test_check_mode_names_a_stale_page_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`gen_docs.py --check` exits 1 on a page that differs, naming it, and leaves it as it
    was; on the checked-in tree it exits 0."""
    assert gen_docs.main(["--check"]) == 0
    stale = tmp_path / "docs" / "reference" / "cli.md"
    stale.parent.mkdir(parents=True)
    stale.write_text("hand edit\n", encoding="utf-8")
    monkeypatch.setattr(gen_docs, "ROOT", tmp_path)
    monkeypatch.setattr(gen_docs, "CLI_PAGE", stale)
    monkeypatch.setattr(gen_docs, "CONFIG_DIR", ROOT / "docs" / "reference" / "configuration")
    monkeypatch.setattr(gen_docs, "CONFIG_PAGES", {})
    capsys.readouterr()
    assert gen_docs.main(["--check"]) == 1
    assert "docs/reference/cli.md: out of date" in capsys.readouterr().err
    assert stale.read_text(encoding="utf-8") == "hand edit\n"


def test_the_cli_page_lists_every_command_and_its_options() -> None:
    from capdaemon.cli import COMMANDS

    text = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    for name in COMMANDS:
        assert f"## `capdaemon {name}`" in text
    assert "## `capdaemon scope-guard run`" in text and "`--reviewers`" in text
