"""`capdaemon classify` end to end on real temporary git repositories."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from capdaemon.cli import main

from .conftest import classify_cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_env_dirs(monkeypatch):
    """Keep the caller's CAPDAEMON_* environment out of these tests."""
    monkeypatch.delenv("CAPDAEMON_CONFIG", raising=False)
    monkeypatch.delenv("CAPDAEMON_STATE", raising=False)


def _json(capsys, repo, config, *extra: str) -> dict:
    code, out, err = classify_cli(capsys, repo, config, "--json", *extra)
    assert code == 0, err
    return json.loads(out)


def test_readme_typo_is_a(capsys, repo, sample_config):
    """A one-word typo fix in README.md is quadrant A, with per-file detail in the JSON."""
    repo.write("README.md", "# Widgets\n\nThis project makes widgets.\n")
    repo.commit("fix typo")
    d = _json(capsys, repo, sample_config)
    assert d["quadrant"] == "A"
    (f,) = d["files"]
    assert f["path"] == "README.md" and f["status"] == "modified"
    assert (f["ir"], f["cr"], f["quadrant"]) == ("reversible", "non-critical", "A")
    assert {"quadrant", "reasoning", "rules_fired", "files", "findings"} <= set(d)
    assert any(r["rule"] == "user.no_todos_in_prod" for r in d["rules_fired"])


def test_workflow_change_is_d(capsys, repo, sample_config):
    """Any change to .github/workflows/*.yml is quadrant D."""
    repo.write(
        ".github/workflows/ci.yml", "on: push\njobs:\n  t:\n    steps:\n      - run: pytest -x\n"
    )
    repo.commit("ci: fail fast")
    d = _json(capsys, repo, sample_config)
    assert d["quadrant"] == "D"
    assert d["files"][0]["quadrant"] == "D"


def test_user_rule_from_the_sample_config_votes(capsys, repo, sample_config):
    """The sample user rule raises a TODO(prod) line under src/ to at least B."""
    repo.write("src/app.py", "x = 1  # TODO(prod): remove\n")
    repo.commit("todo")
    d = _json(capsys, repo, sample_config)
    (rule,) = [r for r in d["rules_fired"] if r["rule"] == "user.no_todos_in_prod"]
    assert rule.get("vote") == "B"
    assert d["quadrant"] in ("B", "D")


def test_readable_table(capsys, repo, sample_config):
    """Without --json, a table shows the quadrant, each file and each rule."""
    repo.remove("examples/old.py")
    repo.commit("delete example")
    code, out, _ = classify_cli(capsys, repo, sample_config)
    assert code == 0
    assert "quadrant: C" in out
    assert "examples/old.py" in out and "removed" in out
    assert "path_classifier_default" in out


