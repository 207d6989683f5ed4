"""Reads the deployment guide's walkable blocks and the `capdaemon` command lines of the docs."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

from capdaemon import cli

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "how-to" / "deploy.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
_WALK = re.compile(r"<!-- walk(?:: (\S+))? -->\n```(\w+)\n(.*?)^```", re.M | re.S)


def walk_blocks(text: str) -> list[tuple[str | None, str, str]]:
    """(target file or None, language, body) of each block marked `<!-- walk -->`, in order."""
    return [(target or None, lang, body) for target, lang, body in _WALK.findall(text)]


def command_lines(text: str) -> list[str]:
    """Each `capdaemon …` invocation in the page's code blocks (shell and crontab), as the
    words after `capdaemon`; a line's other commands (`&&`, `||`, `|`) are left out."""
    found = []
    for _lang, body in _FENCE.findall(text):
        for line in body.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0]
            for part in re.split(r"&&|\|\||(?<![|])\|(?![|])|;", line):
                try:
                    words = shlex.split(part)
                except ValueError:
                    continue
                at = [
                    i
                    for i, w in enumerate(words)
                    if w == "capdaemon" or w.endswith("/bin/capdaemon")
                ]
                if not at or (at[0] and words[at[0] - 1].startswith("-")):
                    continue  # no capdaemon, or the word is an option's value (`-u capdaemon`)
                args = words[at[0] + 1 :]
                ends = [i for i, w in enumerate(args) if w == "&" or w[:1] in "<>" or w[:2] == "2>"]
                args = args[: ends[0]] if ends else args
                if args:
                    found.append(shlex.join(args))
    return found


def parse(line: str) -> argparse.Namespace | None:
    """Parse one command line as `capdaemon.cli.main` would, without running it; None for
    `--version`. Raises ValueError naming the line when the parser refuses it."""
    argv = shlex.split(line)
    if argv == ["--version"]:
        return None
    if argv[0] == cli.COMPLETION[0]:  # answered by cli.py itself, not a command module
        parser = argparse.ArgumentParser(prog=f"capdaemon {argv[0]}")
        cli._configure_completion(parser)
        rest = argv[1:]
    elif argv[0] not in cli.COMMANDS:
        raise ValueError(f"{line}: unknown command {argv[0]!r}")
    else:
        module, name, rest, help_ = cli._command(argv[0], argv[1:])
        parser = argparse.ArgumentParser(prog=f"capdaemon {name}", description=help_)
        module.configure(parser)
    try:
        return parser.parse_args(rest)
    except SystemExit as exc:
        raise ValueError(f"{line}: the parser refuses it (exit {exc.code})") from None
