"""Hostile YAML in every input (config/*.yml, `.capdaemon.yml`, task files): only our errors.

Scalars the loader cannot build, deep nesting and arbitrary YAML-ish text give ConfigError
or TaskFileError naming the file (or source), line and key, never a raw exception.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capdaemon.capability.model import TaskFileError
from capdaemon.capability.taskfile import parse_task_text
from capdaemon.config import CONFIG_FILES, ConfigError, load_config, parse_repo_policy
from capdaemon.stores.taskfiles import load_task_file

BAD_SCALARS = {
    "5000-digit integer": "1" * 5000,
    "impossible date": "2020-13-45",
    "tagged impossible timestamp": "!!timestamp 2020-02-30",
    "tagged non-timestamp": "!!timestamp abc",
    "tagged int": "!!int abc",
    "tagged float": "!!float abc",
    "tagged bool": "!!bool maybe",
}
DEEP = "[" * 2000 + "]" * 2000
DEEP_MAP = "{a: " * 2000 + "1" + "}" * 2000


def _task(value: str) -> str:
    return f'task_id: t-1\nallowed_resources:\n  paths: ["docs/**"]\n  merge_policy: {value}\n'


def _config_error(tmp_path: Path, name: str, text: str) -> ConfigError:
    d = tmp_path / "cfg"
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(d)
    return info.value


@pytest.mark.parametrize("value", BAD_SCALARS.values(), ids=BAD_SCALARS.keys())
def test_bad_scalar_in_central_config_names_file_line_and_key(tmp_path: Path, value: str) -> None:
    """A scalar the loader cannot build is a ConfigError naming the file, line 2 and the key."""
    err = _config_error(tmp_path, "capdaemon.yml", f"mode: shadow\nburn_in_days: {value}\n")
    assert err.file.endswith("capdaemon.yml") and err.line == 2 and err.key == "burn_in_days"
    assert len(str(err)) < 300 and "\n" not in str(err)


@pytest.mark.parametrize("value", BAD_SCALARS.values(), ids=BAD_SCALARS.keys())
def test_bad_scalar_in_repo_policy_names_source_line_and_key(value: str) -> None:
    """The same in a repo's `.capdaemon.yml`, nested in a list: key path and line."""
    with pytest.raises(ConfigError) as info:
        parse_repo_policy(f"owners:\n  - alice\n  - {value}\n", "acme/w@main:.capdaemon.yml")
    err = info.value
    assert err.file == "acme/w@main:.capdaemon.yml" and err.line == 3 and err.key == "owners[1]"


@pytest.mark.parametrize("value", BAD_SCALARS.values(), ids=BAD_SCALARS.keys())
def test_bad_scalar_in_task_file_names_line_and_key(tmp_path: Path, value: str) -> None:
    """The same in a task file: TaskFileError with the line and the dotted key."""
    path = tmp_path / "t.yml"
    path.write_text(_task(value), encoding="utf-8")
    with pytest.raises(TaskFileError) as info:
        load_task_file(path)
    err = info.value
    assert err.line == 4 and err.field == "allowed_resources.merge_policy"
    assert str(err).startswith("line 4: allowed_resources.merge_policy: ")


@pytest.mark.parametrize("deep", [DEEP, DEEP_MAP], ids=["lists", "mappings"])
def test_deep_nesting_is_refused_in_every_input(tmp_path: Path, deep: str) -> None:
    """2,000 levels of nesting: our error (no RecursionError) in config, policy and task file."""
    err = _config_error(tmp_path, "classifier.yml", f"critical_globs: {deep}\n")
    assert err.line == 1 and "nest" in str(err)
    with pytest.raises(ConfigError, match="nest"):
        parse_repo_policy(f"owners: {deep}\n", ".capdaemon.yml")
    with pytest.raises(TaskFileError, match="nest") as info:
        parse_task_text(_task(deep))
    assert info.value.line == 4


@pytest.mark.parametrize("levels", [70, 300, 900])
def test_nesting_below_the_parser_limit_is_still_ours(levels: int) -> None:
    """Nesting the C parser accepts (under 1,000) stops at our depth bound, not at Python's."""
    with pytest.raises(ConfigError, match="nested more than 64 levels") as info:
        parse_repo_policy("owners: " + "[" * levels + "]" * levels, ".capdaemon.yml")
    assert info.value.key is not None and info.value.key.startswith("owners[0][0]")
    assert len(info.value.key) <= 80


# -- arbitrary text ------------------------------------------------------------------------
_fragments = st.sampled_from(
    [
        "task_id: ", "allowed_resources:\n", "  paths: ", "merge_policy: ", "mode: ", "owners:",
        "\n", "  ", "- ", "[", "]", "{", "}", ",", ": ", "&a ", "*a", "<<: ", "!!int ",
        "!!float ", "!!bool ", "!!timestamp ", "!!binary ", "!!set ", "!!omap ", "!!str ",
        "!!python/object ", "? ", "|\n", ">\n", "'", '"', "#", "---\n", "...\n", "%YAML 1.1\n",
        "2020-13-45", "2020-02-30", "1" * 30, "0x", "0o9", "1e999", ".nan", "~", "null",
        "yes", "maybe", "\t", "\x00", "\ufeff", "\\", "\\u", "@", "`",
    ]
)  # fmt: skip
yamlish = st.lists(st.one_of(_fragments, st.text(max_size=4)), max_size=25).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=yamlish)
def test_arbitrary_text_raises_only_our_errors(text: str) -> None:
    """Any text given to the policy and task-file loaders: a result or our own error."""
    try:
        parse_repo_policy(text, ".capdaemon.yml")
    except ConfigError as exc:
        assert "\n" not in str(exc)
    try:
        parse_task_text(text)
    except TaskFileError as exc:
        assert "\n" not in str(exc)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(text=yamlish, name=st.sampled_from(CONFIG_FILES))
def test_arbitrary_text_in_central_config_raises_only_config_error(
    tmp_path: Path, text: str, name: str
) -> None:
    """Any text in any central config file: a Config or a ConfigError naming that file."""
    d = tmp_path / "cfg"
    d.mkdir(exist_ok=True)
    for other in CONFIG_FILES:
        (d / other).unlink(missing_ok=True)
    (d / name).write_text(text, encoding="utf-8")
    try:
        load_config(d)
    except ConfigError as exc:
        assert exc.file.endswith(name)


def test_long_bad_value_is_quoted_on_one_short_line(tmp_path: Path) -> None:
    """A 100,000-character bad value is quoted cut to one line with an ellipsis."""
    err = _config_error(tmp_path, "capdaemon.yml", f"mode: {'m' * 100_000}\n")
    assert err.key == "mode" and "…" in str(err) and len(err.reason) < 200
    with pytest.raises(ConfigError) as info:
        parse_repo_policy(f"owners: [{'o' * 100_000}]\n", ".capdaemon.yml")
    assert "…" in str(info.value) and len(str(info.value)) < 250
