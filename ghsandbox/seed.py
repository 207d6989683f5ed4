"""Load and validate the sandbox seed (users, orgs, GitHub Apps, repos, rate limits)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from .fidelity import FIDELITY_DEFAULTS

PERMISSIONS = ("admin", "maintain", "write", "triage", "read")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_LOGIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*(\[bot\])?$")
DEFAULT_APP_PERMISSIONS = {
    "checks": "write",
    "contents": "write",
    "issues": "write",
    "pull_requests": "write",
    "statuses": "write",
    "metadata": "read",
    "administration": "write",
}


class SeedError(ValueError):
    """The seed is malformed; the message names the offending key."""


def _req(obj: dict[str, Any], key: str, where: str, typ: type | tuple[type, ...]) -> Any:
    if key not in obj:
        raise SeedError(f"seed: {where}.{key}: required key is missing")
    return _typed(obj[key], f"{where}.{key}", typ)


def _opt(
    obj: dict[str, Any], key: str, where: str, typ: type | tuple[type, ...], default: Any
) -> Any:
    if key not in obj or obj[key] is None:
        return default
    return _typed(obj[key], f"{where}.{key}", typ)


def _typed(value: Any, where: str, typ: type | tuple[type, ...]) -> Any:
    if isinstance(value, bool) and typ is int:
        raise SeedError(f"seed: {where}: expected an integer, got {value!r}")
    if not isinstance(value, typ):
        names = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
        raise SeedError(f"seed: {where}: expected {names}, got {type(value).__name__}")
    return value


def _check_keys(obj: dict[str, Any], where: str, allowed: set[str]) -> None:
    for key in obj:
        if key not in allowed:
            raise SeedError(
                f"seed: {where}.{key}: unknown key (allowed: {', '.join(sorted(allowed))})"
            )


def _login(value: Any, where: str) -> str:
    text: str = _typed(value, where, str)
    if not _LOGIN.match(text):
        raise SeedError(f"seed: {where}: not a valid login: {text!r}")
    return text


def _check_protection(body: Any, where: str) -> None:
    _typed(body, where, dict)
    _check_keys(
        body,
        where,
        {
            "required_status_checks",
            "enforce_admins",
            "required_pull_request_reviews",
            "restrictions",
            "allow_force_pushes",
            "allow_deletions",
            "required_linear_history",
        },
    )
    rsc = _opt(body, "required_status_checks", where, dict, None)
    if rsc is not None:
        rw = f"{where}.required_status_checks"
        _check_keys(rsc, rw, {"strict", "checks", "contexts"})
        _opt(rsc, "strict", rw, bool, False)
        for i, check in enumerate(_opt(rsc, "checks", rw, list, [])):
            cw = f"{rw}.checks[{i}]"
            _typed(check, cw, dict)
            _req(check, "context", cw, str)
            _opt(check, "app_id", cw, int, None)
        for i, ctx in enumerate(_opt(rsc, "contexts", rw, list, [])):
            _typed(ctx, f"{rw}.contexts[{i}]", str)
    for key in (
        "enforce_admins",
        "allow_force_pushes",
        "allow_deletions",
        "required_linear_history",
    ):
        _opt(body, key, where, bool, False)
    _opt(body, "required_pull_request_reviews", where, dict, None)


def load_seed(
    source: dict[str, Any] | Path | str | None, base_dir: Path | None = None
) -> dict[str, Any]:
    """Read a seed (a dict, or a YAML file path) normalised; SeedError names the key."""
    if source is None:
        return normalise_seed({})
    if isinstance(source, dict):
        return normalise_seed(source, base_dir)
    path = Path(source)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SeedError(f"seed: cannot read {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise SeedError(f"seed: {path}: not valid YAML: {exc}") from exc
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise SeedError(f"seed: {path}: the top level must be a mapping")
    return normalise_seed(raw, path.parent)


def normalise_seed(raw: dict[str, Any], base_dir: Path | None = None) -> dict[str, Any]:
    """Validate a seed mapping and fill in defaults."""
    _check_keys(
        raw, "<root>", {"users", "orgs", "apps", "repos", "rate_limit", "admin_token", "fidelity"}
    )
    out: dict[str, Any] = {
        "rate_limit": _rate_limit(raw),
        "fidelity": _fidelity(raw),
        "admin_token": _opt(raw, "admin_token", "<root>", str, None),
    }
    logins: set[str] = set()
    out["users"] = _users(raw, logins)
    out["orgs"] = _orgs(raw, logins, {u["login"] for u in out["users"]})
    out["apps"] = _apps(raw, out["orgs"], base_dir)
    out["repos"] = _repos(raw, logins)
    _check_installation_accounts(out["apps"], logins)
    return out


def _rate_limit(raw: dict[str, Any]) -> dict[str, Any]:
    rl = _opt(raw, "rate_limit", "<root>", dict, {})
    _check_keys(rl, "rate_limit", {"core", "secondary_per_minute"})
    return {
        "core": _opt(rl, "core", "rate_limit", int, 5000),
        "secondary_per_minute": _opt(rl, "secondary_per_minute", "rate_limit", int, 0),
    }


def _fidelity(raw: dict[str, Any]) -> dict[str, Any]:
    fid = _opt(raw, "fidelity", "<root>", dict, {})
    _check_keys(fid, "fidelity", set(FIDELITY_DEFAULTS))
    return {
        key: _opt(fid, key, "fidelity", (int, float), default)
        for key, default in FIDELITY_DEFAULTS.items()
    }


def _new_login(value: Any, where: str, logins: set[str]) -> str:
    """A valid login not used before by a user or an org (added to ``logins``)."""
    login = _login(value, f"{where}.login")
    if login in logins:
        raise SeedError(f"seed: {where}.login: duplicate login {login!r}")
    logins.add(login)
    return login


def _users(raw: dict[str, Any], logins: set[str]) -> list[dict[str, Any]]:
    users = []
    for i, u in enumerate(_opt(raw, "users", "<root>", list, [])):
        where = f"users[{i}]"
        _typed(u, where, dict)
        _check_keys(
            u, where, {"login", "token", "type", "name", "email", "rate_limit", "site_admin"}
        )
        login = _new_login(_req(u, "login", where, str), where, logins)
        utype = _opt(u, "type", where, str, "User")
        if utype not in ("User", "Bot"):
            raise SeedError(f"seed: {where}.type: must be User or Bot, got {utype!r}")
        users.append(
            {
                "login": login,
                "token": _opt(u, "token", where, str, None),
                "type": utype,
                "name": _opt(u, "name", where, str, None),
                "email": _opt(u, "email", where, str, None),
                "rate_limit": _opt(u, "rate_limit", where, int, None),
                "site_admin": _opt(u, "site_admin", where, bool, False),
            }
        )
    return users


def _orgs(raw: dict[str, Any], logins: set[str], users: set[str]) -> list[dict[str, Any]]:
    orgs = []
    for i, o in enumerate(_opt(raw, "orgs", "<root>", list, [])):
        where = f"orgs[{i}]"
        _typed(o, where, dict)
        _check_keys(o, where, {"login", "admins", "members", "name"})
        login = _new_login(_req(o, "login", where, str), where, logins)
        admins = [
            _login(a, f"{where}.admins[{j}]")
            for j, a in enumerate(_opt(o, "admins", where, list, []))
        ]
        members = [
            _login(a, f"{where}.members[{j}]")
            for j, a in enumerate(_opt(o, "members", where, list, []))
        ]
        for j, m in enumerate(admins + members):
            if m not in users:
                raise SeedError(f"seed: {where}.admins/members[{j}]: unknown user {m!r}")
        orgs.append(
            {
                "login": login,
                "name": _opt(o, "name", where, str, None),
                "admins": admins,
                "members": members,
            }
        )
    return orgs


_APP_KEYS = {
    "id",
    "slug",
    "name",
    "owner",
    "public_key",
    "public_key_file",
    "installations",
    "permissions",
    "events",
    "description",
}


def _apps(
    raw: dict[str, Any], orgs: list[dict[str, Any]], base_dir: Path | None
) -> list[dict[str, Any]]:
    app_ids: set[int] = set()
    inst_ids: set[int] = set()
    apps = []
    for i, a in enumerate(_opt(raw, "apps", "<root>", list, [])):
        where = f"apps[{i}]"
        _typed(a, where, dict)
        _check_keys(a, where, _APP_KEYS)
        app_id = _req(a, "id", where, int)
        if app_id in app_ids:
            raise SeedError(f"seed: {where}.id: duplicate app id {app_id}")
        app_ids.add(app_id)
        slug = _req(a, "slug", where, str)
        if not _NAME.match(slug):
            raise SeedError(f"seed: {where}.slug: not a valid slug: {slug!r}")
        owner = _login(
            _opt(a, "owner", where, str, None) or (orgs[0]["login"] if orgs else slug),
            f"{where}.owner",
        )
        pem = _app_public_key(a, where, base_dir)
        perms = _opt(a, "permissions", where, dict, dict(DEFAULT_APP_PERMISSIONS))
        for k, v in perms.items():
            if v not in ("read", "write"):
                raise SeedError(f"seed: {where}.permissions.{k}: must be read or write")
        insts = _installations(a, where, inst_ids)
        apps.append(
            {
                "id": app_id,
                "slug": slug,
                "name": _opt(a, "name", where, str, slug),
                "owner": owner,
                "description": _opt(a, "description", where, str, ""),
                "public_key": pem,
                "permissions": perms,
                "events": _opt(a, "events", where, list, ["check_run", "pull_request"]),
                "installations": insts,
            }
        )
    return apps


def _app_public_key(a: dict[str, Any], where: str, base_dir: Path | None) -> str:
    """The App's PEM public key, inline or read from ``public_key_file``."""
    pem: str
    if "public_key" in a:
        pem = _typed(a["public_key"], f"{where}.public_key", str)
    elif "public_key_file" in a:
        p = Path(_typed(a["public_key_file"], f"{where}.public_key_file", str))
        if not p.is_absolute() and base_dir is not None:
            p = base_dir / p
        try:
            pem = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise SeedError(
                f"seed: {where}.public_key_file: cannot read {p}: {exc.strerror}"
            ) from exc
    else:
        raise SeedError(f"seed: {where}.public_key: required key is missing (or public_key_file)")
    if "BEGIN PUBLIC KEY" not in pem and "BEGIN RSA PUBLIC KEY" not in pem:
        raise SeedError(f"seed: {where}.public_key: not a PEM public key")
    return pem