def test_defaults_without_any_config(capsys, repo, tmp_path, monkeypatch):
    """With no config dir at all (./config absent), the built-in defaults classify."""
    monkeypatch.chdir(tmp_path)
    repo.write("README.md", "# Widgets\n\nThis project makes widgets.\n")
    repo.commit("typo")
    code = main(
        ["classify", "--repo", str(repo.path), "--base", "main", "--head", "feat", "--json"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["quadrant"] == "A"


def test_dry_run_writes_nothing(capsys, repo, sample_config, tmp_path):
    """Without --record no state directory or log is created."""
    state = tmp_path / "state"
    repo.write("README.md", "x\n")
    repo.commit("x")
    code, _, _ = classify_cli(capsys, repo, sample_config, "--state", str(state))
    assert code == 0
    assert not state.exists()


def test_record_appends_to_the_audit_log(capsys, repo, sample_config, tmp_path):
    """--record appends one chained entry with pr, head_sha, rules_fired, quadrant, reasoning."""
    state = tmp_path / "state"
    repo.write("README.md", "x\n")
    head = repo.commit("x")
    code, _, err = classify_cli(capsys, repo, sample_config, "--state", str(state), "--record",
                             "--name", "acme/widgets", "--number", "7")  # fmt: skip
    assert code == 0, err
    (line,) = (state / "classifier_audit.jsonl").read_text().splitlines()
    rec = json.loads(line)
    assert (rec["pr"], rec["head_sha"], rec["seq"]) == ("acme/widgets#7", head, 1)
    assert rec["ts"] == "2026-05-25T12:00:00Z"
    assert {"rules_fired", "quadrant", "reasoning", "files"} <= set(rec)
    assert main(["audit", "verify", "--state", str(state)]) == 0


def test_base_policy_adds_restrictions(capsys, repo, sample_config):
    """A .capdaemon.yml on the base branch makes its extra critical globs count."""
    repo.git("switch", "-q", "main")
    repo.write(".capdaemon.yml", "critical_globs: ['examples/**']\n")
    repo.commit("policy")
    repo.git("switch", "-q", "feat")
    repo.git("rebase", "-q", "main")
    repo.write("examples/new_demo.py", "print('x')\n")
    repo.commit("demo")
    d = _json(capsys, repo, sample_config)
    assert d["files"][0]["cr"] == "critical"


def test_missing_ref_exits_2(capsys, repo, sample_config):
    """An unknown --head is exit 2 with one line naming the ref and the repo."""
    code = main(["classify", "--repo", str(repo.path), "--base", "main", "--head", "nope",
                 "--config", str(sample_config)])  # fmt: skip
    _, err = capsys.readouterr()
    assert code == 2
    assert err.count("\n") == 1
    assert "unknown revision 'nope'" in err and str(repo.path) in err


def test_non_git_folder_exits_2(capsys, tmp_path, sample_config):
    """A folder that is not a git repository is exit 2 naming it."""
    plain = tmp_path / "plain"
    plain.mkdir()
    code = main(
        ["classify", "--repo", str(plain), "--base", "main", "--config", str(sample_config)]
    )
    _, err = capsys.readouterr()
    assert code == 2
    assert f"not a git repository: {plain}" in err


def test_bad_config_exits_2_naming_file_and_key(capsys, repo, sample_config):
    """A bad value in classifier.yml is exit 2 naming the file, the key and the line."""
    (sample_config / "classifier.yml").write_text("extra_critical_globs:\n  - '[abc'\n")
    repo.write("README.md", "x\n")
    repo.commit("x")
    code, out, err = classify_cli(capsys, repo, sample_config)
    assert code == 2 and out == ""
    assert "classifier.yml:2: key 'extra_critical_globs[0]'" in err
    assert err.count("\n") == 1


def test_missing_explicit_config_dir_exits_2(capsys, repo, tmp_path):
    """--config naming a folder that does not exist is an error, not silently the defaults."""
    code, _, err = classify_cli(capsys, repo, tmp_path / "typo")
    assert code == 2 and "does not exist" in err


def test_rule_file_with_syntax_error_exits_2(capsys, repo, sample_config):
    """A user rule with a syntax error is exit 2 naming the file and line."""
    bad = sample_config / "skills" / "classifier" / "broken.py"
    bad.write_text("def rule(snapshot):\n    return (\n")
    repo.write("README.md", "x\n")
    repo.commit("x")
    code, _, err = classify_cli(capsys, repo, sample_config)
    assert code == 2
    assert "broken.py" in err and "syntax error" in err


def test_bad_now_exits_2(capsys, repo, sample_config):
    """--now without a time zone is refused."""
    code, _, err = classify_cli(capsys, repo, sample_config, "--now", "2026-05-25T12:00:00")
    assert code == 2 and "time zone" in err


def test_missing_required_argument_exits_2(capsys):
    """Leaving out --base is argparse's exit 2."""
    assert main(["classify", "--repo", "."]) == 2


def test_real_process_entry_point(repo, sample_config, tmp_path):
    """`python -m capdaemon.cli classify --json` works as a separate process."""
    repo.write("README.md", "# Widgets\n\nThis project makes widgets.\n")
    repo.commit("typo")
    proc = subprocess.run(
        [sys.executable, "-m", "capdaemon.cli", "classify", "--repo", str(repo.path),
         "--base", "main", "--head", "feat", "--config", str(sample_config), "--json"],
        capture_output=True, text=True, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["quadrant"] == "A"


def test_exit_code_gates_on_the_quadrant(capsys, repo, sample_config):
    """--exit-code: A exits 0, a workflow change (D) exits 12; without it both exit 0."""
    repo.write("README.md", "# Widgets\n\nThis project makes widgets.\n")
    repo.commit("fix typo")
    assert classify_cli(capsys, repo, sample_config, "--exit-code")[0] == 0
    repo.write(".github/workflows/ci.yml", "on: push\n")
    repo.commit("ci")
    assert classify_cli(capsys, repo, sample_config, "--exit-code")[0] == 12
    assert classify_cli(capsys, repo, sample_config)[0] == 0
