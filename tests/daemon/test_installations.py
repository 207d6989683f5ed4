"""Two App installations in one config: repos of two organisations supervised by one daemon."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from capdaemon.cli import main as cli
from capdaemon.filenames import FORGE_CACHE_FILE
from ghsandbox import Sandbox
from ghsandbox import testing as std
from tests.conftest import start_sandbox

from .conftest import SESSION, Harness


@pytest.fixture
def two_orgs(tmp_path: Path, sandbox_keys: tuple[std.AppKeys, Path, Path]) -> Iterator[Harness]:
    """A daemon over acme/widgets and globex/gadgets, with no installation configured."""
    sb = start_sandbox(tmp_path / "sandbox", sandbox_keys, extend=std.with_second_org)
    h = Harness(sb, tmp_path)
    h.configure(mode="enforce")
    path = h.config_dir / "capdaemon.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    del data["github"]["installation_id"]
    data["repos"].append({"name": std.SECOND_REPO, "base": "main", "merge_method": "squash"})
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    try:
        yield h
    finally:
        h.stop()
        sb.stop()


def _open_a(sb: Sandbox, repo: str) -> int:
    """An A change (a docs page) by an agent; its PR number."""
    sb.commit_files(
        repo,
        "agent-1/docs",
        {"docs/guide/more.md": "# More\n"},
        f"Add a guide page\n\n{SESSION}\n",
        author="agent-1",
        parent_branch="main",
    )
    return sb.open_pr(repo, "agent-1/docs", "main", "Add a guide page", "body", "agent-1")


def _sent_by(sb: Sandbox) -> dict[str, int]:
    return {k: v["requests"] for k, v in sb.counters()["identities"].items()}


def test_one_daemon_merges_in_two_organisations(two_orgs: Harness) -> None:
    """An A PR in each organisation merges in one tick: each repo is read, checked and merged
    with its own installation's token (GitHub would refuse the other's)."""
    h = two_orgs
    a, g = _open_a(h.sb, std.REPO), _open_a(h.sb, std.SECOND_REPO)
    h.sb.reset_counters()
    report = h.tick()
    assert sorted(report.merged) == sorted([f"{std.REPO}#{a}", f"{std.SECOND_REPO}#{g}"])
    assert not report.errors
    sent = _sent_by(h.sb)
    assert sent[f"installation:{std.INSTALLATION_ID}"] > 0
    assert sent[f"installation:{std.SECOND_INSTALLATION_ID}"] > 0


def test_a_restart_reuses_both_tokens_and_the_listing(two_orgs: Harness) -> None:
    """The cross-process cache keeps a token per installation and the installation listing: the
    next process (a cron `tick --once`) mints nothing and lists nothing."""
    h = two_orgs
    _open_a(h.sb, std.SECOND_REPO)
    h.tick()
    h.stop()  # saves the cache
    doc = json.loads((h.state_dir / FORGE_CACHE_FILE).read_text(encoding="utf-8"))
    held = {t["installation_id"] for t in doc["tokens"]}
    assert held == {std.INSTALLATION_ID, std.SECOND_INSTALLATION_ID}
    assert doc["installations"]["accounts"] == {
        std.ORG: std.INSTALLATION_ID,
        std.SECOND_ORG: std.SECOND_INSTALLATION_ID,
    }
    h.sb.reset_counters()
    report = h.tick()
    assert not report.errors
    ends = h.sb.counters()["endpoints"]
    assert not any(k.startswith("POST /app/installations") for k in ends)
    assert "GET /app/installations" not in ends


def _doctor_lines(h: Harness, capsys: pytest.CaptureFixture[str], **github: object) -> list[str]:
    path = h.config_dir / "capdaemon.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["github"].update(github)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    cli(["doctor", "--config", str(h.config_dir), "--state", str(h.root / "doctor-state")])
    return [ln for ln in capsys.readouterr().out.splitlines() if " app installation " in ln]


def test_doctor_checks_each_accounts_installation(
    two_orgs: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    """`capdaemon doctor` names the installation serving each configured account; a pinned
    `installation_id` on another account, or an account without the App, is a failure that
    says what to do."""
    h = two_orgs
    lines = _doctor_lines(h, capsys)
    assert [ln.split()[0] for ln in lines] == ["ok", "ok"]
    assert f"installation {std.SECOND_INSTALLATION_ID} on {std.SECOND_ORG}" in "\n".join(lines)
    pinned = _doctor_lines(h, capsys, installation_id=std.INSTALLATION_ID)
    assert [ln.split()[0] for ln in pinned] == ["ok", "FAIL"]
    assert "leave installation_id unset" in pinned[1]
    h.sb.create_repo(std.OUTSIDER, "tools", files={"README.md": "# tools\n"})
    path = h.config_dir / "capdaemon.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    del data["github"]["installation_id"]
    data["repos"].append({"name": f"{std.OUTSIDER}/tools", "base": "main"})
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    missing = _doctor_lines(h, capsys)
    assert [ln.split()[0] for ln in missing] == ["ok", "ok", "FAIL"]
    assert f"not installed on '{std.OUTSIDER}'" in missing[2]
