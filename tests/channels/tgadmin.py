"""The Telegram sandbox's admin API over HTTP, as a black-box test drives it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from ghsandbox.telegram import DEFAULT_TOKEN, TelegramSandbox


def post(url: str, body: dict[str, Any], timeout: float = 30) -> tuple[int, Any]:
    """POST JSON; (status, parsed JSON body) — an error status too."""
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, json.loads(raw)
        except ValueError:
            return exc.code, raw.decode("utf-8", "replace")


def admin(tg: TelegramSandbox, name: str, **body: Any) -> Any:
    """Call /admin/<name>; its result (AssertionError unless it answered ok)."""
    code, got = post(f"{tg.api_url}/admin/{name}", body)
    assert code == 200 and got["ok"], (code, got)
    return got["result"]


def bot(tg: TelegramSandbox, method: str, **params: Any) -> tuple[int, Any]:
    """Call a Bot API method with the sandbox's token."""
    return post(f"{tg.api_url}/bot{DEFAULT_TOKEN}/{method}", params, timeout=60)
