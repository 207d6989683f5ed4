"""Start-up checks shared by `run`, `tick` and `doctor`: the App key parses, GitHub answers, the
credentials are accepted — each failure one line naming the key file or the host:port."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from capdaemon.appspec import APP_PERMISSIONS
from capdaemon.config import Config, GitHubConfig
from capdaemon.daemon.service.checkup import missing_permissions
from capdaemon.forge.client import Forge
from capdaemon.forge.errors import (
    FORGE_FAILURES,
    Forbidden,
    NotFound,
    NotInstalled,
    Transient,
)

if TYPE_CHECKING:
    from capdaemon.forge.client import Forge
    from capdaemon.forge.port import ForgePort


# A repo seen visible this recently (by this or an earlier cron process) is not asked about
# again at start-up; the tick's own page of open PRs still names one that has gone.
REPO_RECHECK = timedelta(hours=1)


class CredentialsError(RuntimeError):
    """No usable GitHub credentials (the message says where to put them, never their value)."""


class UnreachableError(RuntimeError):
    """GitHub could not be reached (the message names the host and port)."""


def host_port(base_url: str) -> str:
    """`host:port` of an API base URL (443/80 filled in from the scheme)."""
    parts = urlsplit(base_url)
    host = parts.hostname or base_url
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        port = 80 if parts.scheme == "http" else 443
    return f"{host}:{port}"


def check_key_pem(pem: bytes, path: Path | str) -> None:
    """CredentialsError naming `path` unless `pem` is a PEM private key (RSA, as GitHub issues)."""
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CredentialsError(
            f"github.private_key_file: {path} is not a usable PEM private key ({reason[:120]}); "
            "download a new private key from the App's settings page"
        ) from None
    except Exception as exc:  # cryptography raises its own types for unsupported keys
        raise CredentialsError(
            f"github.private_key_file: {path} is not a usable PEM private key "
            f"({type(exc).__name__})"
        ) from None


@contextmanager
def forge_errors(gh: GitHubConfig, what: str = "") -> Iterator[None]:
    """Turn a Forge failure while starting up into CredentialsError / UnreachableError."""
    where = host_port(gh.base_url)
    try:
        yield
    except Forbidden as exc:
        raise CredentialsError(
            f"GitHub at {where} rejected the credentials ({_short(exc)}); "
            "check github.app_id and the key, or the token"
        ) from None
    except NotFound as exc:
        raise CredentialsError(
            f"GitHub at {where}: {_short(exc)}; check github.base_url and github.installation_id"
        ) from None
    except Transient as exc:
        raise UnreachableError(f"cannot reach GitHub at {where} ({_short(exc)})") from None
    except FORGE_FAILURES as exc:
        raise CredentialsError(f"GitHub at {where}: {_short(exc)}{what}") from None
    except OSError as exc:
        raise UnreachableError(f"cannot reach GitHub at {where} ({exc})") from None


@contextmanager
def _one_attempt(forge: ForgePort) -> Iterator[None]:
    """A start-up or pre-tick check does not wait out an outage, and reports it itself."""
    transport = forge.transport
    attempts, transport.attempts = transport.attempts, 1
    transport.log_transient = False
    try:
        yield
    finally:
        transport.attempts = attempts
        transport.log_transient = True


def authenticate(forge: ForgePort, gh: GitHubConfig) -> str:
    """Prove the credentials work (the App's identity and an installation token, or the token's
    user); returns the login the daemon acts as. CredentialsError / UnreachableError."""
    with _one_attempt(forge), forge_errors(gh):
        login = str(forge.login)
        forge.renew_token()
        return login


def recheck(forge: ForgePort, gh: GitHubConfig) -> None:
    """Before each scheduled tick: the installation token (renewed when due), or the token
    against the free GET /rate_limit. CredentialsError / UnreachableError."""
    with _one_attempt(forge), forge_errors(gh):
        if forge.as_app:
            forge.renew_token()
        else:
            forge.rate_limit_core()


def repo_problems(
    forge: ForgePort, config: Config, known: frozenset[str] = frozenset()
) -> list[str]:
    """One line per repo the config names (supervised, and the decision repo) that GitHub does
    not show us (a typo, a repo outside the App's installation, an account without the App),
    and per installation lacking a permission the daemon needs. Repos in `known` (lower case:
    the running config's, at a reload) are not asked about again, nor are repos seen visible
    within `REPO_RECHECK`."""
    where = host_port(config.github.base_url)
    source = f"{config.config_dir}/capdaemon.yml: " if config.config_dir else ""
    named = [
        (f"repos[{i}]", rc.name)
        for i, rc in enumerate(config.repos)
        if rc.name.lower() not in known
    ]
    problems = permission_problems(forge, config)
    if config.ballot_repo and config.ballot_repo.lower() not in known:
        named.append(("decision repo (bot.own_repo / decision_repo)", config.ballot_repo))
    with _one_attempt(forge):
        for field, name in named:
            try:
                forge.repo_permissions(name, max_age=REPO_RECHECK)
            except NotInstalled as exc:
                problems.append(f"{source}{field} {name}: {_short(exc)}")
            except NotFound:
                who = "the App's installation" if forge.as_app else "this token"
                problems.append(
                    f"{source}{field} {name}: GitHub at {where} has no such repository, or "
                    f"{who} cannot see it (check the name; add the repo to the installation)"
                )
    return problems


def permission_problems(forge: ForgePort, config: Config) -> list[str]:
    """One line per App installation serving the config's repos whose token, minted in this
    process, lacks a permission the daemon needs (the list `doctor` checks); none with a
    token."""
    insts = forge.installations
    if insts is None:
        return []
    accounts = {n.split("/")[0].lower(): n.split("/")[0] for n in _named_repos(config)}
    problems: list[str] = []
    with _one_attempt(forge):
        for account in accounts.values() or [None]:
            try:
                inst = insts.for_account(account) if account else insts.home()
            except NotInstalled:
                continue  # said per repo
            # what the token minted here was granted (a token adopted from an earlier process
            # was checked when it was minted): no request of its own
            granted = insts.token(inst).permissions
            if granted is None:
                continue
            on = insts.account_of(inst) or account or "its account"
            missing = missing_permissions(granted)
            if missing:
                problems.append(
                    f"the App's installation {inst} on {on} lacks permissions "
                    f"{', '.join(missing)} (needs {_needs(APP_PERMISSIONS)}): grant them in the "
                    "App's settings, then accept them on the installation"
                )
    return problems


def _needs(perms: dict[str, str]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in perms.items())


def _named_repos(config: Config) -> list[str]:
    names = [rc.name for rc in config.repos] + [config.ballot_repo or ""]
    return [n for n in names if "/" in n]


def build_forge(
    gh: GitHubConfig,
    *,
    token: str | None,
    key_pem: bytes | None,
    write_interval: float,
    state_dir: Path | None = None,
) -> Forge:
    """Forge.from_config with its start-up failures (finding the installation) as one line;
    `state_dir` is where over-long bodies are saved in full (the daemon's)."""

    with forge_errors(gh, "; set github.installation_id"):
        return Forge.from_config(
            gh,
            token=token,
            key_pem=key_pem,
            write_interval=write_interval,
            attempts=4,
            state_dir=state_dir,
        )


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] if text else type(exc).__name__
