"""`capdaemon doctor`'s checks of who the daemon is and what its branches require: `bot.login`
against the App GitHub shows, `canonical_app` against `github.app_id`, and each supervised
branch's protection against SPEC 6.5 (with the settings to apply by hand when it falls short)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from capdaemon.config import Config, RepoConfig
from capdaemon.daemon.issues.protection_issue import protect_command
from capdaemon.daemon.safety.byhand import by_hand
from capdaemon.daemon.safety.protection import protection_problems
from capdaemon.decide.labels import L1C3_CHECK_NAME
from capdaemon.findings import FAIL, OK, WARN, Finding
from capdaemon.forge.convert import review_count
from capdaemon.forge.writes import protection_body

if TYPE_CHECKING:
    from capdaemon.forge.client import Forge


def check_identity(forge: Forge, config: Config) -> Iterator[Finding]:
    """`bot.login` is the login the App acts as (`<slug>[bot]`), and `canonical_app` names this
    App (its slug and `github.app_id`): else the daemon would not know its own comments and
    checks, or would trust another App's L1.C3."""
    if not forge.as_app:
        return
    seen = forge.login
    if config.bot_login.casefold() != seen.casefold():
        yield Finding(
            FAIL,
            "bot login",
            f"bot.login is {config.bot_login}, but the App acts as {seen}: set bot.login: {seen}",
            True,
        )
    else:
        yield Finding(OK, "bot login", f"bot.login {config.bot_login} is the App's login")
    app_id, slug = config.github.app_id, forge.app_slug
    wrong = []
    if config.canonical_app_id is not None and config.canonical_app_id != app_id:
        wrong.append(f"canonical_app.id is {config.canonical_app_id}, github.app_id is {app_id}")
    if (
        config.canonical_app is not None
        and slug is not None
        and config.canonical_app.casefold() != slug.casefold()
    ):
        wrong.append(f"canonical_app.slug is {config.canonical_app}, the App's slug is {slug}")
    if wrong:
        yield Finding(
            FAIL,
            "canonical app",
            "; ".join(wrong)
            + f": set canonical_app: {{slug: {slug}, id: {app_id}}} (the App whose L1.C3 is"
            " trusted is this one)",
            True,
        )
    elif config.canonical_app is not None or config.canonical_app_id is not None:
        yield Finding(OK, "canonical app", f"{slug} (App id {app_id})")


def check_protection(forge: Forge, config: Config, rc: RepoConfig) -> Iterator[Finding]:
    """The base branch's protection (classic and rulesets) as SPEC 6.5 asks: L1.C3 required
    and pinned to the App, pull requests required, no force pushes. Short of it: FAIL, the
    command that fixes it and the exact settings to apply by hand (a read-only App)."""
    name = f"protection {rc.name}"
    app_id = config.github.app_id
    prot = forge.effective_protection(rc.name, rc.base)
    problems = protection_problems(prot, app_id)
    if problems:
        classic = forge.get_protection(rc.name, rc.base)
        body = protection_body(classic, L1C3_CHECK_NAME, app_id, reviews=review_count(classic))
        manual = by_hand(rc.name, rc.base, body, forge.app_slug)
        yield Finding(
            FAIL,
            name,
            f"{rc.base}: {'; '.join(problems)}; run `{protect_command(rc.name, rc.base, rc.base)}`"
            " (an App with administration: write)\n" + "\n".join(manual),
        )
        return
    assert prot is not None  # no problems: the branch is protected
    rsc = prot.get("required_status_checks") or {}
    checks = [c.get("context") for c in rsc.get("checks") or ()] or list(rsc.get("contexts") or ())
    count = review_count(prot)
    yield Finding(
        OK,
        name,
        f"{rc.base} protected; required checks: {', '.join(map(str, checks))}; pull requests"
        f" required with {count} approving review(s); no force pushes",
    )
    if count:
        yield Finding(
            WARN,
            f"reviewers {rc.name}",
            f"{rc.base} requires {count} approving review(s): capdaemon is the reviewer of record "
            "(L1.C3 pinned to the App) and a required human review blocks every merge it makes "
            f"by itself; keep it only if you want both, else `capdaemon protect {rc.name} "
            "--reviewers 0`",
        )
