"""Pure scope checks: forbidden wins, case, look-alikes, `..`, renames, symlink targets, expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from capdaemon.capability.model import Capability, CapabilitySnapshot, ViolationKind
from capdaemon.capability.scope import (
    check_file_changes,
    check_path,
    check_paths,
    symlink_target,
)
from capdaemon.globs import PathError
from capdaemon.model import MODE_SUBMODULE, MODE_SYMLINK, FileChange, FileStatus

T0 = datetime(2026, 5, 2, 9, 0, tzinfo=UTC)
CAP = Capability(
    task_id="task-1",
    paths=("scripts/finish-task.sh", "memory/plans/**", "docs/**", ".github/README.md"),
    forbidden_paths=(".github/**", "memory/events/*.cron-*", "docs/secret/**"),
)


def snap(cap: Capability = CAP, ttl: int = 48) -> CapabilitySnapshot:
    return CapabilitySnapshot(cap, T0, T0 + timedelta(hours=ttl), "0" * 64)


def kinds(vs) -> list[str]:
    return [v.kind.value for v in vs]


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("scripts/finish-task.sh", None),
        ("memory/plans/bot-capability-system/plan.md", None),
        ("docs/guide.md", None),
        ("./scripts//finish-task.sh", None),
        ("scripts/../scripts/finish-task.sh", None),
        ("cron_settings.json", "not_allowed"),
        ("scripts/other.sh", "not_allowed"),
        ("docs/secret/key.txt", "forbidden"),  # forbidden wins over allowed docs/**
        (".github/README.md", "forbidden"),  # listed in paths, still forbidden
        (".github/workflows/x.yml", "forbidden"),
        (".GITHUB/workflows/x.yml", "forbidden"),  # case variant
        (".GitHub/Workflows/X.YML", "forbidden"),
        ("docs/SECRET/key.txt", "forbidden"),
        ("memory/events/daily.cron-1", "forbidden"),
        ("memory/events/DAILY.CRON-1", "forbidden"),
        ("dосs/secret/key.txt", "forbidden"),  # Cyrillic о and с fold onto docs/secret
        ("Scripts/finish-task.sh", "not_allowed"),  # allowed globs are not widened by case
        ("scripts/finish-task.SH", "not_allowed"),
        ("scripts/finish-tаsk.sh", "not_allowed"),  # Cyrillic а is not the allowed file
        ("../etc/passwd", "invalid_path"),
        ("scripts/../../x", "invalid_path"),
        ("/etc/passwd", "invalid_path"),
        ("C:/x", "invalid_path"),
        ("", "invalid_path"),
        ("a\x00b", "invalid_path"),
        (".git/hooks/pre-commit", "forbidden"),
        (".GIT/config", "forbidden"),
    ],
)
def test_check_path_table(path: str, kind: str | None) -> None:
    """One path against the capability: in scope (None) or the expected violation kind."""
    v = check_path(CAP, path)
    assert (v.kind.value if v else None) == kind


def test_forbidden_reason_names_the_pattern() -> None:
    """A forbidden path's violation names the glob that caught it."""
    v = check_path(CAP, ".GITHUB/workflows/x.yml")
    assert v is not None and v.pattern == ".github/**" and "forbidden" in v.line()


def test_legacy_allows_valid_paths_but_not_escapes() -> None:
    """A legacy capability allows any valid path but never `..` escapes or .git."""
    legacy = Capability(task_id="old", legacy=True)
    assert check_path(legacy, "anything/at/all.py") is None
    assert check_path(legacy, "../x").kind is ViolationKind.INVALID_PATH
    assert check_path(legacy, ".git/config").kind is ViolationKind.FORBIDDEN


def test_expiry_is_a_violation_at_now() -> None:
    """check_paths reports expiry from `now`, the boundary included."""
    s = snap(ttl=48)
    assert check_paths(s, ["scripts/finish-task.sh"], T0 + timedelta(hours=47, minutes=59)) == []
    assert kinds(check_paths(s, ["scripts/finish-task.sh"], T0 + timedelta(hours=48))) == [
        "expired"
    ]


@pytest.mark.parametrize(
    ("link", "target", "want"),
    [
        ("scripts/link", "finish-task.sh", "scripts/finish-task.sh"),
        ("scripts/link", "../cron_settings.json", "cron_settings.json"),
        ("link", "./a/./b", "a/b"),
        ("a/b/link", "../../.github/x", ".github/x"),
    ],
)
def test_symlink_target_resolution(link: str, target: str, want: str) -> None:
    """A link's target is resolved against the link's folder and normalised."""
    assert symlink_target(link, target) == want


