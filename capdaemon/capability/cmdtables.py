"""The option tables of the programs tasks commonly allow: pytest, python -m, git, npm/pnpm/yarn,
make, cargo and go.

Each table lists the options capdaemon knows to be harmless (flags, plain values, paths read),
and the options refused with the reason: they write or delete files, load code, read
configuration from elsewhere, or move the directory the program works in. An option a table
does not list is refused; so is a subcommand it does not list (a task may still list the exact
line, or a pattern, in its `commands`). README "The task file" documents the tables.
"""

from __future__ import annotations

from capdaemon.capability.cmdopts import (
    NODE,
    PKG,
    READ,
    REV_OR_READ,
    TARGET,
    WORD,
    WRITE,
    Finding,
    Spec,
    Walk,
    analyse,
    read_option,
    run_walker,
    walk_spec,
    walk_subcommands,
    walk_unknown,
)

_WRITES = "writes a file"
_LOADS = "loads code"
_CONFIG = "reads configuration from elsewhere"
_CHDIR = "moves the directory the program works in"

PYTEST = Spec(
    "pytest",
    flags="-q --quiet -v --verbose -x --exitfirst -s -l --showlocals --lf --last-failed --ff "
    "--failed-first --nf --new-first --sw --stepwise --sw-skip --stepwise-skip --co "
    "--collect-only --setup-show --setup-only --setup-plan --runxfail --strict-markers "
    "--strict-config --strict --doctest-modules --fixtures --fixtures-per-test --markers "
    "--version -V -h --help --no-header --no-summary --disable-warnings "
    "--disable-pytest-warnings --full-trace --continue-on-collection-errors --cache-show "
    "--cache-clear --noconftest --keep-duplicates --pdb --trace --trace-config "
    "--showlocals --no-showlocals",
    values="-k -m -r -n --numprocesses --maxprocesses --dist --maxfail --tb --durations "
    "--durations-min --import-mode --color --code-highlight --capture --timeout --log-level "
    "--log-cli-level --lfnf --last-failed-no-failures --verbosity --assert",
    reads="--deselect --ignore --ignore-glob",
    refused={
        "writes a report file": "--junitxml --junit-xml --resultlog --result-log --report-log",
        "writes a debug or log file": "--debug --log-file",
        "deletes and recreates that folder": "--basetemp",
        "overrides ini settings (cache_dir, addopts, …)": "-o --override-ini",
        "reads its configuration from that file": "-c --config-file --inifile",
        "moves the root or conftest search elsewhere": "--rootdir --confcutdir",
        "imports the warning category's module": "-W --pythonwarnings",
        _LOADS: "--pdbcls",
        "sends the output over the network": "--pastebin",
        "writes coverage data": "--cov --cov-report --cov-config --cov-append",
    },
    guarded={"-p": (("no:",), "loads a plugin (only -p no:NAME, which disables one, is allowed)")},
    positional=NODE,
    after_dd=NODE,
)

PY_COMPILE = Spec("py_compile", flags="-q", positional=WRITE)  # writes __pycache__/ beside
COMPILEALL = Spec(
    "compileall",
    flags="-l -f -q -b",
    values="-r -j -o -x --invalidation-mode",
    refused={
        "writes the byte code elsewhere": "-d -s -p -e --hardlink-dupes",
        "reads the file list from a file": "-i",
    },
    positional=WRITE,
)
UNITTEST = Spec("unittest", flags="-v -q -f -c -b --locals --failfast --catch --buffer",
                values="-k --durations", positional=WORD)  # fmt: skip
PYTHON = Spec(
    "python",
    flags="-B -b -d -E -I -O -q -s -S -u -v -P -V --version -h --help",
    values="--check-hash-based-pycs",
    refused={
        "runs the code given on the command line": "-c",
        "sets implementation options (-X pycache_prefix=… writes elsewhere)": "-X",
        "imports the warning category's module": "-W",
        "reads the program from standard input": "-i",
    },
)
PYTHON_MODULES = {"pytest": PYTEST, "py_compile": PY_COMPILE, "compileall": COMPILEALL,
                  "unittest": UNITTEST}  # fmt: skip


