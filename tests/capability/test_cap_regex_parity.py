"""Stored-regex matching (scope-guard) gives exactly GlobSet's answers (daemon, finish-task).

At dispatch the snapshot stores the regexes pathspec compiles for each glob (`matchers`);
scope-guard matches with them and `re` only. These tests compare the two on a generated
table of a few thousand paths (case variants, Unicode look-alikes, NFKC tricks such as a
full-width `／`) against the default classifier/tier globs and the capability test globs.
"""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from capdaemon import config as defaults
from capdaemon.capability.model import Capability
from capdaemon.capability.scope import check_path
from capdaemon.capability.snapshot import (
    build_snapshot,
    content_hash,
    guard_capability,
    snapshot_from_body,
)
from capdaemon.globs import (
    GlobError,
    GlobSet,
    PathError,
    RegexGlobSet,
    normalize_path,
    pathspec_version,
)
from capdaemon.stores import registry
from capdaemon.stores.capabilities import load_snapshot

from .helpers import INCIDENT_TASK

NOW = datetime(2026, 5, 2, 9, 0, tzinfo=UTC)


def _default_globs() -> list[str]:
    """Every glob tuple among the config defaults (classifier, tiers, skills...)."""
    out: set[str] = set()
    for name in dir(defaults):
        value = getattr(defaults, name)
        if name.isupper() and name.endswith("GLOBS") and isinstance(value, tuple):
            out.update(v for v in value if isinstance(v, str))
    tiers = getattr(defaults, "TierConfig", None)
    if tiers is not None:
        for f in ("dependency_globs", "protected_globs", "production_globs"):
            out.update(getattr(tiers(), f, ()))
    return sorted(out)


TEST_GLOBS = [
    # capability tests and the bench
    "scripts/finish-task.sh", ".github/**", "memory/events/*.cron-*", "cron_settings.json",
    "docs/**", "src/**", "tests/**", "config/**", "*.pem", "**",
    # gitignore corners: anchoring, trailing slash, classes, escapes, single-char wildcards
    "*", "*.py", "src/*.py", "/root.txt", "build/", "a/**/b", "**/x", "x/**/", "[abc]*.md",
    "[!a]*.txt", "x[0-9]", "a?c/**", "\\#literal", "a\\*b", "**/.env*", "Makefile",
    "*.PEM", "Docs/**", "ÄÖ/**", "ехamples/**", "examples/**", "ＳＲＣ/**", "ﬁle*",
    "straße/**", "**/*secret*", "foo bar/*", "trailing ", "dir/*/leaf", "*.tar.gz",
]  # fmt: skip

_PARTS = [
    "src", "SRC", "Src", "docs", "DOCS", ".github", ".GITHUB", ".gіthub", "config", "memory",
    "events", "x.cron-1", "a", "b", "x", "acc", "abc", "x.py", "X.PY", "a.pem", "key.PEM",
    "a.рem", "ѕrc", "ехamples", "examples", "ＳＲＣ", "ｓｒｃ", ".env", ".env.local", ".ENV",
    "migrations", "schema.prisma", "Makefile", "ﬁle", "file", "ß", "straße", "STRASSE", "İ",
    "Ǆ", "ÄÖ", "äö", "／etc", "．／x", "．", "a b", "foo bar", "#literal", "a*b", "[x]", "?",
    "build", "root.txt", "leaf", "dir", "x7", "q.tar.gz", "my_secret.txt", "SECRET", "id_rsa",
    "CLAUDE.md", "AGENTS.md", "package.json", "requirements-dev.txt", "deploy", "k8s",
    "production.yml", "trailing", "cron_settings.json", "finish-task.sh", "scripts",
]  # fmt: skip


def _paths(n: int = 4000) -> list[str]:
    rng = random.Random(20260502)
    out = {p for p in _PARTS}
    out.update("/".join(pair) for pair in itertools.product(_PARTS[:24], repeat=2))
    while len(out) < n:
        depth = rng.randint(1, 5)
        out.add("/".join(rng.choice(_PARTS) for _ in range(depth)))
    # unnormalised forms too: match() takes any string
    extra = ["/" + p for p in list(out)[:200]] + ["./" + p for p in list(out)[:200]]
    return sorted(out) + extra


PATHS = _paths()
GLOB_SETS = [
    ("defaults", tuple(_default_globs())),
    ("tests", tuple(TEST_GLOBS)),
    *((f"one:{g}", (g,)) for g in TEST_GLOBS),
    ("none", ()),
]


def _regex_twin(gs: GlobSet) -> RegexGlobSet:
    """The RegexGlobSet built from a GlobSet's regexes, after a JSON round trip (as stored)."""
    stored = json.loads(json.dumps([list(e) for e in gs.regexes()], ensure_ascii=False))
    return RegexGlobSet(gs.patterns, gs.case_insensitive, stored)


