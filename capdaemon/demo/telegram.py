"""`capdaemon demo`, Telegram part: a tier-2 PR approved by one tap in a Bot API sandbox.

The Telegram Bot API sandbox runs beside the GitHub one; the demo config gains a `telegram:`
section (token and HMAC key in files), a level-2 task opens a PR, the tick posts the one-tap
request, owner alice presses Approve through the sandbox's admin endpoint, and the daemon's
poll step counts the tap and the next tick merges the bound head.
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.request
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import yaml

from capdaemon.capability.taskfile import parse_task
from capdaemon.daemon.service.runner import open_ticker
from capdaemon.demo.steps import config_and_rules
from capdaemon.filenames import MAIN_CONFIG_FILE
from capdaemon.stores.registry import dispatch
from ghsandbox import testing as std
from ghsandbox.rest import RestClient
from ghsandbox.server import Sandbox

CHAT_ID = -100200300
ALICE_TELEGRAM_ID = 4242
TASK = "task-201"


def _enable_telegram(config_dir: Path, keys_dir: Path, api_url: str, token: str) -> None:
    (keys_dir / "telegram-token").write_text(token + "\n", encoding="utf-8")
    (keys_dir / "telegram-hmac").write_text(secrets.token_hex(32) + "\n", encoding="utf-8")
    main = config_dir / MAIN_CONFIG_FILE
    text = main.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    data["telegram"] = {
        "api_url": api_url,
        "token_file": str(keys_dir / "telegram-token"),
        "hmac_key_file": str(keys_dir / "telegram-hmac"),
        "chat_id": CHAT_ID,
        "users": {std.OWNER: ALICE_TELEGRAM_ID},
        "ttl_minutes": 5,
        "poll_seconds": 2,
    }
    header = "".join(ln + "\n" for ln in text.splitlines() if ln.startswith("#"))
    main.write_text(header + yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _dispatch(state_dir: Path, now: datetime) -> None:
    cap = parse_task(
        {
            "task_id": TASK,
            "title": "demo task: a level-2 docs change",
            "level": 2,
            "allowed_resources": {"paths": ["docs/**"], "merge_policy": "tiered"},
        }
    )
    dispatch(state_dir, cap, now, source="capdaemon demo")


def _press(api_url: str, message_id: int) -> None:
    """The sandbox's admin endpoint: alice presses the first button (Approve)."""
    body = {"chat_id": CHAT_ID, "message_id": message_id, "user_id": ALICE_TELEGRAM_ID}
    req = urllib.request.Request(
        f"{api_url}/admin/press",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10):
        pass


def run_telegram_step(
    sb: Sandbox,
    root: Path,
    config_dir: Path,
    state_dir: Path,
    say: Callable[[str], None],
    failures: list[str],
    now: datetime,
) -> int | None:
    """Run the tap scenario; the PR number (None if it could not be opened). Unexpected
    outcomes are appended to `failures`."""
    from ghsandbox.telegram import DEFAULT_TOKEN, TelegramSandbox

    with TelegramSandbox() as tg:
        tg.state.add_chat(CHAT_ID, "widgets owners")
        tg.state.add_user(ALICE_TELEGRAM_ID, std.OWNER)
        _enable_telegram(config_dir, root / "keys", tg.api_url, DEFAULT_TOKEN)
        _dispatch(state_dir, now)
        branch = "agent-1/docs-tier2"
        sb.commit_files(
            std.REPO,
            branch,
            {"docs/telegram.md": "# One tap\n\nOwners approve tier-2 work from Telegram.\n"},
            f"Document one-tap approvals\n\nAgent-Session: claude-code/claude-opus-4/sess-tg-0001"
            f"\nTask-Id: {TASK}\n",
            author="agent-1",
            parent_branch="main",
        )
        number = sb.open_pr(std.REPO, branch, "main", "Document one-tap approvals", "", "agent-1")
        ref = f"{std.REPO}#{number}"
        say(f"  agent-1 opened PR #{number} under {TASK} (level 2 → tier 2, one tap)")
        config, rules = config_and_rules(config_dir)
        with open_ticker(config, state_dir, rules=rules) as ticker:
            ticker.tick()
            messages = tg.state.list_messages(CHAT_ID)
            if not messages:
                failures.append(f"{ref}: no Telegram one-tap request was posted")
                return number
            first = messages[-1]["text"].splitlines()
            say(f"  the bot posts to the owners' chat: {' / '.join(first[:2])} [Approve] [Reject]")
            tapped = time.monotonic()
            _press(tg.api_url, int(messages[-1]["message_id"]))
            desk = ticker.safety.channels.desk
            counted = desk.poll(ticker) if desk is not None else 0
            if counted:
                ticker.tick()  # what the poll job does after a counted tap
            took = time.monotonic() - tapped
        owner = RestClient(sb.base_url, std.token_for(std.OWNER))
        merged = bool(counted) and bool(owner.get(f"/repos/{std.REPO}/pulls/{number}")["merged"])
        if merged:
            say(f"  alice taps Approve → counted, one-tap issue closed, merged in {took:.1f} s")
        else:
            failures.append(f"{ref}: the Telegram tap did not lead to a merge")
        say(f"  Telegram message now: {tg.state.list_messages(CHAT_ID)[-1]['text']}")
    return number