def _python(walk: Walk, i: int) -> None:
    """`python [options] (-m MODULE | SCRIPT) args…`: a known module's table, else none."""
    argv = walk.argv
    while i < len(argv):
        word = argv[i]
        if word.startswith("-m"):
            module = word[2:]
            if not module and i + 1 < len(argv):
                i += 1
                module = argv[i]
            if not module:
                walk.refuse(i, "python -m needs a module")
                return
            spec = PYTHON_MODULES.get(module)
            if spec is None:
                walk_unknown(walk, i + 1, f"python -m {module}")
            else:
                walk_spec(spec, walk, i + 1)
            return
        if word == "-" or not word.startswith("-"):
            if word == "-":
                walk.refuse(i, "python - reads the program from standard input")
            else:
                walk.path(i, READ, word)  # the script is read; its arguments are its own
            walk_unknown(walk, i + 1, word)
            return
        i = read_option(PYTHON, walk, i)


_GIT_READ_FLAGS = (
    "--shortstat --numstat --name-only --name-status --summary --cached --staged -p -u "
    "--patch --no-patch -s --raw -z --no-color -w -b --ignore-space-change "
    "--ignore-all-space --ignore-blank-lines --check --exit-code --quiet -R --no-renames "
    "--patience --histogram --minimal --full-index --binary --no-relative --no-abbrev "
    "--oneline --graph --all --no-decorate --reverse --first-parent --merges --no-merges "
    "--follow --short --branch --long --show-signature --no-show-signature --source "
    "--parents --children --left-right --boundary --topo-order --date-order --full-history "
    "--simplify-merges --compact-summary -i -n -l -c -h -H -E -F -t -o -m -d --others "
    "--exclude-standard --modified --deleted --ignore-case --line-number "
    "--files-with-matches --count --fixed-strings --extended-regexp --show-toplevel "
    "--show-prefix --abbrev-ref --verify --is-inside-work-tree --git-dir --show-cdup "
    "--symbolic-full-name -v --verbose --list --no-ext-diff --no-textconv"
)
_GIT_READ_OPTIONAL = (
    "--stat --porcelain --untracked-files --ignored --abbrev --color --word-diff "
    "--find-renames --find-copies --dirstat --decorate --relative --color-words -M -C -B"
)
GIT_READ = Spec(
    "git",
    flags=_GIT_READ_FLAGS,
    optional=_GIT_READ_OPTIONAL,
    values="-U --unified --format --pretty --max-count --skip --since --until --after --before "
    "--author --committer --grep --diff-filter --date --stat-width --inter-hunk-context "
    "--word-diff-regex --encoding -S -G -e -L --max-depth --format --sort",
    refused={
        _WRITES: "--output --output-directory",
        "runs an external diff or text conversion program": "--ext-diff --textconv",
        "reads files outside the repository": "--no-index --contents",
        "runs a program (pager, editor)": "-O --open-files-in-pager",
    },
    positional=REV_OR_READ,
    after_dd=READ,
)
GIT_ADD = Spec("git add", flags="-A --all -u --update -v -n --dry-run -N --intent-to-add -f",
               refused={_CONFIG: "--pathspec-from-file"}, positional=WRITE,
               after_dd=WRITE)  # fmt: skip
GIT_COMMIT = Spec(
    "git commit",
    flags="-a --all -q --quiet -v --verbose -s --signoff --amend --no-edit --allow-empty -n "
    "--no-verify",
    values="-m --message --author --date",
    reads="-F --file",
    refused={_CONFIG: "--pathspec-from-file --template", "runs an editor": "-e --edit"},
    positional=WRITE,
    after_dd=WRITE,
)
_GIT_READ_SUBCOMMANDS = ("diff log show status blame ls-files ls-tree grep rev-parse shortlog "
                         "describe cat-file diff-tree diff-files diff-index rev-list merge-base "
                         "whatchanged")  # fmt: skip