def _installations(a: dict[str, Any], where: str, inst_ids: set[int]) -> list[dict[str, Any]]:
    insts = []
    for j, inst in enumerate(_opt(a, "installations", where, list, [])):
        iw = f"{where}.installations[{j}]"
        _typed(inst, iw, dict)
        _check_keys(inst, iw, {"id", "account", "repositories", "rate_limit"})
        iid = _req(inst, "id", iw, int)
        if iid in inst_ids:
            raise SeedError(f"seed: {iw}.id: duplicate installation id {iid}")
        inst_ids.add(iid)
        account = _login(_req(inst, "account", iw, str), f"{iw}.account")
        repos = _opt(inst, "repositories", iw, (str, list), "all")
        if isinstance(repos, str) and repos != "all":
            raise SeedError(f"seed: {iw}.repositories: 'all' or a list of repository names")
        if isinstance(repos, list):
            repos = [
                _typed(r, f"{iw}.repositories[{k}]", str).split("/")[-1]
                for k, r in enumerate(repos)
            ]
        insts.append(
            {
                "id": iid,
                "account": account,
                "repositories": repos,
                "rate_limit": _opt(inst, "rate_limit", iw, int, None),
            }
        )
    return insts


_REPO_KEYS = {
    "owner",
    "name",
    "default_branch",
    "private",
    "collaborators",
    "files",
    "labels",
    "protection",
    "description",
}


