"""The read model and its pages on a bot-state written by real ticks (tests/dashboard/conftest)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from capdaemon.cli import main
from capdaemon.dashboard.html import JS
from capdaemon.dashboard.readmodel import build
from capdaemon.dashboard.site import render, story_href

from .conftest import XSS_BRANCH, XSS_IMG, XSS_PATH, XSS_SCRIPT, DashState
from .pagecheck import Tags, every_page

pytestmark = pytest.mark.slow


def _model(ds: DashState):
    return build(ds.state_dir, ds.config(), ds.now)


def _log(ds: DashState, name: str) -> list[dict]:
    return [json.loads(x) for x in (ds.state_dir / name).read_text().splitlines()]


def test_numbers_match_the_logs(dash_state: DashState) -> None:
    """Quadrant totals, merges, pending and decided ballots are what the logs and prs.json say."""
    model = _model(dash_state)
    assert model.problems == []
    seen: dict[tuple[str, str], str] = {}
    for rec in _log(dash_state, "classifier_audit.jsonl"):
        seen.setdefault((rec["pr"], rec["head_sha"]), rec["quadrant"])
    expected = {q: list(seen.values()).count(q) for q in "ABCD"}
    assert model.totals == expected
    assert sum(d[1][q] for d in model.days for q in "ABCD") == len(seen)
    merged = [r["pr"] for r in _log(dash_state, "actions.jsonl") if r.get("status") == "done"]
    assert [ref for _, ref, _ in model.merges] == merged == ["acme/widgets#1", "acme/widgets#3"]
    # the task PR's cron_settings.json is bot settings: tier 3, it waits for a ballot too
    pending = [f"acme/widgets#{dash_state.prs[k]}" for k in ("script", "scope")]
    assert sorted(b.ref for b in model.pending) == sorted(pending)
    (decided,) = model.decided
    assert (decided.status, decided.by) == ("approved", "alice")
    page = render(model, "index.html").body
    for q, n in expected.items():
        assert f'data-card="total-{q}"><b>{n}</b>' in page
    assert 'data-card="pending"><b>2</b>' in page
    assert 'data-card="escalations"><b>1</b>' in page  # scope-guard's, notified, not resolved
    assert model.violations == {"task-7": 1}  # the task PR's head touched a forbidden path


def test_audit_chain_and_digest_anchor_are_shown_verified(dash_state: DashState) -> None:
    """Both logs verify now, and the digest's anchors still hold."""
    model = _model(dash_state)
    assert [a.report.ok for a in model.audit] == [True, True]
    assert all(a.anchor_seq and not a.anchor_problems for a in model.audit)
    page = render(model, "index.html").body
    assert page.count("chain whole") == 2 and page.count("holds") == 2


def test_why_page_tells_the_same_story_as_the_why_command(
    dash_state: DashState, capsys: pytest.CaptureFixture[str]
) -> None:
    """The story page of a PR is a timeline holding exactly the lines `capdaemon why` prints,
    in order, each entry marked verdict, vote or action."""
    ref = f"acme/widgets#{dash_state.prs['img']}"
    assert main(["why", ref, "--state", str(dash_state.state_dir)]) == 0
    printed = capsys.readouterr().out.splitlines()[1:]
    page = render(_model(dash_state), story_href(ref)).body
    items = re.findall(
        r'<li class="kind-(\w+)" data-kind="\w+"><span class="when">.*?</span><br>(.*?)</li>',
        page,
        re.S,
    )
    lines = [html.unescape(line) for _, text in items for line in text.split("<br>")]
    assert lines == printed
    assert any("ballot — reason: /approve A by alice" in line for line in lines)
    assert {k for k, _ in items} == {"verdict", "vote", "action"}


def test_hostile_strings_are_text_on_every_page(dash_state: DashState) -> None:
    """PR titles, a branch name, a task title and an escalated path carrying markup arrive as
    text: the only elements are the page's own, the only script is the page's own, no
    handler attribute."""
    model = _model(dash_state)
    pages = every_page(model) | every_page(model, static=True)
    found = set()
    allowed = {"html", "head", "meta", "link", "title", "style", "body", "header", "b", "a"}
    allowed |= {"span", "main", "h1", "h2", "p", "div", "table", "thead", "tbody", "tr", "th"}
    allowed |= {"td", "code", "br", "svg", "g", "rect", "line", "text", "form", "input"}
    allowed |= {"button", "pre", "script", "select", "option", "time", "ol", "ul", "li"}
    for path, text in pages.items():
        tags = Tags(text)
        assert {t for t, _ in tags.tags} <= allowed, path
        assert all(not k.startswith("on") for _, a in tags.tags for k in a), path
        assert tags.scripts == [JS], path
        body = "".join(tags.text)
        hostile = (XSS_SCRIPT, XSS_IMG, XSS_BRANCH, XSS_PATH, "<b>bold</b> task")
        found |= {s for s in hostile if s in body}
    assert found == {XSS_SCRIPT, XSS_IMG, XSS_BRANCH, XSS_PATH, "<b>bold</b> task"}


