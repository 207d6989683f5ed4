"""Command-line entry point: finds the command's module and lets it parse its own arguments.

Only the chosen command's module is imported, so fast commands (scope-guard) stay fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from capdaemon import __version__
from capdaemon.stateformat import StateFormatError

TYPE_CHECKING = False  # typing costs ~2 ms to import (scope-guard comes through here)
if TYPE_CHECKING:
    from typing import Any

DEBUG_ENV = "CAPDAEMON_DEBUG"  # set: unexpected failures show their traceback

# command -> (module, one-line help). Each module defines
#   configure(parser: argparse.ArgumentParser) -> None
#   run(args: argparse.Namespace) -> int
# and may define SUBCOMMANDS, {word: (module, help)}, for `capdaemon COMMAND WORD ...`.
COMMANDS: dict[str, tuple[str, str]] = {
    "classify": ("capdaemon.commands.classify", "classify a local git range as a PR would be"),
    "audit": ("capdaemon.commands.audit", "audit log tools (verify)"),
    "why": ("capdaemon.commands.why", "print the story of one PR from the logs"),
    "dispatch": ("capdaemon.commands.dispatch", "dispatch a task: snapshot its capability"),
    "scope-guard": (
        "capdaemon.commands.scope_guard",
        "check paths/commands against a task (`scope-guard run -- CMD`: run it confined)",
    ),
    "finish-task": ("capdaemon.commands.finish_task", "check a task branch before merging"),
    "tasks": ("capdaemon.commands.tasks", "list capability snapshots"),
    "escalations": (
        "capdaemon.commands.escalations",
        "list open escalation records (`escalations resolve ID`: close one)",
    ),
    "sandbox": ("capdaemon.commands.sandbox", "the GitHub-compatible sandbox server"),
    "run": ("capdaemon.commands.run", "run the daemon (APScheduler)"),
    "tick": ("capdaemon.commands.tick", "run one tick and exit"),
    "demo": ("capdaemon.commands.demo", "run the whole thing against a throw-away sandbox"),
    "breaker": ("capdaemon.commands.breaker", "circuit breaker status and owner reset"),
    "agents": ("capdaemon.commands.agents", "agent identities and their burn-in clocks"),
    "protect": ("capdaemon.commands.protect", "set branch protection on a supervised repo"),
    "digest": ("capdaemon.commands.digest", "render the daily digest"),
    "dashboard": ("capdaemon.commands.dashboard", "read-only web dashboard (serve or --out)"),
    "init": ("capdaemon.commands.init", "write a starter config from the packaged sample"),
    "doctor": ("capdaemon.commands.doctor", "check a deployment without changing anything"),
}
# answered here, from every command's parser (the one place that sees them all)
COMPLETION = ("completion", "print the shell completion script: capdaemon completion bash|zsh")
SHELLS = ("bash", "zsh")
DIRECTORY_ARGS = frozenset({"config", "state", "dir", "root"})  # complete directory names


class _HelpFormatter(argparse.HelpFormatter):
    """A fixed-width help formatter: argparse would otherwise import shutil and query the
    terminal on every add_argument, which costs the fast commands milliseconds."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=100)


