"""User rules (SPEC 2.7): loading, raise-only composition, errors, garbage and time budget."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from capdaemon.classify import LoadError, UserRule, classify, load_user_rules
from capdaemon.config import ClassifierConfig
from capdaemon.model import RuleResult

from .classify_builders import NOW, added, base_config, modified, snapshot

SAFE = added("examples/demo.py")


def write_rules(tmp_path: Path, **sources: str) -> Path:
    """Write rule files name.py → source into a rule directory."""
    d = tmp_path / "skills" / "classifier"
    d.mkdir(parents=True)
    for name, src in sources.items():
        (d / f"{name}.py").write_text(textwrap.dedent(src), encoding="utf-8")
    return d


RULES = {
    "lower": "def rule(snapshot):\n    return ('A', 'everything is fine')\n",
    "raise_b": "def rule(snapshot):\n    return ('B', 'touches billing')\n",
    "abstain": "def rule(snapshot):\n    return (None, 'nothing to say')\n",
    "crash": "def rule(snapshot):\n    raise RuntimeError('boom')\n",
    "garbage": "def rule(snapshot):\n    return 'D please'\n",
    "bad_letter": "def rule(snapshot):\n    return ('E', 'no such quadrant')\n",
    "bare_none": "def rule(snapshot):\n    return None\n",
    "bad_reason": "def rule(snapshot):\n    return ('B', 42)\n",
    "slow": "import time\ndef rule(snapshot):\n    time.sleep(5)\n    return ('A', 'late')\n",
    "exits": "import sys\ndef rule(snapshot):\n    sys.exit(0)\n",
    "mutates": (
        "def rule(snapshot):\n"
        "    object.__setattr__(snapshot, 'head_sha', 'x' * 40)\n"
        "    return (None, 'tried')\n"
    ),
    "reads": (
        "def rule(snapshot):\n"
        "    if any(f.path.startswith('billing/') for f in snapshot.files):\n"
        "        return ('D', 'billing needs an owner')\n"
        "    return (None, '')\n"
    ),
}

CASES = [
    pytest.param("lower", SAFE, "A", RuleResult.VOTE, id="lower-on-A-is-A"),
    pytest.param("lower", modified("app/x.py", ["a"], ["b"]), "B", RuleResult.VOTE,
                 id="cannot-lower-B"),
    pytest.param("raise_b", SAFE, "B", RuleResult.VOTE, id="raises-to-B"),
    pytest.param("abstain", SAFE, "A", RuleResult.ABSTAIN, id="abstains"),
    pytest.param("crash", SAFE, "D", RuleResult.ERROR, id="exception-is-D"),
    pytest.param("garbage", SAFE, "D", RuleResult.ERROR, id="garbage-is-D"),
    pytest.param("bad_letter", SAFE, "D", RuleResult.ERROR, id="bad-letter-is-D"),
    pytest.param("bare_none", SAFE, "D", RuleResult.ERROR, id="bare-none-is-D"),
    pytest.param("bad_reason", SAFE, "D", RuleResult.ERROR, id="non-str-reason-is-D"),
    pytest.param("slow", SAFE, "D", RuleResult.ERROR, id="slow-is-D"),
    pytest.param("exits", SAFE, "D", RuleResult.ERROR, id="sys-exit-is-D"),
    pytest.param("reads", added("billing/x.py"), "D", RuleResult.VOTE, id="reads-snapshot"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "fc", "expected", "result"), CASES)
def test_user_rule_outcomes(tmp_path: Path, name: str, fc, expected: str, result) -> None:  # type: ignore[no-untyped-def]
    """User rules can only raise; crashes, garbage and timeouts are errors that mean D."""
    rules = load_user_rules(write_rules(tmp_path, **{name: RULES[name]}))
    cfg = base_config(classifier=ClassifierConfig(user_rule_timeout_seconds=0.2))
    v = classify(snapshot(fc), cfg, now=NOW, user_rules=rules)
    assert v.quadrant.value == expected, v.reasoning
    o = v.rules[-1]
    assert o.rule == f"user.{name}"
    assert o.result is result
    if result is RuleResult.ERROR:
        assert o.reason.startswith(f"rule {name} failed:")


def test_slow_rule_reason_names_the_budget(tmp_path: Path) -> None:
    """A timeout says which budget was exceeded."""
    rules = load_user_rules(write_rules(tmp_path, slow=RULES["slow"]))
    cfg = base_config(classifier=ClassifierConfig(user_rule_timeout_seconds=0.1))
    v = classify(snapshot(SAFE), cfg, now=NOW, user_rules=rules)
    assert "0.1 s time budget" in v.rules[-1].reason
    assert "user.slow" in v.reasoning


def test_rules_cannot_mutate_the_callers_snapshot(tmp_path: Path) -> None:
    """A rule that forces a write on the snapshot only changes its own copy."""
    rules = load_user_rules(write_rules(tmp_path, mutates=RULES["mutates"]))
    snap = snapshot(SAFE)
    classify(snap, base_config(), now=NOW, user_rules=rules)
    assert snap.head_sha == "h" * 40


def test_rules_load_in_name_order_and_skip_private_files(tmp_path: Path) -> None:
    """Files load in name order; `_helpers.py` is not a rule."""
    d = write_rules(tmp_path, b_rule=RULES["abstain"], a_rule=RULES["abstain"], _helpers="X = 1\n")
    assert [r.name for r in load_user_rules(d)] == ["a_rule", "b_rule"]


def test_missing_directory_means_no_rules(tmp_path: Path) -> None:
    """No rule directory → no user rules."""
    assert load_user_rules(tmp_path / "nope") == ()


LOAD_ERRORS = [
    pytest.param("def rule(snapshot):\n    return (\n", "broken.py:", "syntax error", id="syntax"),
    pytest.param("x = 1\n\nraise ValueError('at load')\n", "broken.py:3", "ValueError",
                 id="raises-at-load"),
    pytest.param("def other(snapshot):\n    pass\n", "broken.py", "no callable rule",
                 id="no-rule"),
    pytest.param("rule = 42\n", "broken.py", "no callable rule", id="rule-not-callable"),
]  # fmt: skip


@pytest.mark.parametrize(("source", "where", "what"), LOAD_ERRORS)
def test_load_errors_name_file_and_line(tmp_path: Path, source: str, where: str, what: str) -> None:
    """A bad rule file is a LoadError naming the file (and line), so the daemon refuses to start."""
    d = write_rules(tmp_path, broken=source)
    with pytest.raises(LoadError) as err:
        load_user_rules(d)
    assert where in str(err.value)
    assert what in str(err.value)


def test_syntax_error_line_number(tmp_path: Path) -> None:
    """The syntax error's line is reported."""
    d = write_rules(tmp_path, broken="x = 1\ny = (\n")
    with pytest.raises(LoadError) as err:
        load_user_rules(d)
    assert err.value.line == 2