@pytest.mark.parametrize("case_insensitive", [False, True], ids=["allowed", "forbidden"])
@pytest.mark.parametrize(("name", "patterns"), GLOB_SETS, ids=[n for n, _ in GLOB_SETS])
def test_stored_regexes_match_like_globset(name, patterns, case_insensitive) -> None:
    """match() and matching() agree on every generated path, raw and normalised."""
    gs = GlobSet.of(patterns, case_insensitive=case_insensitive)
    rx = _regex_twin(gs)
    assert bool(rx) == bool(gs) and rx.patterns == gs.patterns
    many = len(patterns) > 1
    singles = [GlobSet((g,), case_insensitive) for g in patterns]  # GlobSet.matching, compiled once
    for i, p in enumerate(PATHS):
        forms = [p]
        try:
            forms.append(normalize_path(p))
        except PathError:
            pass
        for f in forms:
            hit = gs.match(f)
            assert rx.match(f) == hit, (name, f)
            if not many:
                continue
            got = rx.matching(f)
            assert got == [g for g, one in zip(patterns, singles, strict=True) if one.match(f)]
            if i % 50 == 0:
                assert got == gs.matching(f), (name, f)


def test_table_is_not_trivial() -> None:
    """The table exercises both answers, case folding and look-alike folding."""
    forbidden = GlobSet.of(TEST_GLOBS[:4], case_insensitive=True)
    hits = [p for p in PATHS if forbidden.match(p)]
    assert len(PATHS) > 3000 and 100 < len(hits) < len(PATHS) - 100
    assert forbidden.match(".GITHUB/x") and forbidden.match(".gіthub/x")  # Cyrillic і
    assert GlobSet.of(("src/**",), case_insensitive=True).match("ＳＲＣ/x")  # NFKC


def test_last_match_wins_with_negations() -> None:
    """GlobSet itself accepts negations (GlobSet.of refuses them): the last match decides."""
    for patterns in (("src/**", "!src/gen/**"), ("!src/gen/**", "src/**"), ("*", "!*.py", "x/**")):
        for ci in (False, True):
            gs = GlobSet(patterns, ci)
            rx = _regex_twin(gs)
            for p in [*PATHS[:1500], "src/gen/a", "src/a", "x/a.py", "a.py"]:
                assert rx.match(p) == gs.match(p), (patterns, p)
                assert rx.matching(p) == gs.matching(p), (patterns, p)


def test_regex_globset_refuses_a_list_that_does_not_fit() -> None:
    """Wrong length, wrong shapes, bad regexes: GlobError (guard_capability then falls back)."""
    with pytest.raises(GlobError):
        RegexGlobSet(("a",), False, [])
    for bad in (["^a"], [None, True], ["^a", "yes"], [1, True], ["(", True], "ab"):
        with pytest.raises(GlobError):
            RegexGlobSet(("a",), False, [bad])


def _capability() -> Capability:
    return Capability(
        task_id="t-1",
        level=1,
        paths=tuple(sorted([*TEST_GLOBS[:3], "docs/**", "src/*.py", "ﬁle*"])),
        forbidden_paths=tuple(sorted([".github/**", "memory/events/*.cron-*", "*.pem", "ÄÖ/**"])),
        commands=("pytest",),
    )


def test_snapshot_check_path_parity() -> None:
    """check_path with the stored matchers == check_path with GlobSets, violation for violation."""
    cap = _capability()
    body = build_snapshot(cap, NOW)
    assert body["matchers"]["version"] == pathspec_version()
    snap = snapshot_from_body(json.loads(json.dumps(body)), Path("t-1.json"), "t-1")
    fast = guard_capability(snap)
    assert fast == snap.capability and fast is not snap.capability
    assert isinstance(fast.allowed, RegexGlobSet) and isinstance(fast.forbidden, RegexGlobSet)
    assert isinstance(snap.capability.allowed, GlobSet)
    for p in PATHS:
        assert check_path(fast, p) == check_path(snap.capability, p), p


