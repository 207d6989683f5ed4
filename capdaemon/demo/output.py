"""The demo's narration: lines of at most 100 columns, the outcome table, what to try next."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from ghsandbox import testing as std
from ghsandbox.server import Sandbox

TABLE_WIDTH = 100


class Narrator:
    """Prints demo narration (plain lines; the daemon's own logs go to a file)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def __call__(self, text: str = "") -> None:
        for line in wrap(text):
            print(line, file=self.stream, flush=True)


def outcome_table(rows: list[list[str]], width: int = TABLE_WIDTH) -> list[str]:
    """PR, quadrant, files, action on one line; the "why" wrapped below; no line over `width`."""

    def cut(text: str, w: int) -> str:
        text = " ".join(str(text).split())
        return text if len(text) <= w else text[: w - 1] + "…"

    widths = [4, 1, 34]
    rest = width - sum(widths) - 2 * len(widths)
    out = ["  ".join(("PR", "Q", "files".ljust(widths[2]), "action")), "-" * width]
    for number, files, quadrant, why, action in rows:
        head = [number.ljust(widths[0]), cut(quadrant, 1), cut(files, widths[2]).ljust(widths[2])]
        actions = textwrap.wrap(" ".join(action.split()), rest) or [""]
        indent = " " * (width - rest)
        out.append("  ".join(head) + "  " + actions[0])
        out += [indent + more for more in actions[1:]]
        out += textwrap.wrap(
            " ".join(str(why).split()),
            width,
            initial_indent="      why: ",
            subsequent_indent="           ",
            max_lines=3,
            placeholder=" …",
        )
    return out


def wrap(line: str, width: int = TABLE_WIDTH) -> list[str]:
    """One output line cut into lines of at most `width`, continuations under its text."""
    if len(line) <= width:
        return [line]
    body = line.lstrip(" ")
    indent = len(line) - len(body)
    gap = body.find("  ")  # `why` prints "<time>  <text>": continue under the text
    hang = indent + (gap + 2 if 0 < gap < 40 else 4)
    return textwrap.wrap(
        line,
        width,
        subsequent_indent=" " * hang,
        break_on_hyphens=False,
        break_long_words=False,  # a long path stays whole, to copy
    ) or [line]


def ballots_line(ballots: dict[str, str]) -> str:
    """`acme/widgets#3 approved` for each ballot read in a tick."""
    return ", ".join(f"{ref} {state}" for ref, state in sorted(ballots.items())) or "none"


def explain(
    say: Callable[[str], None],
    root: Path,
    sb: Sandbox,
    config_dir: Path,
    state_dir: Path,
    keep_running: bool,
    temporary: bool,
) -> None:
    """Where things are and what to try — only what still works after the demo returns (with
    --keep-running: the sandbox, its tokens and a curl line, whatever the folder)."""
    if temporary and not keep_running:
        say("the demo's temporary folder is removed on exit; `--dir DIR` keeps its files")
        say("and `--keep-running` keeps the sandbox up to explore")
        return
    alice = std.token_for(std.OWNER)
    say(f"sandbox folder: {root}")
    if temporary:
        say("  (a temporary folder: removed when the sandbox stops; `--dir DIR` keeps its files)")
    say(f"  config {config_dir}, state {state_dir}, daemon log {root / 'capdaemon.log'}")
    say(f"  try: capdaemon audit verify --state {state_dir}")
    say(f"  try: capdaemon digest --print --config {config_dir} --state {state_dir}")
    if not keep_running:
        say("  (the sandbox stopped with the demo; `capdaemon demo --keep-running` keeps it up)")
        return
    say(
        f"  base URL {sb.base_url}; tokens: {std.OWNER}={alice}, "
        + ", ".join(f"{a}={std.token_for(a)}" for a in std.AGENTS)
    )
    say(
        f"  try: curl -s -H 'Authorization: token {alice}' "
        f"{sb.base_url}/repos/{std.BOT_REPO}/issues | head"
    )
    say(f"  try: capdaemon tick --once --config {config_dir} --state {state_dir}")