def test_no_secret_reaches_a_page(
    dash_state: DashState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The App's private key, its path and a token in the environment appear on no page."""
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_dashboardsecret123")
    config = dash_state.config()
    key_file = config.github.private_key_file
    assert key_file
    key = Path(key_file).read_text()
    model = build(dash_state.state_dir, config, dash_state.now)
    for text in every_page(model).values():
        assert "PRIVATE KEY" not in text and key[40:80] not in text
        assert key_file not in text and "ghp_" not in text


CORRUPTIONS = {
    "prs.json": lambda p: p.write_text('{"version": 1, "prs": {"acme/widgets#1": [}'),
    "prs.journal": lambda p: p.write_text(
        '{"ref": "acme/widgets#1", "record": {"title": "x"}}\n{"ref": 1, "rec\n'
    ),
    "safety.json": lambda p: p.write_text('{"version": 1, "burn_in'),
    "breaker.json": lambda p: p.write_text("[1, 2"),
    "repo_policies.json": lambda p: p.write_text(p.read_text()[:40]),  # partly written
    "tick_metrics.json": lambda p: p.write_text('"just a string"'),
    "classifier_audit.jsonl": lambda p: p.write_text(p.read_text().replace("\n", "\n{broken\n", 1)),
    "actions.jsonl": lambda p: p.write_text(p.read_text() + '{"action": "merge", "pr'),
    "capabilities/task-7.json": lambda p: (
        p.chmod(0o644),
        p.write_text(p.read_text().replace("src/**", "**")),
    ),
    "digests": lambda p: next(p.glob("*.md")).write_text(
        "audit-anchor: actions.jsonl seq=2 hash=" + "0" * 64 + "\n"
    ),
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_a_corrupt_state_file_is_a_banner_naming_it(
    dash_state: DashState, tmp_path: Path, name: str
) -> None:
    """Each page still renders (200) with a banner naming the file; the file is left as it was."""
    ds = dash_state.copy(tmp_path / "copy")
    target = ds.state_dir / name
    CORRUPTIONS[name](target)
    before = {p: p.read_bytes() for p in ds.state_dir.rglob("*") if p.is_file()}
    model = build(ds.state_dir, ds.config(), ds.now)
    shown = str(target if name != "digests" else ds.state_dir / "actions.jsonl")
    assert any(p.file == shown for p in model.problems), model.problems
    for path, text in every_page(model).items():
        assert render(model, path).status == 200
        assert f"State file <code>{html.escape(shown)}</code> could not be read" in text, path
    after = {p: p.read_bytes() for p in ds.state_dir.rglob("*") if p.is_file()}
    assert after == before


def test_prs_table_shows_the_branch_name_and_the_commit_for_older_records(
    dash_state: DashState, tmp_path: Path
) -> None:
    """Each PR row shows its head branch; a prs.json written before branch names were recorded
    still loads (for the daemon and the page), and that row shows the head commit instead."""
    model = _model(dash_state)
    rows = {r.number: r for r in model.prs}
    assert rows[dash_state.prs["scope"]].branch == "task/task-7/cron"
    assert rows[dash_state.prs["img"]].branch == XSS_BRANCH
    page = render(model, "prs.html").body
    assert '<code class="branch">task/task-7/cron</code>' in page
    assert html.escape(XSS_BRANCH) in page and XSS_BRANCH not in page
    assert model.by_ref["acme/widgets#1"].branch == "agent-1/change-1"

    ds = dash_state.copy(tmp_path / "old")
    prs_file = ds.state_dir / "prs.json"
    raw = json.loads(prs_file.read_text())
    for rec in raw["prs"].values():
        del rec["head_ref"]
    prs_file.write_text(json.dumps(raw))
    from capdaemon.stores.botstate import PRStore

    store = PRStore(ds.state_dir)  # the daemon loads it: a missing field reads as ""
    assert {r.head_ref for r in store.records.values()} == {""}
    old = build(ds.state_dir, ds.config(), ds.now)
    assert old.problems == []
    typo = old.by_ref["acme/widgets#1"]
    assert typo.branch == ""
    text = render(old, "prs.html").body
    assert f"<code>{typo.head[:10]}</code>" in text and "agent-1/change-1" not in text


def test_a_missing_state_dir_is_a_banner_not_a_crash(dash_state: DashState, tmp_path: Path) -> None:
    """An empty model renders every page with the banner."""
    model = build(tmp_path / "nowhere", dash_state.config(), dash_state.now)
    text = render(model, "index.html").body
    assert "state directory does not exist" in text
    assert render(model, "prs.html").status == 200


def test_export_writes_every_page_with_a_meta_csp(dash_state: DashState, tmp_path: Path) -> None:
    """`capdaemon dashboard --out DIR` writes the six pages, a story per PR and the icon."""
    out = tmp_path / "site"
    args = ["dashboard", "--config", str(dash_state.config_dir), "--state"]
    assert main([*args, str(dash_state.state_dir), "--out", str(out)]) == 0
    names = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert names == [
        "agents.html",
        "favicon.svg",
        "index.html",
        *(f"pr/acme_widgets_{n}.html" for n in range(1, 5)),
        "prs.html",
        "queue.html",
        "repos.html",
        "trends.html",
    ]
    for name in names:
        if name.endswith(".html"):
            assert '<meta http-equiv="Content-Security-Policy"' in (out / name).read_text()


def test_bad_arguments_are_one_line_errors(
    dash_state: DashState, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing state dir or a bad port is refused with one line naming it."""
    cfg = ["--config", str(dash_state.config_dir)]
    assert main(["dashboard", *cfg, "--state", str(tmp_path / "no")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"capdaemon dashboard: error: state directory {tmp_path / 'no'} does not exist"
    assert main(["dashboard", *cfg, "--state", str(dash_state.state_dir), "--port", "70000"]) == 2
    assert "--port 70000 is not a port number" in capsys.readouterr().err
    (tmp_path / "f").write_text("x")
    state = ["--state", str(dash_state.state_dir)]
    assert main(["dashboard", *cfg, *state, "--out", str(tmp_path / "f")]) == 2
    assert f"--out {tmp_path / 'f'} exists and is not a folder" in capsys.readouterr().err
