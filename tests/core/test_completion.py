"""`capdaemon completion bash|zsh`: scripts generated from the parsers, loaded by real shells."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from capdaemon.cli import COMMANDS, full_parser


def _script(shell: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "capdaemon.cli", "completion", shell],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return proc.stdout


def _complete_bash(script: Path, *words: str) -> list[str]:
    """What bash offers for the last of `words`, through the generated function."""
    quoted = " ".join(f"'{w}'" for w in words)
    program = (
        f"source {script}; complete -p capdaemon >/dev/null || exit 9;"
        f" COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1};"
        f' COMP_LINE="${{COMP_WORDS[*]}}"; COMP_POINT=${{#COMP_LINE}};'
        ' _shtab_capdaemon capdaemon; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    proc = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", program],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=script.parent,
    )
    assert proc.returncode == 0, proc.stderr
    return [w.strip() for w in proc.stdout.splitlines() if w.strip()]


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("completion") / "capdaemon.bash"
    path.write_text(_script("bash"), encoding="utf-8")
    return path


def test_bash_loads_the_script_and_registers_capdaemon(bash_script: Path) -> None:
    """`source <(capdaemon completion bash)` in a real bash registers the completion."""
    proc = subprocess.run(
        [
            "bash",
            "--norc",
            "-c",
            f"source <({sys.executable} -m capdaemon.cli completion bash); complete -p capdaemon",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "_shtab_capdaemon" in proc.stdout and proc.stdout.rstrip().endswith("capdaemon")


def test_bash_completes_commands_subcommands_and_options(bash_script: Path) -> None:
    """Every command is offered; a prefix completes to its command; a command's options and
    choices and a nested subcommand come from that command's own parser."""
    assert set(_complete_bash(bash_script, "capdaemon", "")) >= set(COMMANDS) | {"completion"}
    assert _complete_bash(bash_script, "capdaemon", "do") == ["doctor"]
    assert "--once" in _complete_bash(bash_script, "capdaemon", "tick", "--")
    assert _complete_bash(bash_script, "capdaemon", "tick", "--log-format", "js") == ["json"]
    assert _complete_bash(bash_script, "capdaemon", "scope-guard", "r") == ["run"]
    assert _complete_bash(bash_script, "capdaemon", "completion", "z") == ["zsh"]


def test_bash_completes_directories_for_config_and_state(bash_script: Path) -> None:
    """--config and --state complete directory names, not files."""
    (bash_script.parent / "conf.d").mkdir(exist_ok=True)
    (bash_script.parent / "confile").write_text("x", encoding="utf-8")
    assert _complete_bash(bash_script, "capdaemon", "run", "--config", "conf") == ["conf.d"]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is installed by .ci/run")
def test_zsh_loads_the_script_as_a_completion_function(tmp_path: Path) -> None:
    """The zsh script parses (`zsh -n`) and, on $fpath, compinit binds it to capdaemon."""
    (tmp_path / "_capdaemon").write_text(_script("zsh"), encoding="utf-8")
    assert subprocess.run(["zsh", "-n", str(tmp_path / "_capdaemon")]).returncode == 0
    program = (
        f"fpath=({tmp_path} $fpath); autoload -Uz compinit; compinit -u -d {tmp_path}/dump;"
        " print -r -- $_comps[capdaemon]; autoload -Uz +X _capdaemon && whence -w _capdaemon"
    )
    proc = subprocess.run(
        ["zsh", "-f", "-c", program],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["_capdaemon", "_capdaemon:", "function"]


def test_completion_refuses_an_unknown_shell() -> None:
    """`capdaemon completion fish` exits 2 naming the shells it knows."""
    proc = subprocess.run(
        [sys.executable, "-m", "capdaemon.cli", "completion", "fish"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "'bash', 'zsh'" in proc.stderr


def test_every_command_is_in_the_full_parser() -> None:
    """The parser completion is generated from holds every command of the CLI."""
    sub = next(a for a in full_parser()._actions if a.dest == "command")
    assert set(sub.choices or ()) == set(COMMANDS) | {"completion"}
