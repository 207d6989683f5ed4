"""Links a PR to its task (Task-Id trailer or branch) and checks it against the capability (5.5)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from capdaemon.capability.model import (
    Capability,
    CapabilityError,
    CapabilitySnapshot,
    TamperedError,
    UnknownTaskError,
    Violation,
    ViolationKind,
)
from capdaemon.capability.scope import check_binding, check_file_changes
from capdaemon.classify.trailers import parse_trailers
from capdaemon.decide.tiers import Binding, PolicyBinding, bind_unlinked
from capdaemon.globs import GlobError, PathError, normalize_path
from capdaemon.model import PRSnapshot

TASK_TRAILER = "task-id"


def linked_tasks(snapshot: PRSnapshot, branch_pattern: str) -> tuple[str, ...]:
    """Task ids named by the commits' `Task-Id:` trailers and the head branch name, sorted."""
    found: set[str] = set()
    for commit in snapshot.commits:
        for key, value in parse_trailers(commit.message):
            if key.lower() == TASK_TRAILER and value.strip():
                found.add(value.strip())
    if branch_pattern:
        m = re.match(branch_pattern, snapshot.head_ref or "")
        if m and m.groupdict().get("task_id"):
            found.add(m.group("task_id"))
    return tuple(sorted(found))


@dataclass(frozen=True)
class CapabilityVerdict:
    """What the capability layer says about one PR head."""

    task_id: str | None
    snapshot_sha: str | None = None
    violations: tuple[Violation, ...] = ()
    merge_policy: str | None = None
    legacy: bool = False
    enforced: bool = False  # require_capability: violations are P0
    notes: tuple[str, ...] = field(default_factory=tuple)
    policy_reason: str = ""  # why `merge_policy`, when bound without a usable linked task

    @property
    def blocking(self) -> tuple[str, ...]:
        """One-line reasons that fail L1.C3 (only on a hard-wall repo)."""
        return tuple(v.line() for v in self.violations) if self.enforced else ()

    def to_dict(self) -> dict[str, object]:
        """JSON form for the audit entry."""
        return {
            "task_id": self.task_id,
            "snapshot_sha256": self.snapshot_sha,
            "violations": [v.to_dict() for v in self.violations],
            "merge_policy": self.merge_policy,
            "legacy": self.legacy,
            "enforced": self.enforced,
            **({"policy_reason": self.policy_reason} if self.policy_reason else {}),
        }


Loader = Callable[[str], CapabilitySnapshot]


def evaluate(
    snapshot: PRSnapshot,
    tasks: tuple[str, ...],
    load: Loader,
    *,
    require: bool,
    now: datetime,
) -> CapabilityVerdict:
    """Check the PR's author, head branch and changed paths against its linked capability.

    No task on a hard-wall repo → violation (no capability). Several different tasks →
    violation (ambiguous). Unknown or tampered snapshot, expiry, a path out of scope, an
    author or head branch the task is not bound to (`agents`/`branches`; unknown ones fail
    closed) → violations. A legacy task (dispatched with --allow-no-scope) passes.
    """
    if not tasks:
        v = Violation(
            ViolationKind.NO_CAPABILITY,
            snapshot.ref,
            "no task linked: this repository requires one; what passes: a `Task-Id: <task id>` "
            "trailer in the PR's commits, or a head branch the repository's "
            "task_branch_pattern names (by default `task/<task id>` or `agent/<task id>`), of a "
            "dispatched task",
        )
        return CapabilityVerdict(None, violations=(v,) if require else (), enforced=require)
    if len(tasks) > 1:
        v = Violation(
            ViolationKind.NO_CAPABILITY,
            snapshot.ref,
            f"the PR names several tasks: {', '.join(tasks)}; what passes: exactly one",
        )
        return CapabilityVerdict(tasks[0], violations=(v,), enforced=require)
    task = tasks[0]
    try:
        snap = load(task)
    except UnknownTaskError as exc:
        v = Violation(ViolationKind.NO_CAPABILITY, task, str(exc))
        return CapabilityVerdict(task, violations=(v,), enforced=require)
    except TamperedError as exc:
        v = Violation(ViolationKind.TAMPERED, task, f"capability snapshot tampered: {exc}")
        return CapabilityVerdict(task, violations=(v,), enforced=require)
    except CapabilityError as exc:
        v = Violation(ViolationKind.TAMPERED, task, f"capability snapshot unreadable: {exc}")
        return CapabilityVerdict(task, violations=(v,), enforced=require)
    violations = (
        *check_binding(snap.capability, snapshot.author, snapshot.head_ref),
        *check_file_changes(snap, snapshot.files, now),
    )
    return CapabilityVerdict(
        task,
        snapshot_sha=snap.sha256,
        violations=violations,
        merge_policy=snap.capability.merge_policy,
        legacy=snap.legacy,
        enforced=require,
    )


def capability_state(task: str | None, load: Loader, now: datetime) -> str:
    """A short fingerprint part for the task's capability: its hash and whether it expired."""
    if not task:
        return "-"
    try:
        snap = load(task)
    except CapabilityError as exc:
        return f"error:{type(exc).__name__}"
    return f"{snap.sha256}:{'expired' if snap.is_expired(now) else 'live'}"


def _binds(cap: Capability, author: str, head_ref: str) -> str | None:
    """Why the capability's `agents` or `branches` take in this author or head branch (None:
    they do not). A branch name that is not plain, or an unusable glob, binds (fail closed)."""
    if cap.legacy:
        return None
    if cap.agents and author.isascii() and author.lower() in cap.agents:
        return f"agents include {author}"
    if cap.branches and head_ref:
        try:
            ok = normalize_path(head_ref) != head_ref or cap.branch_globs.match(head_ref)
        except (PathError, GlobError):
            ok = True
        if ok:
            return f"branches match {head_ref}"
    return None


def bind_policy(
    snapshot: PRSnapshot,
    caps: Sequence[CapabilitySnapshot],
    store_error: str | None,
    own_tasks: Iterable[str],
    load: Loader,
    now: datetime,
) -> PolicyBinding:
    """The merge policy of a PR that links no usable task: `tiered`, or stricter where an
    active capability whose `agents`/`branches` take in its author/head branch, or an active
    task its author linked elsewhere (`own_tasks`), is stricter; `manual` when the store, or
    one of those tasks, cannot be read (capdaemon.decide.tiers.bind_unlinked)."""
    author, ref = snapshot.author or "", snapshot.head_ref or ""
    found: list[Binding] = []
    for snap in caps:
        why = None if snap.is_expired(now) else _binds(snap.capability, author, ref)
        if why:
            found.append(Binding(snap.task_id, snap.capability.merge_policy, why))
    errors = [store_error] if store_error else []
    for task in sorted(set(own_tasks)):
        try:
            own = load(task)
        except UnknownTaskError:
            continue  # never dispatched: binds nothing
        except CapabilityError as exc:
            errors.append(f"{task}: {exc}")
            continue
        if not own.is_expired(now):
            who = f"a task {author} linked" if author else "a task its author linked"
            found.append(Binding(task, own.capability.merge_policy, who))
    return bind_unlinked(found, "; ".join(errors)[:300] if errors else None)
