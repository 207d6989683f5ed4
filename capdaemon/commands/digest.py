"""`capdaemon digest`: render the daily digest from bot-state (post it only with --post)."""

from __future__ import annotations

import argparse
from datetime import date

from capdaemon.commands._common import (
    CLIError,
    add_config_arg,
    add_state_arg,
    command_inputs,
    error,
)
from capdaemon.config import Config
from capdaemon.daemon.service import digest_job
from capdaemon.daemon.service.runner import CredentialsError, github_credentials, with_base_url
from capdaemon.decide.digest import digest_day, digest_period
from capdaemon.forge.client import Forge
from capdaemon.forge.errors import FORGE_FAILURES
from capdaemon.state import StateError


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `capdaemon digest`."""
    parser.add_argument(
        "--date",
        help="the digest's date YYYY-MM-DD: a digest is dated the local day it is sent at "
        "schedule.digest_time and covers the 24 hours before (default: the last one sent; "
        "with --print, the one in progress, which after digest_time is dated tomorrow)",
    )
    parser.add_argument(
        "--print",
        action="store_true",
        help="print the Markdown to stdout (writes nothing); its first lines say the period "
        "covered and whether it is still in progress",
    )
    parser.add_argument(
        "--post", action="store_true", help="also post it as the day's digest issue"
    )
    parser.add_argument("--base-url", help="GitHub API base URL override (with --post)")
    parser.add_argument("--now", help="ISO time the digest is rendered at (default: now)")
    add_state_arg(parser)
    add_config_arg(parser)


def run(args: argparse.Namespace) -> int:
    """0 rendered (written to bot-state/digests/ unless --print); 1 posting failed; 2 bad input
    (a day whose period has not ended is never written); 3 corrupt state."""
    try:
        config, now, sdir = command_inputs(args)
        if not sdir.is_dir():
            raise CLIError(f"state directory {sdir} does not exist")
        tz = config.schedule.timezone
        try:
            day = date.fromisoformat(args.date) if args.date else None
        except ValueError:
            raise CLIError(f"--date {args.date!r} is not YYYY-MM-DD") from None
        if day is None:  # --print: the period in progress; writing: the last one that ended
            day = digest_day(now, config.schedule.digest_time, tz, ended=not args.print)
        end = digest_period(day, config.schedule.digest_time, tz)[1]
        if end > now and not args.print:
            raise CLIError(
                f"the digest of {day} covers the day until {end:%Y-%m-%d %H:%M} {tz}, which "
                "has not come yet; nothing written (--print shows it so far)"
            )
        text = digest_job.render_for(config, sdir, day, min(now, end))
        if args.print:  # printing writes nothing
            print(text, end="" if text.endswith("\n") else "\n")
        else:
            print(digest_job.write(sdir, day, text))
        if args.post:
            _post(with_base_url(config, args.base_url), day, text)
    except CLIError as exc:
        error("digest", str(exc))
        return exc.code
    except StateError as exc:
        error("digest", f"corrupt state: {exc}")
        return 3
    except FORGE_FAILURES as exc:
        error("digest", f"posting failed: {exc}")
        return 1
    return 0


def _post(config: Config, day: date, text: str) -> None:
    """`--post`: the digest as an issue in the decision repo (CLIError: no credentials, no
    decision repo)."""
    from pathlib import Path

    cdir = Path(config.config_dir) if config.config_dir else None
    try:
        token, key = github_credentials(config.github, config_dir=cdir)
    except CredentialsError as exc:
        raise CLIError(str(exc)) from None
    forge = Forge.from_config(config.github, token=token, key_pem=key)
    number = digest_job.post(config, forge, day, text)
    if number is None:
        raise CLIError("no decision repo configured (bot.own_repo / bot.decision_repo)")
    print(f"posted: {config.ballot_repo}#{number}")