def _usage() -> str:
    lines = ["usage: capdaemon COMMAND [ARGS...]", "", "commands:"]
    width = max(len(c) for c in COMMANDS)
    lines += [f"  {name.ljust(width)}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += [f"  {COMPLETION[0].ljust(width)}  {COMPLETION[1]}"]
    lines += ["", "`capdaemon COMMAND --help` for a command's arguments."]
    return "\n".join(lines)


def _answered_here(argv: list[str]) -> int | None:
    """The exit code of what needs no command module (usage, --version, completion), else
    None."""
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    if argv[0] == "--version":
        print(f"capdaemon {__version__}")
        return 0
    if argv[0] == COMPLETION[0]:
        return _completion(argv[1:])
    return None


def _command(name: str, rest: list[str]) -> tuple[Any, str, list[str], str]:
    """(module, name, remaining arguments, help) of a command, or of its subcommand when the
    command's module lists the next word in `SUBCOMMANDS` (`capdaemon scope-guard run ...`)."""
    module_name, help_ = COMMANDS[name]
    module = importlib.import_module(module_name)
    subcommands: dict[str, tuple[str, str]] = getattr(module, "SUBCOMMANDS", {})
    if rest and rest[0] in subcommands:
        module_name, help_ = subcommands[rest[0]]
        module = importlib.import_module(module_name)
        name, rest = f"{name} {rest[0]}", rest[1:]
    return module, name, rest, help_


def main(argv: list[str] | None = None) -> int:
    """Run one capdaemon command; returns the process exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    answered = _answered_here(argv)
    if answered is not None:
        return answered
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"capdaemon: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module, name, rest, help_ = _command(name, rest)
    parser = argparse.ArgumentParser(
        prog=f"capdaemon {name}", description=help_, formatter_class=_HelpFormatter
    )
    module.configure(parser)
    try:
        args = parser.parse_args(rest)
    except SystemExit as exc:  # argparse exits 2 on bad usage, 0 on --help
        return int(exc.code or 0)
    try:
        return int(module.run(args) or 0)
    except StateFormatError as exc:  # a state directory this capdaemon must not read
        print(f"capdaemon {name}: {exc}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _stdout_closed()
    except Exception as exc:  # a failure no command anticipated: one line, not a traceback
        if getattr(args, "debug", False) or os.environ.get(DEBUG_ENV):
            raise
        text = " ".join(str(exc).split())[:300]
        print(
            f"capdaemon {name}: error: {type(exc).__name__}: {text} "
            f"(set {DEBUG_ENV}=1 for the traceback)",
            file=sys.stderr,
        )
        return 1


def full_parser() -> argparse.ArgumentParser:
    """One parser holding every command's (and subcommand's) own parser, as each module
    configures it: what shell completion is generated from."""
    root = argparse.ArgumentParser(prog="capdaemon", formatter_class=_HelpFormatter)
    root.add_argument("--version", action="version", version=f"capdaemon {__version__}")
    commands = root.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_) in COMMANDS.items():
        module = importlib.import_module(module_name)
        parser = commands.add_parser(
            name, help=help_, description=help_, formatter_class=_HelpFormatter
        )
        subcommands: dict[str, tuple[str, str]] = getattr(module, "SUBCOMMANDS", {})
        if subcommands:
            words = parser.add_subparsers(dest="subcommand", metavar="SUBCOMMAND")
            for word, (sub_name, sub_help) in subcommands.items():
                sub = words.add_parser(word, help=sub_help, formatter_class=_HelpFormatter)
                importlib.import_module(sub_name).configure(sub)
        module.configure(parser)
    _configure_completion(commands.add_parser(COMPLETION[0], help=COMPLETION[1]))
    for action in _actions(root):  # a directory argument completes directory names
        if action.dest in DIRECTORY_ARGS and action.option_strings:
            action.complete = {"bash": "_shtab_compgen_dirs", "zsh": "_files -/"}  # type: ignore[attr-defined]
    return root


def _actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """Every action of a parser and of its subparsers, depth first."""
    out: list[argparse.Action] = []
    for action in parser._actions:
        out.append(action)
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                out += _actions(sub)
    return out


def _configure_completion(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=SHELLS, help="the shell to print the script for")


def _completion(rest: list[str]) -> int:
    """`capdaemon completion bash|zsh`: the script, generated by shtab from full_parser()."""
    import shtab

    parser = argparse.ArgumentParser(
        prog=f"capdaemon {COMPLETION[0]}",
        description=COMPLETION[1],
        formatter_class=_HelpFormatter,
        epilog="bash: source <(capdaemon completion bash) in ~/.bashrc; zsh: capdaemon completion"
        ' zsh > "${fpath[1]}/_capdaemon" (then compinit)',
    )
    _configure_completion(parser)
    try:
        args = parser.parse_args(rest)
    except SystemExit as exc:
        return int(exc.code or 0)
    print(shtab.complete(full_parser(), shell=args.shell))
    return 0


def _stdout_closed() -> int:
    """The reader of our output went away (`capdaemon … | head -1`): say nothing, exit as a
    process killed by SIGPIPE would (141). stdout is pointed at /dev/null first, so the
    interpreter's final flush cannot fail again and print its own message."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real stdout (tests capture it): nothing to redirect
        pass
    return 141


if __name__ == "__main__":
    raise SystemExit(main())
