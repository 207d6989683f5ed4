"""`capdaemon init [DIR]`: write a starter config from the packaged, commented sample.

Asks nothing; the sample is generic (no repos, owners or App yet) and starts in shadow mode.
`--repo`/`--owner`/`--bot-repo` fill the obvious fields; `--detect CLONE` prints what a local
clone shows (default branch, languages, top folders, CI workflows) and writes it in: the repo
(from `origin` when no --repo), its base branch, the source root, and commented suggestions
(safe folders, CI checks). Never overwrites a file: when any file it would write exists, it
writes nothing and says which.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from pathlib import Path

from capdaemon.commands._common import CLIError, error, printable
from capdaemon.commands.detect import Detected, git_output
from capdaemon.commands.detect import detect as detect_clone
from capdaemon.filenames import CLASSIFIER_CONFIG_FILE, MAIN_CONFIG_FILE
from capdaemon.resources import sample_config_dir

_ACTIONS_APP_ID = 15368  # GitHub Actions' App id on github.com: its check runs carry it
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$")
_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?$")


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
    try:
        written = write_starter(
            args.dir,
            repos=args.repo,
            owners=args.owner,
            bot_repo=args.bot_repo,
            detect=args.detect,
            report=lambda line: print(printable(line)),
        )
    except CLIError as exc:
        error("init", str(exc))
        return exc.code
    for path in written:
        print(f"wrote {printable(str(path))}")
    main = printable(str(args.dir / MAIN_CONFIG_FILE))
    print(
        f"next: in {main} fill in the GitHub App (github.app_id, private_key_file, "
        "canonical_app; see docs/github-app.md), bot.own_repo, owners and repos; then "
        f"`capdaemon doctor --config {printable(str(args.dir))}`"
    )
    return 0


def write_starter(
    target: Path,
    *,
    repos: list[str],
    owners: list[str],
    bot_repo: str | None = None,
    detect: Path | None = None,
    report: Callable[[str], None] | None = None,
) -> list[Path]:
    """Copy the sample config into `target` with the given fields filled; the files written.
    `report` is told what --detect found (one line at a time).

    CLIError (nothing written) on a bad --repo/--owner, a missing --detect folder, or when any
    file would be overwritten.
    """
    _check_arguments(target, repos, owners, bot_repo, detect)
    texts = _sample_texts()
    main, classifier = Path(MAIN_CONFIG_FILE), Path(CLASSIFIER_CONFIG_FILE)
    found = detect_clone(detect) if detect is not None else None
    if found is not None:
        repos = repos or [r for r in (_origin_repo(found.clone),) if r]
        texts[classifier] = fill_classifier(texts[classifier], found)
        if report is not None:
            for line in found.lines():
                report(line)
    texts[main] = fill_main(texts[main], repos, owners, bot_repo, found)
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


def _check_arguments(
    target: Path, repos: list[str], owners: list[str], bot_repo: str | None, detect: Path | None
) -> None:
    """CLIError naming the first bad argument."""
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


def _sample_texts() -> dict[Path, str]:
    """The packaged sample config's files (relative path → text)."""
    sample = sample_config_dir()
    files = sorted(p for p in sample.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    if not files:
        raise CLIError(f"the sample config is missing from {sample}; reinstall capdaemon")
    return {p.relative_to(sample): p.read_text(encoding="utf-8") for p in files}


def _origin_repo(clone: Path) -> str | None:
    """OWNER/NAME of a clone's `origin` when it is a GitHub-style URL, else None."""
    url = git_output(clone, "remote", "get-url", "origin") or ""
    m = re.search(r"[:/]([A-Za-z0-9][A-Za-z0-9-]{0,38})/([A-Za-z0-9._-]{1,100}?)(?:\.git)?/?$", url)
    repo = f"{m[1]}/{m[2]}" if m else None
    return repo if repo and _REPO.match(repo) else None


def _repo_entry(name: str, base: str, checks: list[str]) -> str:
    lines = [f"  - name: {name}", f"    base: {base}", "    merge_method: squash"]
    lines += ["    require_capability: false", "    extra_checks: []"]
    if checks:
        pinned = ", ".join(
            f"{{context: {json.dumps(c)}, app_id: {_ACTIONS_APP_ID}}}" for c in checks
        )
        lines += [
            "    # found in .github/workflows: require them too (check the names on a PR first;",
            "    # a matrix job reports `name (value)`), pinned to GitHub Actions:",
            f"    # extra_checks: [{pinned}]",
        ]
    return "\n".join(lines) + "\n"


def fill_main(
    text: str,
    repos: list[str],
    owners: list[str],
    bot_repo: str | None,
    found: Detected | None = None,
) -> str:
    """The sample capdaemon.yml (shadow mode: a new deployment merges nothing until an operator
    switches it to enforce) with its repos, owners and the bot's own repo filled in; a detected
    clone gives the first repo's base branch and suggests its CI checks."""
    if owners:
        text = re.sub(r"(?m)^owners: \[\]", f"owners: [{', '.join(owners)}]", text, count=1)
    if repos:
        base = (found.default_branch if found else None) or "main"
        entries = [_repo_entry(repos[0], base, found.checks if found else [])]
        entries += [_repo_entry(r, "main", []) for r in repos[1:]]
        block = "repos:\n" + "".join(entries)
        text = re.sub(r"(?m)^repos: \[\]\n", lambda _m: block, text, count=1)
    if bot_repo:
        text = re.sub(r"(?m)^  # own_repo: \S+", f"  own_repo: {bot_repo}", text, count=1)
    return _found_header(text, found)


def _found_header(text: str, found: Detected | None) -> str:
    """The text with what --detect found as a comment block after the file's first line."""
    if found is None:
        return text
    first, _, rest = text.partition("\n")
    block = "".join(f"#   {line.strip()}\n" for line in found.lines()[1:])
    return f"{first}\n#\n# `capdaemon init --detect` {found.lines()[0]}\n{block}#\n{rest}"


def fill_classifier(text: str, found: Detected) -> str:
    """The sample classifier.yml with the detected source root, and the detected docs/tests/
    examples folders as a commented suggestion (carving out is the operator's call)."""
    if found.source_root is not None:
        text = re.sub(r"(?m)^source_root: .*$", f"source_root: {found.source_root}", text, count=1)
    if found.safe_dirs:  # in place of the empty list: uncommented, it is the only one
        suggestion = (
            f"# Found in {found.clone.name or found.clone}: uncomment after review (changes "
            "under these folders are then non-critical):\n"
            f"# known_safe_dirs: [{', '.join(found.safe_dirs)}]\n"
        )
        text = re.sub(r"(?m)^known_safe_dirs: \[\]\n", lambda _m: suggestion, text, count=1)
    return _found_header(text, found)