def _repos(raw: dict[str, Any], logins: set[str]) -> list[dict[str, Any]]:
    repos = []
    names: set[str] = set()
    for i, r in enumerate(_opt(raw, "repos", "<root>", list, [])):
        where = f"repos[{i}]"
        _typed(r, where, dict)
        _check_keys(r, where, _REPO_KEYS)
        owner = _login(_req(r, "owner", where, str), f"{where}.owner")
        if owner not in logins:
            raise SeedError(f"seed: {where}.owner: unknown user or org {owner!r}")
        name = _req(r, "name", where, str)
        if not _NAME.match(name) or name.endswith(".git"):
            raise SeedError(f"seed: {where}.name: not a valid repository name: {name!r}")
        full = f"{owner}/{name}"
        if full in names:
            raise SeedError(f"seed: {where}.name: duplicate repository {full!r}")
        names.add(full)
        collabs = _collaborators(r, where, logins)
        files = _opt(r, "files", where, dict, {})
        for path, text in files.items():
            _typed(text, f"{where}.files.{path}", str)
        labels = _labels(r, where)
        protection = _opt(r, "protection", where, dict, {})
        for branch, body in protection.items():
            _check_protection(body, f"{where}.protection.{branch}")
        repos.append(
            {
                "owner": owner,
                "name": name,
                "default_branch": _opt(r, "default_branch", where, str, "main"),
                "private": _opt(r, "private", where, bool, False),
                "description": _opt(r, "description", where, str, None),
                "collaborators": dict(collabs),
                "files": dict(files),
                "labels": labels,
                "protection": protection,
            }
        )
    return repos


def _collaborators(r: dict[str, Any], where: str, logins: set[str]) -> dict[str, Any]:
    collabs: dict[str, Any] = _opt(r, "collaborators", where, dict, {})
    for login, perm in collabs.items():
        if login not in logins:
            raise SeedError(f"seed: {where}.collaborators.{login}: unknown user")
        if perm not in PERMISSIONS:
            raise SeedError(
                f"seed: {where}.collaborators.{login}: must be one of {', '.join(PERMISSIONS)}"
            )
    return collabs


def _labels(r: dict[str, Any], where: str) -> list[dict[str, Any]]:
    labels = []
    for j, lab in enumerate(_opt(r, "labels", where, list, [])):
        lw = f"{where}.labels[{j}]"
        if isinstance(lab, str):
            lab = {"name": lab}
        _typed(lab, lw, dict)
        _check_keys(lab, lw, {"name", "color", "description"})
        labels.append(
            {
                "name": _req(lab, "name", lw, str),
                "color": _opt(lab, "color", lw, str, "ededed"),
                "description": _opt(lab, "description", lw, str, None),
            }
        )
    return labels


def _check_installation_accounts(apps: list[dict[str, Any]], logins: set[str]) -> None:
    for app in apps:
        for inst in app["installations"]:
            if inst["account"] not in logins:
                raise SeedError(
                    f"seed: apps[{app['slug']}].installations[{inst['id']}].account: "
                    f"unknown account {inst['account']!r}"
                )