@pytest.mark.parametrize("target", ["/etc/passwd", "../../x", "../.."])
def test_symlink_target_escape(target: str) -> None:
    """Absolute targets and targets climbing out of the repository are refused."""
    with pytest.raises(PathError):
        symlink_target("scripts/link", target)


def change(path: str, status: FileStatus = FileStatus.MODIFIED, **kw) -> FileChange:
    return FileChange(path=path, status=status, **kw)


def test_rename_out_of_allowed_into_forbidden() -> None:
    """A rename is checked on both sides: allowed → forbidden is a violation."""
    ch = change(".github/workflows/x.yml", FileStatus.RENAMED, previous_path="docs/x.yml")
    vs = check_file_changes(snap(), [ch], T0)
    assert [(v.subject, v.kind.value) for v in vs] == [(".github/workflows/x.yml", "forbidden")]


def test_rename_from_forbidden_into_allowed() -> None:
    """Renaming a forbidden file away deletes it: the old side is a violation too."""
    ch = change("docs/ci.yml", FileStatus.RENAMED, previous_path=".github/workflows/ci.yml")
    assert kinds(check_file_changes(snap(), [ch], T0)) == ["forbidden"]


def test_copy_source_is_checked() -> None:
    """A copy out of a forbidden file is reported (both paths of a copy are checked)."""
    ch = change("docs/copy.txt", FileStatus.COPIED, previous_path="docs/secret/key.txt")
    assert kinds(check_file_changes(snap(), [ch], T0)) == ["forbidden"]


def test_symlink_inside_allowed_folder_to_forbidden_file() -> None:
    """A symlink added under docs/ whose target is a forbidden file is a violation."""
    ch = change(
        "docs/link",
        FileStatus.ADDED,
        new_mode=MODE_SYMLINK,
        head_content="../.github/workflows/ci.yml",
    )
    vs = check_file_changes(snap(), [ch], T0)
    assert kinds(vs) == ["symlink_target"] and ".github/workflows/ci.yml" in vs[0].reason


def test_symlink_to_forbidden_folder() -> None:
    """A symlink to the folder `.github` is caught by `.github/**` (folder probe)."""
    ch = change("docs/gh", FileStatus.ADDED, new_mode=MODE_SYMLINK, head_content="../.github")
    assert kinds(check_file_changes(snap(), [ch], T0)) == ["symlink_target"]


def test_symlink_to_out_of_scope_and_outside() -> None:
    """Targets outside the allow-list, outside the repo, or unreadable all fail closed."""
    for target in ("../cron_settings.json", "../../../etc/passwd", "/etc/passwd", None):
        ch = change("docs/l", FileStatus.ADDED, new_mode=MODE_SYMLINK, head_content=target)
        assert kinds(check_file_changes(snap(), [ch], T0)) == ["symlink_target"], target


def test_symlink_in_scope_passes() -> None:
    """A symlink in an allowed folder pointing at an allowed file is fine."""
    ch = change("docs/l", FileStatus.ADDED, new_mode=MODE_SYMLINK, head_content="guide.md")
    assert check_file_changes(snap(), [ch], T0) == []


def test_deleted_symlink_is_a_plain_path() -> None:
    """Removing a symlink only checks its own path."""
    ch = change("docs/l", FileStatus.REMOVED, old_mode=MODE_SYMLINK)
    assert check_file_changes(snap(), [ch], T0) == []


def test_mode_change_and_submodule_paths_are_checked() -> None:
    """Mode-only changes and submodule gitlinks are paths like any other."""
    chs = [
        change("scripts/finish-task.sh", FileStatus.CHANGED, old_mode="100644", new_mode="100755"),
        change("vendor/lib", FileStatus.ADDED, new_mode=MODE_SUBMODULE),
        change(".github/hooks", FileStatus.CHANGED, old_mode="100644", new_mode="100755"),
    ]
    vs = check_file_changes(snap(), chs, T0)
    assert [(v.subject, v.kind.value) for v in vs] == [
        ("vendor/lib", "not_allowed"),
        (".github/hooks", "forbidden"),
    ]


def test_duplicates_reported_once() -> None:
    """The same path touched twice is reported once."""
    chs = [change("x.txt"), change("y.txt", FileStatus.RENAMED, previous_path="x.txt")]
    assert [v.subject for v in check_file_changes(snap(), chs, T0)] == ["x.txt", "y.txt"]
