"""The standard sandbox scenario shared by tests, benchmarks and the demo."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from github import Github

OWNER = "alice"
SECOND_OWNER = "bob"
AGENTS = ("agent-1", "agent-2")
OUTSIDER = "mallory"
ORG = "acme"
REPO = "acme/widgets"
BOT_REPO = "acme/capdaemon-bot"
APP_ID = 1001
APP_SLUG = "capdaemon"
INSTALLATION_ID = 5001
EVIL_APP_ID = 2002
EVIL_APP_SLUG = "evil-app"
EVIL_INSTALLATION_ID = 6002
SECOND_ORG = "globex"
SECOND_REPO = "globex/gadgets"
SECOND_INSTALLATION_ID = 5003
SECOND_RATE_LIMIT = 7000


def token_for(login: str) -> str:
    """The deterministic personal token of a standard user."""
    return f"ghp_sandbox_{login.replace('-', '_')}"


@dataclass(frozen=True)
class AppKeys:
    """PEM-encoded RSA keys of the two standard Apps."""

    private_pem: str
    public_pem: str
    evil_private_pem: str
    evil_public_pem: str


def generate_keys() -> AppKeys:
    """Generate two RSA-2048 keypairs (slow-ish: do it once per test session)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    def pair() -> tuple[str, str]:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        private = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        public = (
            key.public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode()
        )
        return private, public

    a, b = pair(), pair()
    return AppKeys(a[0], a[1], b[0], b[1])


def write_keys(keys: AppKeys, directory: Path) -> tuple[Path, Path]:
    """Write the private keys as capdaemon.pem / evil-app.pem (0600)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, pem in (("capdaemon.pem", keys.private_pem), ("evil-app.pem", keys.evil_private_pem)):
        p = directory / name
        p.write_text(pem, encoding="utf-8")
        p.chmod(0o600)
        paths.append(p)
    return paths[0], paths[1]


WIDGETS_FILES = {
    "README.md": "# widgets\n\nSupervised by capdaemon.\n",
    "src/widgets/__init__.py": '"""Widgets."""\n',
    "src/widgets/core.py": "def add(a, b):\n    return a + b\n",
    "docs/guide.md": "# Guide\n\nHow to use widgets.\n",
    ".github/workflows/ci.yml": "name: ci\non: [push]\njobs: {}\n",
}
BOT_FILES = {
    "README.md": "# capdaemon-bot\n\ncapdaemon's own deployment.\n",
    "config/capdaemon.yml": "mode: shadow\n",
}


# The test seed's GitHub limits: all on, except the content-creation limits (80 issues or
# comments a minute, 500 an hour), which a test that writes many asks for (``set_fidelity``).
TEST_FIDELITY = {"content_per_minute": 0, "content_per_hour": 0}


def standard_seed(keys: AppKeys, rate_limit: int = 5000) -> dict[str, Any]:
    """The standard seed: owners, agents, an outsider, org acme, two repos, two Apps."""
    users = [
        {
            "login": OWNER,
            "token": token_for(OWNER),
            "name": "Alice Owner",
            "email": "alice@example.com",
        },
        {
            "login": SECOND_OWNER,
            "token": token_for(SECOND_OWNER),
            "name": "Bob Owner",
            "email": "bob@example.com",
        },
        *(
            {"login": a, "token": token_for(a), "name": a, "email": f"{a}@agents.example.com"}
            for a in AGENTS
        ),
        {
            "login": OUTSIDER,
            "token": token_for(OUTSIDER),
            "name": "Mallory",
            "email": "mallory@example.com",
        },
    ]
    collaborators = {SECOND_OWNER: "admin", AGENTS[0]: "write", AGENTS[1]: "write"}
    return {
        "rate_limit": {"core": rate_limit},
        "fidelity": dict(TEST_FIDELITY),
        "users": users,
        "orgs": [{"login": ORG, "admins": [OWNER], "members": [SECOND_OWNER]}],
        "apps": [
            {
                "id": APP_ID,
                "slug": APP_SLUG,
                "name": "capdaemon",
                "owner": ORG,
                "public_key": keys.public_pem,
                "installations": [{"id": INSTALLATION_ID, "account": ORG, "repositories": "all"}],
            },
            {
                "id": EVIL_APP_ID,
                "slug": EVIL_APP_SLUG,
                "name": "Evil App",
                "owner": OUTSIDER,
                "public_key": keys.evil_public_pem,
                "installations": [
                    {"id": EVIL_INSTALLATION_ID, "account": ORG, "repositories": ["widgets"]}
                ],
            },
        ],
        "repos": [
            {
                "owner": ORG,
                "name": "widgets",
                "collaborators": collaborators,
                "files": WIDGETS_FILES,
            },
            {
                "owner": ORG,
                "name": "capdaemon-bot",
                "collaborators": collaborators,
                "files": BOT_FILES,
            },
        ],
    }


def default_world_seed(keys: AppKeys) -> dict[str, Any]:
    """The world `capdaemon sandbox serve` and `capdaemon demo` start with: the standard seed,
    except that the agents have only triage on the decision repo (what the docs ask of a
    deployment: with write, an agent could edit or close a ballot)."""
    seed = standard_seed(keys)
    for repo in seed["repos"]:
        if f"{repo['owner']}/{repo['name']}" == BOT_REPO:
            repo["collaborators"] = {
                **repo["collaborators"],
                **dict.fromkeys(AGENTS, "triage"),
            }
    return seed


def with_second_org(seed: dict[str, Any]) -> dict[str, Any]:
    """The seed plus org globex (alice admin) with repo globex/gadgets, where the capdaemon App
    has a second installation (its own rate limit, 7,000 an hour) — the evil App none."""
    seed["orgs"].append({"login": SECOND_ORG, "admins": [OWNER], "members": [SECOND_OWNER]})
    app = next(a for a in seed["apps"] if a["id"] == APP_ID)
    app["installations"].append(
        {
            "id": SECOND_INSTALLATION_ID,
            "account": SECOND_ORG,
            "repositories": "all",
            "rate_limit": SECOND_RATE_LIMIT,
        }
    )
    seed["repos"].append(
        {
            "owner": SECOND_ORG,
            "name": SECOND_REPO.split("/")[1],
            "collaborators": {SECOND_OWNER: "admin", AGENTS[0]: "write", AGENTS[1]: "write"},
            "files": WIDGETS_FILES,
        }
    )
    return seed


def user_github(base_url: str, token: str) -> Github:
    """PyGithub as one sandbox user (no client-side pacing: the sandbox is local)."""
    import github

    return github.Github(
        base_url=base_url,
        auth=github.Auth.Token(token),
        seconds_between_requests=None,
        seconds_between_writes=None,
    )
