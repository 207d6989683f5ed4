"""Layers 2 and 3 via the CLI: scope-guard and finish-task on real repos, escalations, SPEC 5.6."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from freezegun import freeze_time

from capdaemon.audit import AuditLog, verify
from capdaemon.filenames import ACTIONS_LOG
from capdaemon.stores.escalations import list_escalations, mark_notified, mark_resolved

from .helpers import INCIDENT_TASK, escalations

ALLOW_DOCS = """\
task_id: docs-1
allowed_resources:
  paths: ["docs/**", "scripts/finish-task.sh"]
  forbidden_paths: [".github/**", "cron_settings.json", "docs/private/**"]
  commands: ["pytest", "python3 -m py_compile"]
  ttl_hours: 48
"""


@pytest.fixture
def incident(taskfile, cli, state: Path, repo) -> str:
    """The task-2360 capability, dispatched (its base, main, recorded)."""
    assert cli("dispatch", taskfile(INCIDENT_TASK), "--state", state, "--repo", repo.root).code == 0
    return "task-2360"


@pytest.fixture
def docs(taskfile, cli, state: Path, repo) -> str:
    """A task allowed docs/** (with docs/private forbidden), dispatched (base recorded)."""
    res = cli("dispatch", taskfile(ALLOW_DOCS, "docs.yml"), "--state", state, "--repo", repo.root)
    assert res.code == 0
    return "docs-1"


def guard(cli, state: Path, repo, task: str, *args: str):
    return cli("scope-guard", "--task", task, "--state", state, "--repo", repo.root, *args)


def actions(state: Path) -> list[dict]:
    return list(AuditLog(state / ACTIONS_LOG))


# -- SPEC 5.6 acceptance scenarios -------------------------------------------------------


def test_scenario1_incident_reproduction(repo, cli, sub, state: Path, incident: str) -> None:
    """Scenario 1: only scripts/finish-task.sh allowed; the branch also edits cron_settings.json."""
    repo.write({"scripts/finish-task.sh": "#!/bin/sh\necho fixed\n"})
    repo.write({"cron_settings.json": "{}\n"})  # the out-of-scope deletion of the cron job
    repo.commit("fix finish-task, and 'clean up' cron")
    res = guard(cli, state, repo, incident, "scripts/finish-task.sh", "cron_settings.json")
    assert res.code == 1
    bad = [ln for ln in res.err.splitlines() if "OUT OF SCOPE" in ln]
    assert len(bad) == 1 and "cron_settings.json" in bad[0]
    (rec_path,) = escalations(state)
    rec = json.loads(rec_path.read_text())
    assert rec["task"] == incident and rec["what"] == ["cron_settings.json"]
    assert rec["why"] and rec["when"].endswith("Z")
    # layer 3 on the real branch, as a real subprocess
    fin = sub("finish-task", "--task", incident, "--repo", repo.root, "--state", state)
    assert fin.code == 1, fin.err
    assert "cron_settings.json" in fin.err and "BLOCKED" in fin.err
    assert len(escalations(state)) == 2
    last = actions(state)[-1]
    assert last["action"] == "scope_violation" and last["layer"] == "finish-task"
    assert last["violations"][0]["subject"] == "cron_settings.json"


def test_scenario2_in_scope_change_passes(repo, cli, sub, state: Path, incident: str) -> None:
    """Scenario 2: an in-scope change passes both layers and is audited as a pass."""
    repo.write({"scripts/finish-task.sh": "#!/bin/sh\necho fixed\n"})
    repo.commit("fix")
    assert guard(cli, state, repo, incident, "scripts/finish-task.sh").code == 0
    res = sub(
        "scope-guard", "--task", incident, "--state", state, "scripts/finish-task.sh", cwd=repo.root
    )
    assert res.code == 0 and res.err == ""
    fin = cli("finish-task", "--task", incident, "--repo", repo.root, "--state", state)
    assert fin.code == 0, fin.err
    assert actions(state)[-1]["action"] == "finish_task"
    assert actions(state)[-1]["result"] == "pass"
    assert escalations(state) == []


def test_scenario3_legacy_passes_with_warning(repo, taskfile, cli, state: Path) -> None:
    """Scenario 3: a legacy task dispatched with --allow-no-scope passes with warnings."""
    path = taskfile("task_id: old-1\ntitle: legacy task\n")
    res = cli("dispatch", path, "--allow-no-scope", "--state", state)
    assert res.code == 0 and "WARNING" in res.err
    g = guard(cli, state, repo, "old-1", "cron_settings.json", "--command", "make all")
    assert g.code == 0 and "WARNING" in g.err and "LEGACY" in g.err
    repo.write({"cron_settings.json": "{}\n"})
    repo.commit()
    fin = cli("finish-task", "--task", "old-1", "--repo", repo.root, "--state", state)
    assert fin.code == 0 and "LEGACY" in fin.err
    assert actions(state)[0]["legacy"] is True and actions(state)[-1]["legacy"] is True


def test_scenario4_new_task_without_capability_refused(taskfile, sub, state: Path) -> None:
    """Scenario 4: dispatch refuses a new task without capability (real subprocess)."""
    res = sub("dispatch", taskfile("task_id: new-1\ntitle: oops\n"), "--state", state)
    assert res.code == 1
    assert "REFUSED" in res.err and "allowed_resources is missing" in res.err
    assert not state.exists()


def test_scenario5_existing_flows_unaffected(repo, taskfile, cli, state: Path) -> None:
    """Scenario 5: other tasks, refusals and legacy tasks do not disturb a task's normal flow."""
    assert cli("dispatch", taskfile(INCIDENT_TASK), "--state", state, "--repo", repo.root).code == 0
    cli("dispatch", taskfile("task_id: old-2\n", "old.yml"), "--allow-no-scope", "--state", state)
    cli("dispatch", taskfile("task_id: new-2\n", "new.yml"), "--state", state)  # refused
    guard(cli, state, repo, "old-2", "anything")
    assert guard(cli, state, repo, "task-2360", ".github/workflows/ci.yml").code == 1
    repo.write({"scripts/finish-task.sh": "#!/bin/sh\necho v2\n"})
    head = repo.commit()
    status_before = repo("status", "--porcelain")
    assert guard(cli, state, repo, "task-2360", "scripts/finish-task.sh").code == 0
    fin = cli("finish-task", "--task", "task-2360", "--repo", repo.root, "--state", state)
    assert fin.code == 0
    assert repo("status", "--porcelain") == status_before  # the guards never touch the tree
    assert repo("rev-parse", "HEAD").strip() == head
    assert verify(state / ACTIONS_LOG).ok
    assert repo("log", "--format=%s", "main").strip() == "initial"  # nothing merged or moved


# -- scope-guard ---------------------------------------------------------------------------


def test_guard_forbidden_beats_allowed(repo, cli, state: Path, docs: str) -> None:
    """docs/private/x is under allowed docs/** but forbidden: refused."""
    res = guard(cli, state, repo, docs, "docs/a.md", "docs/private/x.md")
    bad = [ln for ln in res.err.splitlines() if "OUT OF SCOPE" in ln]
    assert res.code == 1 and len(bad) == 1 and "docs/private/x.md: forbidden" in bad[0]


@pytest.mark.parametrize(
    "path",
    [
        ".GITHUB/workflows/x.yml",
        ".github/Workflows/x.yml",
        "CRON_SETTINGS.JSON",
        "Cron_Settings.json",
    ],
)
def test_guard_case_variants_of_forbidden(repo, cli, state: Path, docs: str, path: str) -> None:
    """Case variants of forbidden paths are forbidden."""
    res = guard(cli, state, repo, docs, path)
    assert res.code == 1 and "forbidden" in res.err


def test_guard_dotdot_and_absolute(repo, cli, state: Path, docs: str, tmp_path: Path) -> None:
    """`..` escapes and absolute paths outside the repo are refused; inside ones are relativised."""
    assert guard(cli, state, repo, docs, "docs/../docs/a.md").code == 0
    assert guard(cli, state, repo, docs, str(repo.root / "docs" / "a.md")).code == 0
    assert guard(cli, state, repo, docs, str(repo.root / ".github" / "x")).code == 1
    for bad in ("../outside", "docs/../../outside", str(tmp_path / "elsewhere"), "/etc/passwd"):
        res = guard(cli, state, repo, docs, bad)
        assert res.code == 1, bad
        assert "climbs out" in res.err or "outside the repository" in res.err


def test_guard_symlink_file_to_forbidden(repo, cli, state: Path, docs: str) -> None:
    """A path that is itself a symlink to a forbidden file is out of scope."""
    (repo.root / "docs" / "ci-link").symlink_to("../.github/workflows/ci.yml")
    res = guard(cli, state, repo, docs, "docs/ci-link")
    assert res.code == 1 and "resolves through a symlink" in res.err and ".github" in res.err


def test_guard_symlinked_parent_folder(repo, cli, state: Path, docs: str) -> None:
    """A parent folder that is a symlink is resolved; the real target must be in scope."""
    (repo.root / "docs" / "gh").symlink_to("../.github")
    res = guard(cli, state, repo, docs, "docs/gh/workflows/new.yml")
    assert res.code == 1 and ".github/workflows/new.yml" in res.err


def test_guard_symlink_out_of_repo(repo, cli, state: Path, docs: str, tmp_path: Path) -> None:
    """A symlink leading outside the repository is refused."""
    (tmp_path / "outside").mkdir()
    (repo.root / "docs" / "out").symlink_to(tmp_path / "outside")
    res = guard(cli, state, repo, docs, "docs/out/x.md")
    assert res.code == 1 and "outside the repository" in res.err


def test_guard_symlink_in_scope(repo, cli, state: Path, docs: str) -> None:
    """A symlink within allowed paths pointing at an allowed file is fine."""
    (repo.root / "docs" / "a.md").write_text("a")
    (repo.root / "docs" / "b.md").symlink_to("a.md")
    assert guard(cli, state, repo, docs, "docs/b.md").code == 0


def test_guard_commands(repo, cli, state: Path, docs: str) -> None:
    """Allowed plain-word commands pass; pytestx, smuggling, expansions and redirects fail."""
    repo.write({"tests/test_a.py": "def test_a():\n    pass\n"})  # an existing input
    ok = guard(cli, state, repo, docs, "--command", "pytest -q tests/", "--command", "pytest -x")
    assert ok.code == 0, ok.err
    for line in (
        "pytestx",
        "pytest && rm -rf docs",
        "python3 -c 'print(1)'",
        "pytest $(touch x)",
        "pytest > cron_settings.json",
        "pytest > docs/report.txt",  # redirections are refused, even into allowed paths
        "pytest 2>&1",
        "FOO=1 curl x",
    ):
        res = guard(cli, state, repo, docs, "--command", line)
        assert res.code == 1, line
        assert len([ln for ln in res.err.splitlines() if "OUT OF SCOPE" in ln]) == 1, line


def test_guard_expired(repo, cli, taskfile, state: Path) -> None:
    """An expired capability is refused (exit 1) and escalated."""
    with freeze_time("2026-05-02 09:00:00"):
        cli("dispatch", taskfile(ALLOW_DOCS), "--state", state)
    with freeze_time("2026-05-04 08:59:59"):
        assert guard(cli, state, repo, "docs-1", "docs/a.md").code == 0
    with freeze_time("2026-05-04 09:00:00"):
        res = guard(cli, state, repo, "docs-1", "docs/a.md")
    assert res.code == 1 and "expired" in res.err
    (rec,) = [json.loads(p.read_text()) for p in escalations(state)]
    assert rec["violations"][0]["kind"] == "expired"
    assert rec["when"] == "2026-05-04T09:00:00Z"


def test_guard_tampered_snapshot(repo, cli, state: Path, docs: str) -> None:
    """A hand-edited snapshot is refused by scope-guard (exit 1, escalated)."""
    path = state / "capabilities" / f"{docs}.json"
    path.chmod(0o644)
    path.write_text(path.read_text().replace('"docs/**"', '"**"'))
    res = guard(cli, state, repo, docs, "cron_settings.json")
    assert res.code == 1 and "refused" in res.err and "sha256" in res.err
    assert json.loads(escalations(state)[0].read_text())["violations"][0]["kind"] == "tampered"


def test_guard_unknown_task(repo, cli, state: Path) -> None:
    """A task that was never dispatched is refused and escalated."""
    res = guard(cli, state, repo, "ghost", "README.md")
    assert res.code == 1 and "never dispatched" in res.err
    assert len(escalations(state)) == 1


def test_guard_bad_usage(repo, cli, state: Path, docs: str) -> None:
    """No paths and no commands, or no --task, is bad usage (exit 2)."""
    assert guard(cli, state, repo, docs).code == 2
    assert cli("scope-guard", "--state", state, "x").code == 2
    assert cli("scope-guard", "--task", docs, "--repo", "/nonexistent", "x").code == 2


def test_guard_subprocess_out_of_scope(repo, sub, state: Path, incident: str) -> None:
    """Through a real process: one stderr line per offending path, exit 1."""
    res = sub(
        "scope-guard", "--task", incident, "--state", state, "--repo", repo.root,
        "cron_settings.json", ".github/x", "scripts/finish-task.sh",
    )  # fmt: skip
    assert res.code == 1
    assert len([ln for ln in res.err.splitlines() if "OUT OF SCOPE" in ln]) == 2


# -- finish-task -----------------------------------------------------------------------------


def test_finish_rename_allowed_into_forbidden(repo, cli, state: Path, docs: str) -> None:
    """A rename out of an allowed folder into a forbidden one is a violation."""
    repo.write({"docs/ci.yml": "on: push\njobs: {}\n" * 5})
    repo.commit("add doc")
    repo("checkout", "-q", "main")
    repo("merge", "-q", "--ff-only", "task")
    repo("checkout", "-q", "-b", "task2")
    repo("mv", "docs/ci.yml", ".github/workflows/sneaky.yml")
    repo.commit("move")
    res = cli("finish-task", "--task", docs, "--repo", repo.root, "--state", state)
    assert res.code == 1 and ".github/workflows/sneaky.yml: forbidden" in res.err
    rec = json.loads(escalations(state)[0].read_text())
    assert rec["layer"] == "finish-task" and rec["what"] == [".github/workflows/sneaky.yml"]


def test_finish_symlink_to_forbidden(repo, cli, state: Path, docs: str) -> None:
    """A symlink committed inside docs/ whose target is a forbidden file blocks the merge."""
    (repo.root / "docs" / "settings").symlink_to("../cron_settings.json")
    repo.commit("link")
    res = cli("finish-task", "--task", docs, "--repo", repo.root, "--state", state)
    assert res.code == 1 and "docs/settings: symlink points at 'cron_settings.json'" in res.err


def test_finish_symlink_in_scope(repo, cli, state: Path, docs: str) -> None:
    """A committed symlink to an allowed file passes."""
    repo.write({"docs/a.md": "a\n"})
    (repo.root / "docs" / "b.md").symlink_to("a.md")
    repo.commit("link")
    assert cli("finish-task", "--task", docs, "--repo", repo.root, "--state", state).code == 0


def test_finish_mode_change_and_delete(repo, cli, state: Path, incident: str) -> None:
    """A mode change on a forbidden file and a deletion both count."""
    (repo.root / ".github" / "workflows" / "ci.yml").chmod(0o755)
    (repo.root / "README.md").unlink()
    repo.commit("chmod + delete")
    res = cli("finish-task", "--task", incident, "--repo", repo.root, "--state", state)
    assert res.code == 1
    assert ".github/workflows/ci.yml: forbidden" in res.err and "README.md" in res.err


def test_finish_uses_merge_base(repo, cli, state: Path, incident: str) -> None:
    """Changes on main after the branch point are not the task's (base...HEAD)."""
    repo.write({"scripts/finish-task.sh": "#!/bin/sh\necho ok\n"})
    repo.commit("task work")
    repo("checkout", "-q", "main")
    repo.write({".github/workflows/ci.yml": "on: [push, pull_request]\n"})
    repo.commit("main moves on")
    repo("checkout", "-q", "task")
    assert cli("finish-task", "--task", incident, "--repo", repo.root, "--state", state).code == 0


def test_finish_git_error(cli, state: Path, incident: str, tmp_path: Path) -> None:
    """A directory that is no git repo is a usage error (exit 2), not a pass."""
    res = cli("finish-task", "--task", incident, "--repo", tmp_path, "--state", state)
    assert res.code == 2 and "not a git repository" in res.err


def test_finish_expired(repo, cli, taskfile, state: Path) -> None:
    """finish-task after the TTL is a violation."""
    with freeze_time("2026-05-02 09:00:00"):
        cli("dispatch", taskfile(INCIDENT_TASK), "--state", state, "--repo", repo.root)
    with freeze_time("2026-05-10 09:00:00"):
        res = cli("finish-task", "--task", "task-2360", "--repo", repo.root, "--state", state)
    assert res.code == 1 and "expired" in res.err


# -- escalation records ----------------------------------------------------------------------


def test_escalations_list_and_mark(repo, cli, state: Path, incident: str) -> None:
    """Records list as open; mark_notified stores the issue once; resolved ones drop out."""
    guard(cli, state, repo, incident, "cron_settings.json")
    guard(cli, state, repo, incident, ".github/x")
    recs = list_escalations(state)
    assert [r.what for r in recs] == [("cron_settings.json",), (".github/x",)]
    now = datetime(2026, 5, 2, tzinfo=UTC)
    assert mark_notified(state, recs[0].id, "https://gh/o/r/issues/9", now) is True
    assert mark_notified(state, recs[0].id, "https://gh/o/r/issues/10", now) is False
    assert list_escalations(state)[0].issue_url == "https://gh/o/r/issues/9"
    assert mark_resolved(state, recs[1].id, "owner", now, "reverted") is True
    assert [r.id for r in list_escalations(state)] == [recs[0].id]
    assert len(list_escalations(state, include_resolved=True)) == 2
    res = cli("escalations", "--state", state, "--json")
    (only,) = json.loads(res.out)
    assert only["task"] == incident and only["notified"]["issue_url"].endswith("/9")
    assert "notified" in cli("escalations", "--state", state).out
    (state / "empty").mkdir()
    assert cli("escalations", "--state", state / "empty").out.strip() == "no open escalations"


def test_scope_guard_import_path_is_light(repo, state: Path, incident: str) -> None:
    """scope-guard (in scope and out of scope) never imports yaml, jsonschema, structlog, config."""
    import subprocess
    import sys

    heavy = ("yaml", "jsonschema", "structlog", "capdaemon.config", "github", "capdaemon.model")
    for path in ("scripts/finish-task.sh", "cron_settings.json"):
        code = (
            "import sys; from capdaemon.cli import main; "
            f"rc = main(['scope-guard', '--task', {incident!r}, '--state', {str(state)!r}, "
            f"'--repo', {str(repo.root)!r}, {path!r}]); "
            "print(' '.join(sorted(sys.modules)))"
        )
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        loaded = set(proc.stdout.split())
        assert "capdaemon.capability.snapshot" in loaded, proc.stderr
        assert not [m for m in heavy if m in loaded], path