def test_bad_rule_name(tmp_path: Path) -> None:
    """A rule file name that cannot be an audit name is refused."""
    d = tmp_path / "r"
    d.mkdir()
    (d / "bad name!.py").write_text("def rule(s):\n    return (None, '')\n", encoding="utf-8")
    with pytest.raises(LoadError):
        load_user_rules(d)


def test_user_rule_object_directly() -> None:
    """A UserRule can be built from any callable (the audit name is user.<name>)."""
    rule = UserRule(name="inline", func=lambda s: ("C", "inline says C"))
    v = classify(snapshot(SAFE), base_config(), now=NOW, user_rules=[rule])
    assert v.quadrant.value == "C"
    assert v.to_dict()["rules_fired"][-1]["rule"] == "user.inline"


def test_abstaining_user_rule_is_audited_as_pass() -> None:
    """An abstaining user rule is recorded as an abstention in the audit dict."""
    rule = UserRule(name="quiet", func=lambda s: (None, ""))
    entry = classify(snapshot(SAFE), base_config(), now=NOW, user_rules=[rule]).to_dict()
    assert entry["rules_fired"][-1]["result"] == "abstain"


def test_snapshot_given_to_rules_is_frozen() -> None:
    """Snapshots are frozen dataclasses with tuple fields (read-only by construction)."""
    snap = snapshot(SAFE)
    with pytest.raises(AttributeError):
        snap.head_sha = "x"  # type: ignore[misc]
    assert isinstance(snap.files, tuple)
    assert replace(snap).files == snap.files