def test_guard_capability_falls_back() -> None:
    """No matchers (older snapshots), another pathspec version, malformed lists, legacy."""
    cap = _capability()
    body = build_snapshot(cap, NOW)
    path = Path("t-1.json")

    def snap_with(edit) -> object:
        b = json.loads(json.dumps(body))
        edit(b)
        b["sha256"] = content_hash(b)
        return snapshot_from_body(b, path, "t-1")

    cases = {
        "old": lambda b: b.pop("matchers"),
        "version": lambda b: b["matchers"].update(version="0.0.1"),
        "engine": lambda b: b["matchers"].update(engine="other"),
        "short": lambda b: b["matchers"]["paths"].pop(),
        "shape": lambda b: b["matchers"].update(forbidden_paths="^x"),
        "regex": lambda b: b["matchers"]["paths"][0].__setitem__(0, "("),
        "missing": lambda b: b["matchers"].pop("paths"),
        "not-a-dict": lambda b: b.update(matchers=["^a"]),
    }
    for name, edit in cases.items():
        snap = snap_with(edit)
        got = guard_capability(snap)
        assert got is snap.capability, name
        assert isinstance(got.allowed, GlobSet), name
    legacy = Capability(task_id="t-2", legacy=True)
    lbody = build_snapshot(legacy, NOW)
    assert "matchers" not in lbody
    lsnap = snapshot_from_body(lbody, Path("t-2.json"), "t-2")
    assert guard_capability(lsnap) is lsnap.capability


def test_matchers_are_hashed(taskfile, cli, state: Path) -> None:
    """Editing a stored regex breaks the snapshot's sha256 (refused as tampered)."""
    assert cli("dispatch", taskfile(INCIDENT_TASK), "--state", state).code == 0
    path = state / "capabilities" / "task-2360.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert all(e[0].startswith("^") for e in data["matchers"]["forbidden_paths"])
    data["matchers"]["forbidden_paths"] = [["^$", True]] * len(data["matchers"]["forbidden_paths"])
    path.chmod(0o644)
    path.write_text(json.dumps(data), encoding="utf-8")
    res = cli("scope-guard", "--task", "task-2360", "--state", state, "scripts/finish-task.sh")
    assert res.code == 1 and "sha256" in res.err


def _dispatch_without_matchers(monkeypatch, state: Path, cap: Capability) -> None:
    """Dispatch as the code before `matchers` did (snapshot body without them)."""

    def old_build(c: Capability, now: datetime) -> dict:
        body = build_snapshot(c, now)
        body.pop("matchers", None)
        body["sha256"] = content_hash(body)
        return body

    monkeypatch.setattr(registry, "build_snapshot", old_build)
    registry.dispatch(state, cap, datetime.now(UTC))
    monkeypatch.undo()


def test_old_snapshot_still_guards(monkeypatch, repo, cli, state: Path) -> None:
    """A snapshot written before `matchers` existed is checked with GlobSets, same answers."""
    cap = Capability(
        task_id="old-1",
        level=1,
        paths=("docs/**", "scripts/finish-task.sh"),
        forbidden_paths=(".github/**", "cron_settings.json"),
    )
    _dispatch_without_matchers(monkeypatch, state, cap)
    snap = load_snapshot(state, "old-1")
    assert "matchers" not in snap.raw and guard_capability(snap) is snap.capability
    redispatch = registry.dispatch(
        state, cap, datetime.now(UTC)
    )  # the new code sees the same capability
    assert redispatch.outcome == "unchanged"
    base = ["scope-guard", "--task", "old-1", "--state", state, "--repo", repo.root]
    assert cli(*base, "docs/index.md", "scripts/finish-task.sh").code == 0
    res = cli(*base, "docs/x.md", ".GitHub/workflows/ci.yml", "cron_settings.json", "README.md")
    assert res.code == 1
    assert ".GitHub/workflows/ci.yml: forbidden by '.github/**'" in res.err
    assert "cron_settings.json: forbidden by 'cron_settings.json'" in res.err
    assert "README.md: outside allowed paths" in res.err


def test_scope_guard_in_scope_imports_no_pathspec(repo, taskfile, cli, state: Path) -> None:
    """In scope, scope-guard loads neither pathspec nor dataclasses, typing or tempfile."""
    assert cli("dispatch", taskfile(INCIDENT_TASK), "--state", state).code == 0
    code = (
        "import sys; from capdaemon.cli import main; "
        f"rc = main(['scope-guard', '--task', 'task-2360', '--state', {str(state)!r}, "
        f"'--repo', {str(repo.root)!r}, 'scripts/finish-task.sh', 'docs/../scripts/x', "
        "'--command', 'pytest -q > scripts/out.txt']); "
        "print(rc, ' '.join(sorted(sys.modules)))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    rc, *loaded = proc.stdout.split()
    assert rc == "1", proc.stderr  # scripts/x and scripts/out.txt are outside the scope
    proc = subprocess.run(
        [sys.executable, "-c", code.replace(", 'docs/../scripts/x', '--command', "
                                            "'pytest -q > scripts/out.txt'", "")],
        capture_output=True,
        text=True,
    )  # fmt: skip
    rc, *loaded = proc.stdout.split()
    assert rc == "0", proc.stderr
    heavy = {"pathspec", "dataclasses", "typing", "tempfile", "inspect", "capdaemon.audit"}
    assert not heavy & set(loaded)
