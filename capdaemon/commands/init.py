"""`capdaemon init [DIR]`: write a starter config from the packaged, commented sample.

Asks nothing; the config starts in shadow mode. `--repo`/`--owner` fill the obvious fields;
`--detect PATH` looks at a local clone for its source root and its docs/tests/examples
folders. Never overwrites a file: when any file it would write exists, it writes nothing and
says which.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from capdaemon.filenames import CLASSIFIER_CONFIG_FILE, MAIN_CONFIG_FILE

_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$")
_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?$")
_SAFE_CANDIDATES = ("docs/", "doc/", "examples/", "tests/", "test/")


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `capdaemon init`."""
    parser.add_argument(
        "dir",
        nargs="?",
        type=Path,
        default=Path("config"),
        help="where to write (default ./config)",
    )
    parser.add_argument(
        "--repo",
        action="append",
        default=[],
        metavar="OWNER/NAME",
        help="a repository to supervise (repeatable)",
    )
    parser.add_argument(
        "--owner", action="append", default=[], metavar="LOGIN", help="an owner (repeatable)"
    )
    parser.add_argument(
        "--bot-repo",
        metavar="OWNER/NAME",
        help="the bot's own deployment repo (its PRs are always D; ballots are opened there)",
    )
    parser.add_argument(
        "--detect", type=Path, metavar="PATH", help="a local clone to suggest globs from"
    )


def run(args: argparse.Namespace) -> int:
    """0 when the files were written; 2 on bad input or when a target file exists."""
    from capdaemon.commands._common import CLIError, error, printable

    try:
        written = write_starter(
            args.dir,
            repos=args.repo,
            owners=args.owner,
            bot_repo=args.bot_repo,
            detect=args.detect,
        )
    except CLIError as exc:
        error("init", str(exc))
        return exc.code
    for path in written:
        print(f"wrote {printable(str(path))}")
    print(
        f"next: edit {printable(str(args.dir / MAIN_CONFIG_FILE))} (github.app_id, "
        f"private_key_file), then `capdaemon doctor --config {printable(str(args.dir))}`"
    )
    return 0


def write_starter(
    target: Path,
    *,
    repos: list[str],
    owners: list[str],
    bot_repo: str | None = None,
    detect: Path | None = None,
) -> list[Path]:
    """Copy the sample config into `target` with the given fields filled; the files written.

    CLIError (nothing written) on a bad --repo/--owner, a missing --detect folder, or when any
    file would be overwritten.
    """
    from capdaemon.commands._common import CLIError
    from capdaemon.resources import sample_config_dir

    for repo in [*repos, *([bot_repo] if bot_repo else [])]:
        if not _REPO.match(repo):
            raise CLIError(f"--repo {repo!r} is not OWNER/NAME")
    for login in owners:
        if not _LOGIN.match(login):
            raise CLIError(f"--owner {login!r} is not a GitHub login")
    if detect is not None and not detect.is_dir():
        raise CLIError(f"--detect {detect}: not a directory")
    if target.exists() and not target.is_dir():
        raise CLIError(f"{target} exists and is not a directory")
    sample = sample_config_dir()
    files = sorted(p for p in sample.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    if not files:
        raise CLIError(f"the sample config is missing from {sample}; reinstall capdaemon")
    texts = {p.relative_to(sample): p.read_text(encoding="utf-8") for p in files}
    main, classifier = Path(MAIN_CONFIG_FILE), Path(CLASSIFIER_CONFIG_FILE)
    texts[main] = fill_main(texts[main], repos, owners, bot_repo)
    if detect is not None:
        texts[classifier] = fill_classifier(texts[classifier], detect)
    existing = [target / rel for rel in texts if (target / rel).exists()]
    if existing:
        raise CLIError(
            f"{existing[0]} exists; init never overwrites a file (nothing written; "
            "choose another DIR or move the old config away)"
        )
    written = []
    for rel, text in texts.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8") as fh:  # "x": fails rather than overwrite
            fh.write(text)
        written.append(path)
    return written


def fill_main(text: str, repos: list[str], owners: list[str], bot_repo: str | None) -> str:
    """The sample capdaemon.yml in shadow mode (a new deployment merges nothing until an
    operator switches it to enforce), with its repos, owners and the bot's own repo replaced."""
    text = re.sub(r"(?m)^mode: enforce( *)", r"mode: shadow \g<1>", text, count=1)
    if owners:
        text = re.sub(r"(?m)^owners: \[[^\]]*\]", f"owners: [{', '.join(owners)}]", text, count=1)
    if repos:
        text = re.sub(r"(?m)^  - name: \S+", f"  - name: {repos[0]}", text, count=1)
        extra = "".join(f"  - name: {r}\n    base: main\n" for r in repos[1:])
        text = re.sub(r"(?m)^(?=schedule:)", extra + "\n" if extra else "", text, count=1)
    if bot_repo:
        text = re.sub(r"(?m)^(  own_repo: )\S+", rf"\g<1>{bot_repo}", text, count=1)
    return text


def detect_layout(clone: Path) -> tuple[str | None, list[str]]:
    """(source root, folders that look safe to carve out) of a local clone."""
    src = clone / "src"
    packages = (
        sorted(p.name for p in src.iterdir() if (p / "__init__.py").is_file())
        if (src.is_dir())
        else []
    )
    root: str | None = f"src/{packages[0]}" if packages else None
    if root is None:
        top = sorted(
            p.name
            for p in clone.iterdir()
            if (p / "__init__.py").is_file() and p.name not in ("tests", "test", "docs")
        )
        root = top[0] if top else ("src" if src.is_dir() else None)
    safe = [d for d in _SAFE_CANDIDATES if (clone / d).is_dir()]
    return root, safe


def fill_classifier(text: str, clone: Path) -> str:
    """The sample classifier.yml with the detected source root, and the detected docs/tests/
    examples folders as a commented suggestion (carving out is the operator's call)."""
    root, safe = detect_layout(clone)
    if root is not None:
        text = re.sub(r"(?m)^source_root: .*$", f"source_root: {root}", text, count=1)
    if safe:
        suggestion = (
            f"# Found in {clone.name or clone}: uncomment after review (changes under these "
            "folders are then non-critical):\n"
            f"# known_safe_dirs: [{', '.join(safe)}]\n"
        )
        text = re.sub(r"(?m)^(?=known_safe_dirs: )", suggestion, text, count=1)
    return text
