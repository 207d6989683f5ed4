"""Read an allowed program's arguments: which words name paths, which options are refused.

`analyse(argv)` walks the words of one simple command with the program's table (see
`capdaemon.capability.cmdtables`) and returns findings: a word that names a path to read, a
path to write, or a word refused with the reason. It knows nothing of the capability or the
disk; `capdaemon.capability.scope.check_command` turns the findings into violations.

Parse less, refuse more: an option the table does not know is refused (so is an abbreviation
of a known one); an option that writes, deletes, loads code or reads configuration from
elsewhere is refused; a program without a table has its options refused and every other word
checked as a path it may write.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~2 ms to import: scope-guard imports this module
if TYPE_CHECKING:
    from collections.abc import Callable

# Finding kinds
READ = "read"  # a path read as input: in scope, or an existing, non-forbidden file in the repo
WRITE = "write"  # a path the program may write: must be in scope (allowed, not forbidden)
REFUSE = "refuse"  # the word is refused; the finding's text says why

# What a table says of an option or a positional word
FLAG = "flag"  # takes no value
VALUE = "value"  # takes a value that is not a path (`-k EXPR`, `--maxfail=N`)
OPTIONAL = "optional"  # may have a value that is not a path, attached only (`--stat=80`, `-M50%`)
WORD = "word"  # positional: a plain word that is not a path (a make target, a script name)
NODE = "node"  # positional: a pytest node id, `path::name`, whose path is read
REV_OR_READ = "rev-or-read"  # positional: a git revision, or a path (read) when one exists
PKG = "pkg"  # positional: a go package pattern (`./x/...`), whose folder is read
TARGET = "target"  # positional: a make target; one that contains `/` is a path written
UNKNOWN = "unknown"  # after `--`: words for another program: options refused, words written

Finding = tuple[int, str, str, str]  # (word index in argv, kind READ/WRITE/REFUSE, word, why)


class Spec:
    """One program's (or subcommand's) options: space-separated names per kind.

    `refused` maps a reason to the options refused for it. `guarded` maps an option to
    (the prefixes its value may start with, why otherwise): pytest `-p no:NAME` disables a plugin,
    `-p NAME` loads one. `go_style` options start with one or two dashes and never cluster;
    otherwise `-abc` is a cluster of short options and `-kEXPR` a short option's value.
    """

    __slots__ = ("after_dd", "go_style", "guarded", "kinds", "name", "positional", "refused")

    def __init__(
        self,
        name: str,
        *,
        flags: str = "",
        values: str = "",
        optional: str = "",
        reads: str = "",
        refused: dict[str, str] | None = None,
        guarded: dict[str, tuple[tuple[str, ...], str]] | None = None,
        positional: str = WRITE,
        after_dd: str = UNKNOWN,
        go_style: bool = False,
    ) -> None:
        self.name = name
        self.kinds: dict[str, str] = {}
        for kind, names in ((FLAG, flags), (VALUE, values), (OPTIONAL, optional), (READ, reads)):
            for opt in names.split():
                self.kinds[opt] = kind
        self.refused: dict[str, str] = {}
        for why, names in (refused or {}).items():
            for opt in names.split():
                self.refused[opt] = why
                self.kinds[opt] = REFUSE
        self.guarded = guarded or {}
        for opt in self.guarded:
            self.kinds[opt] = VALUE
        self.positional = positional
        self.after_dd = after_dd
        self.go_style = go_style


class _Stop(Exception):
    """The first refused word past the trusted words ends the walk (what follows is moot)."""


class Walk:
    """The findings of one command, gathered as its words are read.

    The first `trusted` words are an allow-list entry's own words: findings there are the
    capability's choice and are not kept. The first refusal past them ends the walk.
    """

    __slots__ = ("argv", "out", "trusted")

    def __init__(self, argv: tuple[str, ...], trusted: int = 1) -> None:
        self.argv = argv
        self.trusted = trusted
        self.out: list[Finding] = []

    def refuse(self, i: int, why: str) -> None:
        if i >= self.trusted:
            self.out.append((i, REFUSE, self.argv[i], why))
            raise _Stop

    def path(self, i: int, kind: str, word: str) -> None:
        if i >= self.trusted:
            self.out.append((i, kind, word, ""))


def _value(spec: Spec, walk: Walk, i: int, opt: str, kind: str, value: str) -> None:
    """A known option's value: guarded values checked, path values reported."""
    guard = spec.guarded.get(opt)
    if guard is not None and not value.startswith(guard[0]):  # a tuple: any of these
        walk.refuse(i, f"{spec.name} {opt} {guard[1]}")
    elif kind == READ:
        walk.path(i, READ, value.split("::", 1)[0])  # a pytest node id names its file


_NOT_IN_TABLE = (
    "is not in capdaemon's table; list the exact line, or a pattern, in the task's commands"
)


def _known(spec: Spec, walk: Walk, i: int, name: str) -> str:
    """The option's kind; a refusal (ending the walk) when unknown or refused."""
    kind = spec.kinds.get(name)
    if kind is None:
        walk.refuse(i, f"option {name} of {spec.name} {_NOT_IN_TABLE}")
    elif kind == REFUSE:
        walk.refuse(i, f"{spec.name} {name} {spec.refused[name]}")
    return kind or REFUSE


def _next_value(spec: Spec, walk: Walk, i: int, name: str) -> int:
    """The index of the word that is option `name`'s value (refused when there is none)."""
    if i + 1 >= len(walk.argv):
        walk.refuse(i, f"{spec.name} {name} needs a value")
    return i + 1


