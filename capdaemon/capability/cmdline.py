"""Split a shell command line into simple commands and redirection targets, failing closed.

The parse is deliberately stricter than a shell: anything it cannot follow (command
substitution, here-documents, unbalanced quotes, odd operators) is an error, and a
quoted operator is treated as a real one (which can only refuse more, never less).
"""

from __future__ import annotations

import re
import shlex

from capdaemon.capability.model import Record

_PUNCT = ";&|<>()\n"
# Longest first: a run of punctuation from shlex is split greedily into these.
_OPERATORS = (
    "&>>", "<<<", "&&", "||", "|&", ";;", ">>", ">|", ">&", "<&", "&>", "<<", "<>",
    ";", "&", "|", "<", ">", "(", ")", "\n",
)  # fmt: skip
_SEPARATORS = frozenset({"&&", "||", "|&", ";;", ";", "&", "|", "(", ")", "\n"})
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_DUP_REDIRECTS = frozenset({">&", "<&"})
_ASSIGNMENT = r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?="
# Variables that change which program runs or what it loads: never settable in a checked line.
# (Patterns are compiled on first use through re's cache: nothing is compiled at import.)
_DANGEROUS_VARS = (
    r"^(PATH|CDPATH|IFS|ENV|BASH_ENV|BASH_FUNC_.*|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|"
    r"LD_.*|DYLD_.*|PYTHON.*|PERL.*|RUBY.*|NODE_.*|NPM_.*|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|"
    r"GIT_.*|GCONV_PATH|HOSTALIASES|LOCPATH|NLSPATH|MALLOC_.*|EDITOR|VISUAL|PAGER|BROWSER|"
    r"HOME|XDG_CONFIG_HOME|ZDOTDIR|TMPDIR|LUA_.*|TCL.*|PHPRC|SSH_.*)$"
)
DEV_NULL = "/dev/null"


class CommandParseError(ValueError):
    """A command line that cannot be checked safely (refused as a whole)."""


class ParsedLine(Record):
    """The simple commands of a line (argv without assignments) and the files it writes.

    Immutable; equality, hash and repr by its fields (a plain Record keeps dataclasses and
    inspect, ~7 ms, out of `scope-guard --command`).
    """

    __slots__ = ("assignments", "commands", "reads", "writes")
    __match_args__ = _fields = ("commands", "assignments", "writes", "reads")

    commands: tuple[tuple[str, ...], ...]
    assignments: tuple[str, ...]
    writes: tuple[str, ...]
    reads: tuple[str, ...]

    def __init__(
        self,
        commands: tuple[tuple[str, ...], ...],
        assignments: tuple[str, ...],
        writes: tuple[str, ...],
        reads: tuple[str, ...],
    ) -> None:
        init = object.__setattr__
        init(self, "commands", commands)
        init(self, "assignments", assignments)
        init(self, "writes", writes)
        init(self, "reads", reads)


def _split_punct(token: str) -> list[str]:
    out = []
    i = 0
    while i < len(token):
        for op in _OPERATORS:
            if token.startswith(op, i):
                out.append(op)
                i += len(op)
                break
        else:  # pragma: no cover - shlex only groups characters of _PUNCT
            raise CommandParseError(f"unknown operator {token!r}")
    return out


def _tokens(line: str) -> list[str]:
    lex = shlex.shlex(line, posix=True, punctuation_chars=_PUNCT)
    lex.whitespace = " \t\r"
    lex.commenters = ""  # a shell `#` only starts a comment at a word start; never drop text
    lex.whitespace_split = True
    try:
        raw = list(lex)
    except ValueError as exc:
        raise CommandParseError(f"cannot parse: {exc}") from None
    out: list[str] = []
    for tok in raw:
        if tok and all(ch in _PUNCT for ch in tok):
            out.extend(_split_punct(tok))
        else:
            out.append(tok)
    return out


def parse_line(line: str) -> ParsedLine:
    """Split `line` into simple commands; raise CommandParseError when it cannot be followed."""
    if not line.strip():
        raise CommandParseError("empty command")
    if "\x00" in line:
        raise CommandParseError("NUL byte in command")
    if "`" in line or "$(" in line:
        raise CommandParseError("command substitution (`$(…)` or backticks) cannot be checked")
    if "<(" in line.replace(" ", "") or ">(" in line.replace(" ", ""):
        raise CommandParseError("process substitution cannot be checked")
    tokens = _tokens(line)
    commands: list[tuple[str, ...]] = []
    assignments: list[str] = []
    writes: list[str] = []
    reads: list[str] = []
    current: list[str] = []
    in_assignments = True
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok in _SEPARATORS:
            if current:
                commands.append(tuple(current))
            current, in_assignments = [], True
            i += 1
            continue
        if tok in ("<<", "<<<"):
            raise CommandParseError("here-documents and here-strings cannot be checked")
        if tok in _WRITE_REDIRECTS or tok in _DUP_REDIRECTS or tok == "<":
            if i + 1 >= len(tokens) or tokens[i + 1] in _OPERATORS:
                raise CommandParseError(f"redirection {tok!r} without a target")
            target = tokens[i + 1]
            if tok in _DUP_REDIRECTS and (target.isdigit() or target == "-"):
                pass  # 2>&1, >&2, <&0, >&-: file descriptors, no file
            elif tok == "<" or tok == "<&":
                reads.append(target)
            else:
                writes.append(target)
            i += 2
            continue
        if in_assignments and re.match(_ASSIGNMENT, tok):
            assignments.append(tok)
            i += 1
            continue
        in_assignments = False
        current.append(tok)
        i += 1
    if current:
        commands.append(tuple(current))
    return ParsedLine(tuple(commands), tuple(assignments), tuple(writes), tuple(reads))


def dangerous_assignment(assignment: str) -> bool:
    """True when an env-var assignment could change which program runs or what it loads."""
    name = re.split(r"[\[+=]", assignment, maxsplit=1)[0]
    return bool(re.match(_DANGEROUS_VARS, name, re.IGNORECASE))


def prefix_allows(allowed: tuple[str, ...], argv: tuple[str, ...]) -> str | None:
    """The allow-list entry whose program and leading arguments start `argv`, or None.

    `pytest` allows `pytest -q tests/` but not `pytestx`; `python3 -m py_compile` allows
    `python3 -m py_compile a.py` but not `python3 -c ...`. Programs compare literally
    (`/usr/bin/pytest` is not `pytest`).
    """
    for entry in allowed:
        want = tuple(shlex.split(entry))
        if want and argv[: len(want)] == want:
            return entry
    return None
