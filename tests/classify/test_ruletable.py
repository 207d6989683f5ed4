"""The built-in rule table: one definition that the rules, the config loader, the schema,
the steady-state skip and the README table all agree with."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, SupportsIndex

import pytest

from capdaemon import config as config_mod
from capdaemon.classify import classify
from capdaemon.classify.compiled import compile_classifier
from capdaemon.classify.rules import BUILTIN_RULES, RuleContext
from capdaemon.classify.ruletable import (
    CHECK_READING_RULES,
    DISABLEABLE_RULES,
    RULE_TABLE,
    rule_facts,
    rules_markdown,
)
from capdaemon.config import ConfigError, SkillsConfig, load_config
from capdaemon.model import CheckRun, PRSnapshot

from .classify_builders import NOW, added, base_config, snapshot
from .test_rules import judgment

ROOT = Path(__file__).resolve().parents[2]


class Tripwire(tuple):  # type: ignore[type-arg]
    """A tuple of check runs that remembers whether anything looked at it."""

    touched = False

    def __iter__(self) -> Iterator[Any]:
        type(self).touched = True
        return super().__iter__()

    def __len__(self) -> int:
        type(self).touched = True
        return super().__len__()

    def __getitem__(self, i: SupportsIndex | slice) -> Any:  # type: ignore[override]
        type(self).touched = True
        return super().__getitem__(i)


def test_the_rules_run_in_table_order_and_only_those() -> None:
    """Every row has a function, every function a row, in the table's order."""
    assert [r.name for r in BUILTIN_RULES] == [r.name for r in RULE_TABLE]
    assert [r.can_disable for r in BUILTIN_RULES] == [r.can_disable for r in RULE_TABLE]


def test_only_rules_that_never_vote_d_can_be_disabled() -> None:
    """Fail closed: no row may be both a D voter and disableable."""
    assert all(not (r.votes_d and r.can_disable) for r in RULE_TABLE)
    assert {"auto_revert_marker"} == DISABLEABLE_RULES
    assert not rule_facts("published_verdict").can_disable


@pytest.mark.parametrize("row", RULE_TABLE, ids=lambda r: r.name)
def test_reads_check_runs_column_matches_what_the_rule_does(row: Any) -> None:
    """A rule marked "does not read check runs" never looks at them (so a D it votes is firm
    and the daemon may skip re-reading checks); one marked "reads" does."""
    cfg = base_config()
    ctx = RuleContext(now=NOW, files=(), compiled=compile_classifier(cfg.classifier))
    runs: tuple[CheckRun, ...] = Tripwire((judgment("Quadrant: B"),))
    snap: PRSnapshot = snapshot(added("examples/demo.py"))
    object.__setattr__(snap, "check_runs", runs)  # keep the tripwire, not a tuple copy
    rule = next(r for r in BUILTIN_RULES if r.name == row.name)
    Tripwire.touched = False
    rule.func(snap, cfg, ctx)
    assert Tripwire.touched is row.reads_checks
    assert (row.name in CHECK_READING_RULES) is row.reads_checks


def test_config_loader_derives_from_the_table() -> None:
    """capdaemon.config's rule names are the table's, not a second list."""
    assert tuple(r.name for r in RULE_TABLE) == config_mod.BUILTIN_RULES
    assert config_mod.DISABLEABLE_RULES is DISABLEABLE_RULES


def test_skills_schema_allows_disabling_exactly_the_disableable_rules() -> None:
    """schemas/skills.schema.json's disabled_rules enum is the table's disableable column."""
    schema = json.loads((ROOT / "schemas" / "skills.schema.json").read_text())
    enum = schema["properties"]["disabled_rules"]["items"]["enum"]
    assert sorted(enum) == sorted(DISABLEABLE_RULES)


def test_disabling_the_verdict_rule_in_skills_yml_is_refused(tmp_path: Path) -> None:
    """skills.yml naming published_verdict is a config error that names the rule."""
    (tmp_path / "skills.yml").write_text("disabled_rules:\n  - published_verdict\n")
    with pytest.raises(ConfigError, match=r"published_verdict.*can vote D and cannot be disabled"):
        load_config(tmp_path)


def test_a_disabled_verdict_rule_still_holds_a_published_d() -> None:
    """Attack: a config that lists published_verdict as disabled (built in code, past the
    loader) must not hide the canonical App's `Quadrant: D` and let safe paths auto-merge."""
    cfg = base_config(skills=SkillsConfig(disabled_rules=("published_verdict",)))
    v = classify(
        snapshot(added("examples/demo.py"), check_runs=[judgment("Quadrant: D")]), cfg, now=NOW
    )
    assert v.quadrant.value == "D", v.reasoning
    out = next(o for o in v.rules if o.rule == "published_verdict")
    assert out.reason != "disabled in skills.yml"


def test_readme_table_is_generated_from_the_table() -> None:
    """One row per rule with its three facts, in order."""
    lines = rules_markdown().splitlines()
    assert len(lines) == 2 + len(RULE_TABLE)
    for line, row in zip(lines[2:], RULE_TABLE, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        yes = {"yes": True, "no": False}
        assert cells[0] == f"`{row.name}`"
        assert (yes[cells[1]], yes[cells[2]], yes[cells[3]]) == (
            row.votes_d,
            row.can_disable,
            row.reads_checks,
        )


def test_the_rules_page_shows_the_generated_table() -> None:
    """docs/reference/rules.md shows the generated table, verbatim (no hand-kept copy)."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "rules.md").read_text(
        encoding="utf-8"
    )
    assert rules_markdown().strip() in readme