GIT = {name: GIT_READ for name in _GIT_READ_SUBCOMMANDS.split()}
GIT.update({"add": GIT_ADD, "commit": GIT_COMMIT})
GIT_GLOBAL = Spec(
    "git",
    flags="--no-pager -P --no-optional-locks --literal-pathspecs --no-replace-objects --version",
    refused={
        "sets configuration (a command, a hook, a pager)": "-c --config-env",
        "points git at another repository or work tree": "--git-dir --work-tree --namespace "
        "--bare --super-prefix",
        _CHDIR: "-C",
        "runs git's programs from elsewhere": "--exec-path",
        "runs the configured pager": "-p --paginate",
    },
)

_NPM_REFUSED = {
    "installs, reads or writes outside the repository": "--prefix -g --global --location "
    "--cache --cache-folder --global-folder --modules-folder",
    _CONFIG: "--userconfig --globalconfig --use-yarnrc --rc --registry --init-module",
    _CHDIR: "-C --dir --cwd",
    "runs scripts with another program": "--script-shell --node-options --shell-emulator",
}
_NPM_FLAGS = (
    "-s --silent -q --quiet --if-present --ignore-scripts --no-audit --no-fund "
    "--frozen-lockfile --offline --prefer-offline --immutable -r --recursive"
)
NPM_RUN = Spec("npm run", flags=_NPM_FLAGS, values="--loglevel --filter",
               reads="-w --workspace", refused=_NPM_REFUSED, positional=WORD)  # fmt: skip
NPM_TEST = Spec("npm test", flags=_NPM_FLAGS, values="--loglevel --filter",
                reads="-w --workspace", refused=_NPM_REFUSED, positional=WRITE)  # fmt: skip


def _npm_run(walk: Walk, i: int, prog: str) -> None:
    """`npm run SCRIPT args…`: npm's options by the table; the script's arguments are its own."""
    argv = walk.argv
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        i = read_option(NPM_RUN, walk, i)
    if i < len(argv) and argv[i] != "--":
        i += 1  # the script name: npm runs what package.json says (the work tree's own code)
    if i < len(argv) and argv[i] == "--":
        i += 1
    walk_unknown(walk, i, f"{prog} script")


def _npm_family(prog: str, subs: str, runs: str) -> object:
    """A walker for npm, pnpm or yarn: the subcommands `subs`, `runs` run a script."""
    run_words = set(runs.split())
    table = {s: NPM_TEST for s in subs.split()}
    glob = Spec(prog, flags=_NPM_FLAGS, values="--loglevel --filter", reads="-w --workspace",
                refused=_NPM_REFUSED)  # fmt: skip

    def walker(walk: Walk, i: int) -> None:
        argv = walk.argv
        while i < len(argv) and argv[i].startswith("-"):
            i = read_option(glob, walk, i)
        if i < len(argv) and argv[i] in run_words:
            _npm_run(walk, i + 1, prog)
        else:
            walk_subcommands(walk, i, prog, table)

    return walker


MAKE = Spec(
    "make",
    flags="-s --silent --quiet -k --keep-going -n --dry-run --just-print --recon -B "
    "--always-make -q --question -r --no-builtin-rules -R --no-builtin-variables -S "
    "--no-keep-going --stop -w --print-directory --no-print-directory --trace -p "
    "--print-data-base -v --version -h --help",
    values="-j --jobs -l --load-average -O --output-sync",
    refused={
        "reads a makefile or include from elsewhere": "-f --file --makefile -I --include-dir",
        _CHDIR: "-C --directory",
        "evaluates text as makefile code": "-E --eval",
        "marks files as changed or unchanged": "-o --old-file --assume-old -W --what-if "
        "--new-file --assume-new",
        "lets the environment override the makefile": "-e --environment-overrides",
        "touches targets instead of making them": "-t --touch",
        "ignores errors of the recipes": "-i --ignore-errors",
        "writes a debug trace": "-d --debug",
    },
    positional=TARGET,
)

