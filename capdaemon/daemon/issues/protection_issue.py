"""An unprotected supervised repo, made visible: one open incident-style issue per repo until
protected (closed when protection appears), and the command that fixes it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from capdaemon.audit import AuditLog
from capdaemon.decide._text import md
from capdaemon.decide.labels import L1C3_CHECK_NAME, Label
from capdaemon.forge.errors import ForgeError
from capdaemon.logging import get_logger

log = get_logger("capdaemon.protection")
if TYPE_CHECKING:
    from capdaemon.daemon.safety.common import Report
    from capdaemon.forge.port import ForgePort

KIND = "protection"  # its marker and audit kind; labelled decision:incident like incidents


class Branch(NamedTuple):
    """A supervised base branch: its repo, its name, and the base configured for the repo."""

    repo: str
    name: str
    configured_base: str | None = None


def protect_command(repo: str, branch: str, configured_base: str | None = None) -> str:
    """The command that sets the protection SPEC 6.5 asks for on `repo:branch`."""
    extra = "" if branch == (configured_base or "main") else f" --branch {branch}"
    return f"capdaemon protect {repo}{extra}"


def issue_key(repo: str, branch: str) -> str:
    """The marker key of a repo's protection issue (one per repo and base branch)."""
    return f"{repo}:{branch}"


def issue_body(repo: str, branch: str, problems: Sequence[str], command: str) -> str:
    """What is missing, why it matters, and what to run."""
    lines = "\n".join(f"- {md(p)}" for p in problems)
    return (
        f"## Branch protection missing: {md(repo)}:{md(branch)}\n\n"
        f"{lines}\n\n"
        "Without it, anyone with write access (agents included) can push straight to "
        f"`{md(branch)}` or merge without {L1C3_CHECK_NAME}, bypassing capdaemon entirely.\n\n"
        f"### Fix\n\nRun `{command}` (it requires {L1C3_CHECK_NAME} pinned to capdaemon's App, "
        "pull requests, and no force pushes). This issue closes by itself once the branch is "
        "protected as required.\n"
    )


def sync(
    forge: ForgePort,
    actions_log: AuditLog,
    decision_repo: str | None,
    branch: Branch,
    problems: Sequence[str],
    entry: dict[str, Any],
    now: datetime,
    report: Report | None = None,
) -> None:
    """Open (once) the repo's protection issue while `problems`; close it when there are none.

    `entry` is the repo's record in safety.json (`issue`: the open issue's number).
    """
    if decision_repo is None:
        return
    repo = branch.repo
    where = f"{repo}:{branch.name}"
    command = protect_command(repo, branch.name, branch.configured_base)
    try:
        if problems and not entry.get("issue"):
            issue = forge.ensure_issue(
                decision_repo,
                {"kind": KIND, "key": issue_key(repo, branch.name)},
                f"Branch protection missing: {where}"[:200],
                issue_body(repo, branch.name, problems, command),
                [Label.INCIDENT.value],
            )
            entry["issue"] = issue.number
            actions_log.append(
                {
                    "action": "issue_opened",
                    "kind": KIND,
                    "repo": where,
                    "issue": f"{decision_repo}#{issue.number}",
                    "problems": list(problems),
                    "hint": f"run: {command}",
                },
                now=now,
            )
            log.warning("protection.issue_opened", repo=where, issue=issue.number)
            if report is not None:
                report.issues.append(f"{KIND}:{decision_repo}#{issue.number}")
        elif not problems and entry.get("issue"):
            number = int(entry["issue"])
            forge.close_issue(
                decision_repo, number, f"{where} is now protected as required. Closing."
            )
            entry["issue"] = None
            actions_log.append(
                {
                    "action": "issue_closed",
                    "kind": KIND,
                    "repo": where,
                    "issue": f"{decision_repo}#{number}",
                },
                now=now,
            )
            log.info("protection.issue_closed", repo=where, issue=number)
    except ForgeError as exc:  # retried next tick: the state says what is still to do
        log.warning("protection.issue_failed", repo=where, error=str(exc)[:200])
        if report is not None:
            report.errors.append(f"{where}: protection issue: {exc}")


def unprotected(protection_state: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(repo, problems) for each repo safety.json says is not protected as required now."""
    out = []
    for repo, entry in sorted(protection_state.items()):
        if isinstance(entry, Mapping):
            sig = entry.get("drift") or (None if entry.get("seen_ok") else entry.get("missing"))
            if sig:
                out.append((str(repo), str(sig)))
    return out
