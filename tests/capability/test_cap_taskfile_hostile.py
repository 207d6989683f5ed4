"""Hostile task files through `capdaemon dispatch`: alias bombs, duplicate keys, oversize input.

Each is refused with one short line naming the line, key or limit, and nothing is written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from capdaemon.capability.model import MAX_LIST_ITEMS, MAX_TASK_FILE_BYTES
from capdaemon.quoting import quote_value


def alias_bomb(levels: int = 9) -> str:
    """A task file whose merge_policy is a tree of aliases: 9**levels strings when expanded."""
    rows = ["  - &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        rows.append(f"  - &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return (
        "task_id: bomb-1\nallowed_resources:\n  paths: [docs/**]\n  merge_policy:\n"
        + "\n".join(rows)
        + "\n"
    )


def dispatch(cli, taskfile, state: Path, text: str) -> str:
    """Dispatch `text` as a task file; assert it is refused with one line; return that line."""
    res = cli("dispatch", taskfile(text), "--state", state)
    assert res.code == 2  # a malformed task file is bad input
    lines = res.err.strip().splitlines()
    assert len(lines) == 1, res.err
    assert not state.exists()
    return lines[0]


def test_alias_bomb_is_refused_at_its_first_alias(taskfile, cli, state: Path) -> None:
    """The billion-laughs task file (quoting it once took 350 MB) is refused: aliases are off."""
    text = alias_bomb()
    assert len(text) < 600
    line = dispatch(cli, taskfile, state, text)
    assert "line 6: YAML alias *l0 at column 10 is not allowed here" in line
    assert len(line) < 300


def test_merge_key_alias_is_refused(taskfile, cli, state: Path) -> None:
    """A `<<: *x` merge pulls an anchored mapping in by alias: refused like any alias."""
    text = (
        "task_id: merge-1\n"
        "allowed_resources:\n"
        "  paths: [docs/**]\n"
        "  forbidden_paths: &base [x/**]\n"
        "  branches: {<<: *base}\n"
    )
    line = dispatch(cli, taskfile, state, text)
    assert "line 5: YAML alias *base at column 18 is not allowed here" in line


def test_a_huge_shared_value_is_quoted_in_bounded_time() -> None:
    """quote_value never builds the full repr: a 9**12-leaf shared tree quotes in one line."""
    value: object = "lol"
    for _ in range(12):
        value = [value] * 9
    shown = quote_value(value)
    assert len(shown) <= 80 and "\n" not in shown


def test_long_value_is_quoted_on_one_short_line(taskfile, cli, state: Path) -> None:
    """A 100,000-character merge_policy is quoted cut to one line with an ellipsis."""
    text = (
        f"task_id: t-1\nallowed_resources:\n  paths: [docs/**]\n  merge_policy: {'y' * 100_000}\n"
    )
    line = dispatch(cli, taskfile, state, text)
    assert "line 4: allowed_resources.merge_policy: must be one of" in line
    assert "…" in line and len(line) < 300


def test_duplicate_task_id_names_the_key_and_both_lines(taskfile, cli, state: Path) -> None:
    """`task_id:` twice is refused (YAML would silently keep the last) naming both lines."""
    text = "task_id: honest-1\nallowed_resources:\n  paths: [docs/**]\ntask_id: other-1\n"
    line = dispatch(cli, taskfile, state, text)
    assert "line 4: duplicate key 'task_id' (lines 1 and 4)" in line


def test_duplicate_nested_key_names_its_section(taskfile, cli, state: Path) -> None:
    """A duplicate key inside allowed_resources is named with its section and lines."""
    text = "task_id: t-1\nallowed_resources:\n  paths: [docs/**]\n  paths: ['**']\n"
    line = dispatch(cli, taskfile, state, text)
    assert "line 4: allowed_resources: duplicate key 'paths' (lines 3 and 4)" in line


def test_validation_errors_carry_the_line(taskfile, cli, state: Path) -> None:
    """A bad glob three items down a list is reported at its own line."""
    text = (
        "task_id: t-1\nallowed_resources:\n  paths:\n    - docs/**\n    - src/**\n    - ../etc/**\n"
    )
    line = dispatch(cli, taskfile, state, text)
    assert "line 6: allowed_resources.paths[2]: glob '../etc/**' has a `..` segment" in line


def test_four_megabyte_task_file_is_refused_naming_the_limit(taskfile, cli, state: Path) -> None:
    """200,000 globs in a 4 MB file: refused on size before any parsing."""
    globs = "".join(f"    - dir{i:06d}/sub/**\n" for i in range(200_000))
    text = f"task_id: big-1\nallowed_resources:\n  paths:\n{globs}"
    assert len(text) > 4_000_000
    line = dispatch(cli, taskfile, state, text)
    assert f"limit of {MAX_TASK_FILE_BYTES // 1024} KiB" in line


def test_too_many_globs_are_refused_naming_the_limit(taskfile, cli, state: Path) -> None:
    """More globs than the per-list limit, in a file under the size limit: refused."""
    globs = ", ".join(f"d{i}/**" for i in range(MAX_LIST_ITEMS + 1))
    text = f"task_id: many-1\nallowed_resources:\n  paths: [{globs}]\n"
    assert len(text) < MAX_TASK_FILE_BYTES
    line = dispatch(cli, taskfile, state, text)
    assert f"line 3: allowed_resources.paths: has {MAX_LIST_ITEMS + 1} items" in line
    assert f"the limit is {MAX_LIST_ITEMS} per list" in line


@pytest.mark.parametrize("key", ["forbidden_paths", "commands", "agents", "branches"])
def test_every_list_is_bounded(taskfile, cli, state: Path, key: str) -> None:
    """The limit applies to each list of the task file."""
    items = ", ".join(f"x{i}" for i in range(MAX_LIST_ITEMS + 1))
    text = f"task_id: many-1\nallowed_resources:\n  paths: [docs/**]\n  {key}: [{items}]\n"
    line = dispatch(cli, taskfile, state, text)
    assert f"allowed_resources.{key}: has {MAX_LIST_ITEMS + 1} items" in line
