"""The world `sandbox serve` starts with when no --seed is given: the standard users, org,
repos and the capdaemon App, its private key written under the root, and what to print."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import yaml

from . import testing as std

SEED_FILE = "default-world.yml"  # under --root: the default world's seed, kept for restarts
KEY_DIR = "keys"  # under --root: the App's private key (0600)


def default_seed(root: Path) -> tuple[dict[str, Any], Path]:
    """The default world's seed and the App's private key file, made once per root: a second
    `serve` on the same root reads them back (same tokens, same key)."""
    seed_path = root / SEED_FILE
    key_path = root / KEY_DIR / f"{std.APP_SLUG}.pem"
    if seed_path.is_file() and key_path.is_file():
        loaded = yaml.safe_load(seed_path.read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            return loaded, key_path
    keys = std.generate_keys()
    key_path, _ = std.write_keys(keys, root / KEY_DIR)
    (root / KEY_DIR / f"{std.EVIL_APP_SLUG}.pem").unlink()  # only the capdaemon App is seeded
    seed = std.default_world_seed(keys)
    seed["apps"] = [a for a in seed["apps"] if a["id"] == std.APP_ID]
    seed["fidelity"] = {}  # GitHub's limits, all on
    seed["admin_token"] = f"sandbox-admin-{secrets.token_hex(12)}"
    root.mkdir(parents=True, exist_ok=True)
    seed_path.touch(mode=0o600)
    seed_path.write_text(
        "# The default world of `capdaemon sandbox serve` (no --seed): kept for restarts.\n"
        + yaml.safe_dump(seed, sort_keys=False),
        encoding="utf-8",
    )
    return seed, key_path


def describe(seed: dict[str, Any], base_url: str, key_path: Path | None) -> list[str]:
    """The lines that say how to use a sandbox: admin token, each user's token, the Apps and
    their installations, the repos and their git URLs."""
    lines = [
        f"admin token (the /_sandbox API): {seed.get('admin_token') or 'none: the API is open'}"
    ]
    orgs = {o["login"]: o for o in seed.get("orgs") or ()}
    lines.append("users (Authorization: token TOKEN; git over HTTP: the token as password):")
    width = max((len(u["login"]) for u in seed.get("users") or ()), default=0)
    for u in seed.get("users") or ():
        roles = [f"admin of {o}" for o, org in orgs.items() if u["login"] in org.get("admins", ())]
        roles += [
            f"member of {o}" for o, org in orgs.items() if u["login"] in org.get("members", ())
        ]
        extra = f"  ({', '.join(roles)})" if roles else ""
        lines.append(f"  {u['login'].ljust(width)}  {u.get('token') or '(no token)'}{extra}")
    for app in seed.get("apps") or ():
        insts = ", ".join(f"{i['id']} on {i['account']}" for i in app.get("installations") or ())
        key = f", private key {key_path}" if key_path is not None else ""
        lines.append(f"App {app['slug']}: id {app['id']}, installations {insts or 'none'}{key}")
    for r in seed.get("repos") or ():
        name = f"{r['owner']}/{r['name']}"
        lines.append(f"repo {name}: git {base_url}/{name}.git")
    return lines