def read_option(spec: Spec, walk: Walk, i: int) -> int:
    """Read the option word at `i` (and its value word); the index of the next word."""
    word = walk.argv[i]
    if not (word.startswith("--") or spec.go_style):
        return _short_cluster(spec, walk, i)
    name, eq, value = word.partition("=")
    if spec.go_style:
        name = "-" + name.lstrip("-")  # go reads -flag and --flag alike
    kind = _known(spec, walk, i, name)
    if kind == OPTIONAL:
        return i + 1
    if kind in (FLAG, REFUSE):
        if eq and not spec.go_style:
            walk.refuse(i, f"{spec.name} {name} takes no value")
        return i + 1
    if not eq:
        i = _next_value(spec, walk, i, name)
        value = walk.argv[i]
    _value(spec, walk, i, name, kind, value)
    return i + 1


def _short_cluster(spec: Spec, walk: Walk, i: int) -> int:
    """A cluster of short options: -qx, -kEXPR, -k EXPR."""
    word = walk.argv[i]
    for j in range(1, len(word)):
        opt = "-" + word[j]
        kind = _known(spec, walk, i, opt)
        if kind in (FLAG, REFUSE):
            continue
        if kind == OPTIONAL:
            # the rest of the word is its value: a number (`-M50%`, `-B20/60`), never more
            # letters, which another reader could take for further options (`-MOfile`)
            if word[j + 1 :].strip("0123456789.%/"):
                walk.refuse(i, f"{spec.name} {opt} takes only a number attached ({word})")
            return i + 1
        value = word[j + 1 :]
        if not value:
            i = _next_value(spec, walk, i, opt)
            value = walk.argv[i]
        _value(spec, walk, i, opt, kind, value)
        return i + 1
    return i + 1


def _positional(walk: Walk, i: int, kind: str) -> None:
    word = walk.argv[i]
    if kind in (READ, WRITE):
        walk.path(i, kind, word)
    elif kind == NODE:
        if word.startswith("@"):  # pytest (argparse) reads more arguments from that file
            walk.refuse(i, "@FILE reads further arguments from a file")
        walk.path(i, READ, word.split("::", 1)[0])
    elif kind == PKG:
        walk.path(i, READ, word.removesuffix("/...").removesuffix("...") or ".")
    elif kind == REV_OR_READ:
        walk.path(i, REV_OR_READ, word)
    elif kind == TARGET and "/" in word:
        walk.path(i, WRITE, word)
    # WORD (and a TARGET without `/`): a plain word, nothing to check


def walk_spec(spec: Spec, walk: Walk, start: int) -> None:
    """Read argv[start:] with `spec`: options by the table, `--`, then positional words."""
    argv = walk.argv
    i = start
    while i < len(argv):
        word = argv[i]
        if word == "--":
            for k in range(i + 1, len(argv)):
                if spec.after_dd == UNKNOWN:
                    _unknown_word(walk, k, spec.name)
                else:
                    _positional(walk, k, spec.after_dd)
            return
        if word.startswith("-") and word != "-":
            i = read_option(spec, walk, i)
        else:
            _positional(walk, i, spec.positional)
            i += 1


def _unknown_word(walk: Walk, i: int, prog: str) -> None:
    word = walk.argv[i]
    if word.startswith("-"):
        walk.refuse(
            i,
            f"{prog} has no table in capdaemon, so its options are refused; "
            "list the exact line, or a pattern, in the task's commands",
        )
    else:
        walk.path(i, WRITE, word)


def walk_unknown(walk: Walk, start: int, prog: str) -> None:
    """A program without a table: options refused, every other word a path it may write."""
    for i in range(start, len(walk.argv)):
        _unknown_word(walk, i, prog)


def walk_subcommands(
    walk: Walk, start: int, prog: str, table: dict[str, Spec], first: Spec | None = None
) -> None:
    """`prog [global options] SUBCOMMAND ...`: the global options by `first`, then the
    subcommand's spec; a subcommand not in `table` is refused."""
    argv = walk.argv
    i = start
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        if first is None:
            walk.refuse(i, f"{prog} options before the subcommand are refused")
            i += 1
        else:
            i = read_option(first, walk, i)
    if i >= len(argv):
        return
    spec = table.get(argv[i])
    if spec is None:
        walk.refuse(i, f"{prog} {argv[i]} {_NOT_IN_TABLE}")
        walk_unknown(walk, i + 1, f"{prog} {argv[i]}")  # an entry may list the subcommand
        return
    walk_spec(spec, walk, i + 1)


def run_walker(walk: Walk, walker: Callable[[Walk, int], None]) -> list[Finding]:
    """Run `walker` over the walk's words after the program name; the findings."""
    try:
        walker(walk, 1)
    except _Stop:
        pass
    return walk.out


def analyse(
    argv: tuple[str, ...], walkers: dict[str, Callable[[Walk, int], None]], trusted: int = 1
) -> list[Finding]:
    """The findings for the words of `argv` after its first `trusted` words (at least the
    program name): paths read or written, and at most one refused word (the first)."""
    walk = Walk(argv, max(1, trusted))
    walker = walkers.get(argv[0])
    if walker is None:
        prog = argv[0]

        def walker(w: Walk, i: int) -> None:
            walk_unknown(w, i, prog)

    return run_walker(walk, walker)
