"""Who can write to the decision repo (R5): agents with write access could rewrite a ballot,
delete an owner's later command or close the ballot before the next tick.

`decision_repo_writers` lists every non-owner, non-bot login with write, maintain or admin
on the decision repo. Candidates are the repo's collaborators when the forge can list them
(GitHub: `GET /repos/{repo}/collaborators`, needs push access or an App with the
"metadata"+"administration: read" permission); when it cannot (403/404, the sandbox), the
logins the daemon knows as PR authors (its agents, from bot-state/prs.json) plus any
`extra` logins are checked one by one with `Forge.permission`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from capdaemon.config import Config
from capdaemon.forge.errors import ForgeError

if TYPE_CHECKING:
    from capdaemon.forge.port import ForgePort

WRITE_ROLES = frozenset({"write", "maintain", "admin"})


@dataclass(frozen=True)
class Writer:
    """A login that should not be able to write to the decision repo, and its role."""

    login: str
    role: str


def decision_repo_writers(
    forge: ForgePort, config: Config, candidates: Iterable[str] = ()
) -> tuple[list[Writer], str]:
    """(non-owner writers, how they were found: "collaborators" | "candidates")."""
    repo = config.ballot_repo
    if repo is None:
        return [], "candidates"
    trusted = _owners(config) | {config.bot_login.lower(), forge.login.lower()}
    listed, how = _collaborators(forge, repo), "collaborators"
    if listed is None:
        how = "candidates"
        listed = [
            (login, forge.permission(repo, login))
            for login in sorted({c for c in candidates if c})
            if login.lower() not in trusted
        ]
    out = [
        Writer(login, role)
        for login, role in listed
        if role in WRITE_ROLES and login.lower() not in trusted
    ]
    return sorted(out, key=lambda w: w.login.lower()), how


def _owners(config: Config) -> set[str]:
    """Every owner's login (lower-cased): the central ones and each repo's extra ones."""
    owners = {o.lower() for o in config.owners}
    for rc in config.repos:
        owners |= {o.lower() for o in rc.owners}
    return owners


def _collaborators(forge: ForgePort, repo: str) -> list[tuple[str, str]] | None:
    """The decision repo's collaborators and their roles (None: GitHub does not list them)."""
    try:
        return forge.collaborators(repo)
    except ForgeError:
        return None
