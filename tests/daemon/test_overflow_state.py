"""The daemon's GitHub client keeps an over-long body in the daemon's own state directory."""

from __future__ import annotations

from capdaemon.filenames import OVERFLOW_DIR
from capdaemon.forge.overflow import BODY_LIMIT, overflow_name

from .conftest import Harness


def test_the_daemons_forge_saves_an_over_long_body_in_bot_state(daemon: Harness) -> None:
    """A Ticker opened as `capdaemon tick` opens it: an issue body over GitHub's limit is cut,
    and the whole text is in bot-state/overflow, where the cut body points."""
    ticker = daemon.start()
    body = "".join(f"finding {i}: a long digest line\n" for i in range(4000))
    assert len(body) > BODY_LIMIT
    repo = daemon.sb.bot_repo
    made = ticker.forge.ensure_issue(repo, {"kind": "digest", "key": "long"}, "Digest", body)
    on_github = daemon.sb.backend.issue(repo, made.number)["body"]
    name = overflow_name(body)
    assert len(on_github) <= BODY_LIMIT and f"bot-state/{OVERFLOW_DIR}/{name}" in on_github
    assert (daemon.state_dir / OVERFLOW_DIR / name).read_text(encoding="utf-8") == body
