"""The deployment guide is true to the product: every `capdaemon` command line in it (and in
every other page of the docs) parses against the real parser, and its rehearsal, run from
a fresh folder against the sandbox, succeeds step by step."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.docs.guidewalk import GUIDE, ROOT, command_lines, parse, walk_blocks

PAGES = [
    p
    for p in sorted(
        {ROOT / "README.md", ROOT / "systemd" / "README.md", *ROOT.glob("docs/**/*.md")}
    )
    if command_lines(p.read_text(encoding="utf-8"))
]


def test_the_pages_with_commands_include_the_guide_and_the_readmes() -> None:
    assert {GUIDE, ROOT / "README.md", ROOT / "systemd" / "README.md"} <= set(PAGES)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_line_parses(page: Path) -> None:
    """Every `capdaemon …` line in the page's code blocks parses against the real parser."""
    lines = command_lines(page.read_text(encoding="utf-8"))
    failures = []
    for line in lines:
        try:
            parse(line)
        except ValueError as exc:
            failures.append(str(exc))
    assert failures == []


def test_the_guide_covers_each_step() -> None:
    """Each command the guide's steps rely on appears in it, parsed."""
    lines = command_lines(GUIDE.read_text(encoding="utf-8"))
    firsts = {line.split()[0] for line in lines}
    assert {"init", "doctor", "protect", "tick", "dashboard", "audit", "sandbox"} <= firsts
    assert any("--detect" in line for line in lines)
    assert any(line.startswith("tick --once") for line in lines)


def test_a_wrong_command_line_is_caught() -> None:
    """The check is not vacuous: a misspelt option or command is refused, named."""
    with pytest.raises(ValueError, match="--cnofig"):
        parse("doctor --cnofig /etc/capdaemon")
    with pytest.raises(ValueError, match="unknown command"):
        parse("docter --config /etc/capdaemon")
    assert command_lines("```sh\nsudo /opt/x/bin/capdaemon tick --once && echo ok\n```\n") == [
        "tick --once"
    ]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _script(port: int) -> str:
    """The guide's walkable blocks as one bash script: shell blocks as written, a YAML block
    merged into the file it names (as an editor would: its keys set, the rest kept)."""
    # the sandbox started in the background ends with the script, whatever line fails
    out = ["set -euo pipefail", "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT"]
    for target, lang, body in walk_blocks(GUIDE.read_text(encoding="utf-8")):
        body = body.replace("8765", str(port))
        if lang == "sh":
            out.append(body)
            continue
        assert lang == "yaml" and target, "a YAML block names the file it goes into"
        out.append(
            f"{sys.executable} -c 'import sys, yaml; p = sys.argv[1]; "
            "d = yaml.safe_load(open(p)) or {}; e = yaml.safe_load(sys.argv[2]); "
            "[d.__setitem__(k, {**(d.get(k) or {}), **v} if isinstance(v, dict) else v) "
            'for k, v in e.items()]; open(p, "w").write(yaml.safe_dump(d))\' '
            f"{target} {_quote(body)}"
        )
    return "\n".join(out) + "\n"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


@pytest.mark.slow
def test_the_rehearsal_walks_from_a_fresh_folder(tmp_path: Path) -> None:
    """Every command of the guide's rehearsal runs, in order, in an empty folder, against the
    sandbox it starts: init --detect, doctor, protect, protect --check, a tick in shadow mode,
    an agent's PR, a second tick, why, audit verify, the dashboard as files."""
    blocks = walk_blocks(GUIDE.read_text(encoding="utf-8"))
    assert [lang for _t, lang, _b in blocks] == ["sh", "yaml", "sh", "sh"]
    yaml.safe_load(blocks[1][2])  # the block a reader pastes is valid YAML
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
    }
    started = time.monotonic()
    proc = subprocess.run(
        ["bash", "-c", _script(_free_port())],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    wall = time.monotonic() - started
    print(f"deployment guide rehearsal: {wall:.1f} s")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "acme/widgets:main: protected as required" in out
    assert "doctor: 0 failed" in out  # the sandbox's default world passes every check
    assert re.search(r"acme/widgets#1: \d+ record", out), out[-2000:]
    assert re.search(r"classified [ABCD] at [0-9a-f]+", out), out[-2000:]
    assert "classifier_audit.jsonl: ok" in out and "actions.jsonl: ok" in out
    assert (tmp_path / "rehearsal" / "pages" / "index.html").is_file()
    assert "merge done" not in out  # shadow mode merges nothing
    assert re.search(r"posted: acme/capdaemon-bot#\d+", out), out[-2000:]
