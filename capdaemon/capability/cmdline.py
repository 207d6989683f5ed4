"""Read a command line as plain words only, refusing every shell feature it would have to follow.

A shell rewrites a line in many ways before a program runs (expansions, quoting, escapes,
line continuations, assignments, redirections, aliases of words), and any of them can make
an allowed program run another one. So nothing is interpreted: a line is accepted only when
it is simple commands of plain words, each word made of letters, digits and `_-./,:+=@%`,
optionally wrapped in '…' or "…" (which then change nothing), the commands joined by `;`,
`&&`, `||` or `|`. Anything else is refused with the character or word that was refused.
See docs/threat-model.md, SG1.
"""

from __future__ import annotations

PLAIN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./,:+=@%")
PLAIN_DESCRIPTION = "letters, digits and _-./,:+=@%"
SEPARATORS = frozenset({";", "&&", "||", "|"})
_OPERATOR_CHARS = frozenset(";&|")
_BLANKS = frozenset(" \t")
_QUOTES = frozenset("'\"")
# Words the shell reads as syntax, not as a program, at the start of a command.
RESERVED_WORDS = frozenset(
    {
        "!", "[[", "]]", "{", "}", "case", "coproc", "do", "done", "elif", "else", "esac",
        "fi", "for", "function", "if", "in", "select", "then", "time", "until", "while",
    }
)  # fmt: skip
_WHY = {
    "$": "expansion",
    "`": "command substitution",
    "\\": "escape or line continuation",
    "\n": "a second line",
    "\r": "a carriage return",
    "<": "redirection",
    ">": "redirection",
    "(": "subshell or substitution",
    ")": "subshell or substitution",
    "{": "brace expansion or group",
    "}": "brace expansion or group",
    "*": "pathname expansion",
    "?": "pathname expansion",
    "[": "pathname expansion",
    "]": "pathname expansion",
    "~": "tilde expansion",
    "#": "comment",
    "!": "history expansion or negation",
    "^": "history substitution",
    "&": "background job",
}


class CommandParseError(ValueError):
    """A command line refused as a whole: it uses something other than plain words."""


def _shown(ch: str) -> str:
    if ch == "\n":
        return "newline"
    if ch.isprintable() and ch.isascii():
        return repr(ch)
    return f"U+{ord(ch):04X}"


def _refuse_char(ch: str, at: int, where: str = "") -> CommandParseError:
    why = _WHY.get(ch, "not a plain-word character")
    return CommandParseError(
        f"character {_shown(ch)} at column {at + 1}{where} ({why}); "
        f"only plain words ({PLAIN_DESCRIPTION}) are accepted"
    )


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    name = name.removesuffix("+")
    return (
        bool(eq)
        and bool(name)
        and not name[0].isdigit()
        and all(c.isascii() and (c.isalnum() or c == "_") for c in name)
    )


def _quoted(line: str, i: int) -> tuple[str, int]:
    """The plain text of the quote opening at `i`, and the column just after it."""
    ch = line[i]
    end = line.find(ch, i + 1)
    if end < 0:
        raise CommandParseError(f"unterminated {_shown(ch)} quote at column {i + 1}")
    for j in range(i + 1, end):
        if line[j] not in PLAIN_CHARS:
            raise _refuse_char(line[j], j, " inside quotes")
    return line[i + 1 : end], end + 1


def _separator(line: str, i: int) -> tuple[str, int]:
    """The command separator starting at `i`, and the column just after it."""
    n = len(line)
    j = i
    while j < n and line[j] in _OPERATOR_CHARS:
        j += 1
    op = line[i:j]
    if op not in SEPARATORS:
        what = "background job" if op == "&" else "operator"
        raise CommandParseError(f"{what} {op!r} at column {i + 1}; only ; && || | join commands")
    return op, j


def _check_programs(commands: list[tuple[str, ...]]) -> None:
    """Refuse a shell keyword in program position and any variable assignment."""
    for argv in commands:
        if argv[0] in RESERVED_WORDS:
            raise CommandParseError(f"shell keyword {argv[0]!r} where a program is expected")
        for w in argv:
            if _is_assignment(w):
                raise CommandParseError(
                    f"assignment {w.split('=', 1)[0]}= (variables and environment "
                    "assignments are refused)"
                )


def split_line(line: str) -> tuple[tuple[str, ...], ...]:
    """The simple commands of `line` (words after quote removal); CommandParseError otherwise.

    The words are exactly the argv a POSIX shell would pass: plain characters need no
    quoting, and quotes around plain characters are only removed.
    """
    commands: list[tuple[str, ...]] = []
    words: list[str] = []
    word: list[str] = []
    in_word = False
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch in PLAIN_CHARS:
            word.append(ch)
            in_word = True
            i += 1
        elif ch in _BLANKS:
            if in_word:
                words.append("".join(word))
                word, in_word = [], False
            i += 1
        elif ch in _QUOTES:
            text, i = _quoted(line, i)
            word.append(text)
            in_word = True
        elif ch in _OPERATOR_CHARS:
            op, j = _separator(line, i)
            if in_word:
                words.append("".join(word))
                word, in_word = [], False
            if not words:
                raise CommandParseError(
                    f"operator {op!r} at column {i + 1} has no command before it"
                )
            commands.append(tuple(words))
            words = []
            i = j
        else:
            raise _refuse_char(ch, i)
    if in_word:
        words.append("".join(word))
    if words:
        commands.append(tuple(words))
    elif commands:
        raise CommandParseError("the line ends with an operator and no command after it")
    if not commands:
        raise CommandParseError("empty command")
    _check_programs(commands)
    return tuple(commands)


def prefix_allows(allowed: tuple[str, ...], argv: tuple[str, ...]) -> str | None:
    """The allow-list entry whose program and leading arguments start `argv`, or None.

    `pytest` allows `pytest -q tests/` but not `pytestx`; `python3 -m py_compile` allows
    `python3 -m py_compile a.py` but not `python3 -c ...`. Programs compare literally
    (`/usr/bin/pytest` is not `pytest`). An entry that is not plain words itself can only
    be matched verbatim (see `verbatim_allows`).
    """
    for entry in allowed:
        try:
            (want,) = split_line(entry)
        except (CommandParseError, ValueError):
            continue
        if argv[: len(want)] == want:
            return entry
    return None


def verbatim_allows(allowed: tuple[str, ...], line: str) -> bool:
    """True when `line`, without surrounding blanks, is exactly one allow-list entry (not a
    typed pattern: `{path}` typed out is no path)."""
    return "{" not in line and line.strip(" \t") in allowed