CARGO = Spec(
    "cargo",
    flags="-q --quiet -v --verbose --release --offline --locked --frozen --lib --bins --tests "
    "--benches --examples --all-targets --workspace --all --all-features "
    "--no-default-features --no-run --no-fail-fast --doc --keep-going -h --help",
    values="-p --package -F --features --test --bin --example --bench -j --jobs --target "
    "--message-format --color --profile --exclude",
    refused={
        "reads a manifest from elsewhere": "--manifest-path --lockfile-path",
        "writes build output elsewhere": "--target-dir --artifact-dir --out-dir --timings",
        "overrides configuration": "--config -Z",
        _CHDIR: "-C",
    },
    positional=WORD,
)
_CARGO_SUBS = "test build check clippy doc bench run tree t b c"

GO = Spec(
    "go",
    flags="-v -race -short -failfast -cover -x -n -a -trimpath -json -msan -asan -benchmem "
    "-m -modcacherw -buildvcs",
    values="-run -skip -bench -count -timeout -tags -p -covermode -coverpkg -benchtime -cpu "
    "-parallel -shuffle -vet -f -list -buildmode -compiler",
    refused={
        _WRITES: "-o -coverprofile -cpuprofile -memprofile -blockprofile -mutexprofile -trace "
        "-outputdir",
        "runs another program": "-toolexec -exec",
        _CONFIG: "-modfile -overlay -pkgdir",
        _CHDIR: "-C",
        "passes flags to the compiler or linker": "-gcflags -ldflags -asmflags -gccgoflags",
        "passes the rest to the test binary": "-args",
    },
    guarded={"-mod": (("readonly", "vendor"), "may rewrite go.mod (only readonly or vendor)")},
    positional=PKG,
    go_style=True,
)
_GO_SUBS = "test build vet list"


def _git(walk: Walk, i: int) -> None:
    walk_subcommands(walk, i, "git", GIT, GIT_GLOBAL)


def _cargo(walk: Walk, i: int) -> None:
    walk_subcommands(walk, i, "cargo", {s: CARGO for s in _CARGO_SUBS.split()}, CARGO)


def _go(walk: Walk, i: int) -> None:
    walk_subcommands(walk, i, "go", {s: GO for s in _GO_SUBS.split()})


def _pytest(walk: Walk, i: int) -> None:
    walk_spec(PYTEST, walk, i)


def _make(walk: Walk, i: int) -> None:
    walk_spec(MAKE, walk, i)


WALKERS = {
    "pytest": _pytest,
    "py.test": _pytest,
    "git": _git,
    "npm": _npm_family("npm", "test t ci ls list outdated", "run run-script"),
    "pnpm": _npm_family("pnpm", "test t ls list outdated", "run run-script"),
    "yarn": _npm_family("yarn", "test ls list outdated", "run"),
    "make": _make,
    "gmake": _make,
    "cargo": _cargo,
    "go": _go,
}


def _is_python(prog: str) -> bool:
    """`python`, `python3`, `python3.11` (a program name, not a path)."""
    if prog in ("python", "python3"):
        return True
    head, dot, minor = prog.partition(".")
    return head == "python3" and bool(dot) and minor.isdigit()


def findings(argv: tuple[str, ...], trusted: int = 1) -> list[Finding]:
    """The path words and the first refused word of one command after its `trusted` words
    (an allow-list entry's own words); see capdaemon.capability.cmdopts."""
    if _is_python(argv[0]):
        return run_walker(Walk(argv, max(1, trusted)), _python)
    return analyse(argv, WALKERS, trusted)  # type: ignore[arg-type]
