"""Authentication: App JWT → installation token, tokens, GHES base URLs, secrets never leak."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from structlog.testing import capture_logs

from capdaemon.config import GitHubConfig
from capdaemon.forge.client import Forge
from capdaemon.forge.errors import Forbidden, ForgeError, NotFound
from ghsandbox import Sandbox


def test_app_auth_end_to_end(sandbox: Sandbox, forge: Forge, open_pr: Callable[..., int]) -> None:
    """JWT → installation token → a check run published as the App shows the slug `capdaemon`."""
    assert forge.as_app and forge.login == "capdaemon[bot]" and forge.app_slug == "capdaemon"
    n = open_pr({"README.md": "# app\n"})
    head = forge.snapshot(sandbox.repo, n).head_sha
    forge.publish_check(
        sandbox.repo, head, success=True, title="A", summary="ok", marker={"kind": "check"}
    )
    (run,) = [r for r in forge.commit_checks(sandbox.repo, head) if r.name == "L1.C3"]
    assert (run.app_slug, run.app_id) == ("capdaemon", sandbox.app_id)


def test_installation_token_is_refreshed_before_expiry(
    sandbox: Sandbox, make_forge: Callable[..., Forge]
) -> None:
    """A token within five minutes of expiry (injected clock) is replaced before the next call."""
    now = [datetime.now(UTC)]
    f = make_forge(app=True, clock=lambda: now[0])
    f.list_open_prs(sandbox.repo)
    assert f.installations is not None
    auth = f.installations.token(sandbox.installation_id)
    assert auth.rotations == 1 and auth.expires_at is not None
    now[0] = auth.expires_at - timedelta(minutes=4)
    f.list_open_prs(sandbox.repo)
    assert auth.rotations == 2


def test_ghes_style_base_url(
    sandbox: Sandbox, make_forge: Callable[..., Forge], open_pr: Callable[..., int]
) -> None:
    """A GHES base URL (`https://host/api/v3`) works for reads and writes, App and token."""
    n = open_pr({"README.md": "# ghes\n"})
    for f in (
        make_forge(base_url=sandbox.api_v3_url),
        make_forge(app=True, base_url=sandbox.api_v3_url),
    ):
        snap = f.snapshot(sandbox.repo, n)
        assert snap.files_complete and [x.path for x in snap.files] == ["README.md"]
        assert f.add_labels(sandbox.repo, n, [f"via-{f.login}"])


def test_token_never_in_exceptions_or_logs(
    sandbox: Sandbox, make_forge: Callable[..., Forge]
) -> None:
    """A bad token, a 404 and a failing page give errors and log events without the token text."""
    secret = "ghp_" + "S3cr3tT0kenValue" * 2
    f = make_forge(token=secret)
    with capture_logs() as logs:
        with pytest.raises(Forbidden) as bad:
            f.list_open_prs(sandbox.repo)
        good = make_forge()
        sandbox.faults("*", r"^/repos/acme/widgets/pulls$|^/graphql#", status=502, count=10)
        with pytest.raises(ForgeError) as failing:
            good.list_open_prs(sandbox.repo)
        with pytest.raises(NotFound) as missing:
            good.snapshot(sandbox.repo, 999)
    texts = [str(bad.value), repr(bad.value), str(failing.value), str(missing.value), repr(logs)]
    owner_token = sandbox.tokens[sandbox.owner]
    assert all(secret not in t and owner_token not in t for t in texts)
    assert bad.value.__cause__ is None and bad.value.__suppress_context__


def test_app_key_and_installation_token_never_leak(
    sandbox: Sandbox, make_forge: Callable[..., Forge]
) -> None:
    """The App's private key and its installation token never appear in error text or log events."""
    with capture_logs() as logs:
        f = make_forge(app=True)
        with pytest.raises(NotFound) as missing:
            f.snapshot(sandbox.repo, 4242)
    assert f.installations is not None
    token = f.installations.token(sandbox.installation_id).value
    key_body = sandbox.app_private_key.splitlines()[1]
    for text in (str(missing.value), repr(logs)):
        assert token not in text and key_body not in text
    assert f.scrubber.scrub(f"oops {token} {sandbox.app_private_key}") == "oops *** ***"


def test_missing_credentials_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither an App nor a token configured: ForgeError naming the environment variable."""
    monkeypatch.delenv("CAPDAEMON_TEST_NO_TOKEN", raising=False)
    with pytest.raises(ForgeError, match="CAPDAEMON_TEST_NO_TOKEN"):
        Forge.from_config(GitHubConfig(token_env="CAPDAEMON_TEST_NO_TOKEN"))
