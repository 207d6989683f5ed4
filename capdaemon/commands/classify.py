"""`capdaemon classify`: classify a local git range exactly as the daemon would classify a PR."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from capdaemon import gitdiff, gitlog
from capdaemon.audit import AuditLog
from capdaemon.classify.engine import classify
from capdaemon.commands._common import (
    CLIError,
    add_config_arg,
    add_state_arg,
    error,
    load_config_and_rules,
    parse_now,
    printable,
    state_dir,
)
from capdaemon.config import Config, ConfigError, parse_repo_policy
from capdaemon.filenames import CLASSIFIER_LOG, REPO_POLICY_FILE
from capdaemon.gitdiff import GitError
from capdaemon.globs import GlobSet
from capdaemon.model import PRSnapshot, Verdict
from capdaemon.state import StateError

# `classify --exit-code`: 0 for A, distinct non-zero codes for B, C, D (1 and 2 stay errors).
QUADRANT_EXIT = {"A": 0, "B": 10, "C": 11, "D": 12}


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `capdaemon classify`."""
    parser.add_argument("--repo", metavar="DIR", default=".", help="git working copy (default .)")
    parser.add_argument("--base", metavar="REF", required=True, help="base ref (the PR's target)")
    parser.add_argument("--head", metavar="REF", default="HEAD", help="head ref (default HEAD)")
    parser.add_argument(
        "--name",
        metavar="OWNER/REPO",
        default=None,
        help="repository name (default: from the origin remote, else local/<folder>)",
    )
    parser.add_argument("--number", type=int, default=0, help="PR number to report (default 0)")
    parser.add_argument("--author", default=None, help="PR author login (default: head's author)")
    add_config_arg(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--now", metavar="ISO", default=None, help="classification time")
    parser.add_argument(
        "--exit-code",
        action="store_true",
        help="exit with the quadrant: A 0, B 10, C 11, D 12 (CI can gate on it)",
    )
    add_state_arg(parser)
    parser.add_argument(
        "--record",
        action="store_true",
        help="append the verdict to the classifier audit log of --state (default: dry run)",
    )


def _repo_name(repo: Path, explicit: str | None) -> str:
    """--name, else owner/name from the origin remote URL, else local/<folder>."""
    import re
    import subprocess

    if explicit:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+", explicit):
            raise CLIError(f"--name {explicit!r} is not OWNER/REPO")
        return explicit
    try:
        url = subprocess.run(
            ["git", "-C", str(repo), "config", "--get", "remote.origin.url"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        url = ""
    m = re.search(r"[:/]([A-Za-z0-9][A-Za-z0-9_.-]*)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$", url)
    if m:
        return f"{m.group(1)}/{m.group(2)}"
    return f"local/{repo.resolve().name or 'repo'}"


def build_snapshot(
    repo: Path, base: str, head: str, config: Config, *, name: str, number: int, author: str | None
) -> tuple[PRSnapshot, Config]:
    """A PRSnapshot of `base...head` (files, commits, base policy) + the config with its policy."""
    base_sha = gitdiff.resolve(repo, base)
    head_sha = gitdiff.resolve(repo, head)
    cc = config.classifier
    wanted = GlobSet.of((*cc.config_file_globs, REPO_POLICY_FILE))
    root = cc.source_root.rstrip("/") + "/"

    def contents_for(path: str) -> bool:
        return path.startswith(root) or wanted.match(path)

    files = gitdiff.diff_range(repo, base_sha, head_sha, contents_for=contents_for)
    commits = gitlog.commits_range(repo, base_sha, head_sha)
    policy_text = gitlog.read_file(repo, base_sha, REPO_POLICY_FILE)
    if policy_text is not None:
        source = f"{REPO_POLICY_FILE} at {base}"
        try:
            config = config.with_repo_policy(parse_repo_policy(policy_text, source), name)
        except ConfigError as exc:
            raise CLIError(f"repo policy error: {exc}") from None
    head_commit = commits[-1] if commits else None
    message = head_commit.message if head_commit else ""
    title, _, body = message.partition("\n")
    snapshot = PRSnapshot(
        repo=name,
        number=number,
        base_ref=base,
        base_sha=base_sha,
        head_sha=head_sha,
        author=author or (head_commit.author_name if head_commit else ""),
        head_ref=head,
        title=title,
        body=body.strip("\n"),
        files=tuple(files),
        commits=tuple(commits),
        base_policy_text=policy_text,
    )
    return snapshot, config


def audit_entry(snapshot: PRSnapshot, verdict: Verdict, **extra: Any) -> dict[str, Any]:
    """The classifier_audit.jsonl entry of one classification (SPEC 6.1)."""
    d = verdict.to_dict()
    entry: dict[str, Any] = {
        "pr": snapshot.ref,
        "head_sha": snapshot.head_sha,
        "base_sha": snapshot.base_sha,
        "rules_fired": d["rules_fired"],
        "quadrant": d["quadrant"],
        "reasoning": d["reasoning"],
        "files": d["files"],
    }
    if d["findings"]:
        entry["findings"] = d["findings"]
    entry.update(extra)
    return entry


def _file_rows(files: list[dict[str, Any]]) -> list[str]:
    """The per-file table of `_table`: a header, then one aligned row per file."""
    rows = [("Q", "IR", "CR", "STATUS", "PATH", "REASONS")]
    for f in files:
        path = f["path"] if not f.get("previous_path") else f"{f['previous_path']} → {f['path']}"
        rows.append(
            (
                f["quadrant"],
                "irrev" if f["ir"] == "irreversible" else "rev",
                "crit" if f["cr"] == "critical" else "non",
                f["status"],
                printable(path),
                printable("; ".join(f["reasons"])),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r[:5])) + "  " + r[5] for r in rows]


def _table(snapshot: PRSnapshot, verdict: Verdict) -> str:
    d = verdict.to_dict()
    lines = [
        f"{snapshot.ref}  {snapshot.base_sha[:10]}...{snapshot.head_sha[:10]}  "
        f"{len(snapshot.files)} file(s), {len(snapshot.commits)} commit(s)",
        f"quadrant: {d['quadrant']}",
        f"reasoning: {printable(d['reasoning'])}",
        "",
    ]
    if d["files"]:
        lines += [*_file_rows(d["files"]), ""]
    lines.append("rules:")
    for r in d["rules_fired"]:
        what = r.get("vote") or r.get("result", "")
        reason = f" — {printable(r['reason'])}" if r.get("reason") else ""
        lines.append(f"  {r['rule']}: {what}{reason}")
    if d["findings"]:
        lines.append("findings:")
        for f in d["findings"]:
            subject = f" [{f['subject']}]" if f.get("subject") else ""
            msg = printable(f"{f['validator']}{subject}: {f['message']}")
            lines.append(f"  {f['severity']} {msg}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Classify --base...--head of --repo; exit 0 when classified (with --exit-code: the
    quadrant's code, QUADRANT_EXIT), 2 on bad input."""
    try:
        return _run(args)
    except CLIError as exc:
        error("classify", str(exc))
        return exc.code


def _run(args: argparse.Namespace) -> int:
    import json

    now = parse_now(args.now)
    repo = Path(args.repo)
    if args.number < 0:
        raise CLIError("--number must be 0 or more")
    config, rules = load_config_and_rules(args)
    name = _repo_name(repo, args.name)
    try:
        snapshot, config = build_snapshot(
            repo, args.base, args.head, config, name=name, number=args.number, author=args.author
        )
    except GitError as exc:
        raise CLIError(str(exc)) from None
    verdict = classify(snapshot, config, now=now, user_rules=rules)
    if args.record:
        sdir = state_dir(args)
        try:
            sdir.mkdir(parents=True, exist_ok=True)
            AuditLog(sdir / CLASSIFIER_LOG).append(
                audit_entry(snapshot, verdict, source="cli"), now=now
            )
        except (OSError, StateError) as exc:
            raise CLIError(f"cannot record in {sdir}: {exc}") from None
    if args.json:
        out = {
            "pr": snapshot.ref,
            "base_sha": snapshot.base_sha,
            "head_sha": snapshot.head_sha,
            **verdict.to_dict(),
        }
        sys.stdout.write(json.dumps(out, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(_table(snapshot, verdict) + "\n")
    return QUADRANT_EXIT[verdict.quadrant.value] if args.exit_code else 0
