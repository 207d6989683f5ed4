"""Forge reads that gather one PR's immutable snapshot: files, modes, contents, commits, labels."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from capdaemon.forge.basemove import carried_compare
from capdaemon.forge.checks import Checks
from capdaemon.forge.convert import (
    COMMITS_CAP,
    COMPARE_MAX_FILES,
    FILES_CAP,
    Entry,
    _commit,
    _dt,
    _from_patch,
    _join,
    _login,
    _status,
    default_contents_for,
    log,
)
from capdaemon.forge.errors import (
    ForgeError,
    Incomplete,
    Invalid,
    NotFound,
    Transient,
)
from capdaemon.forge.pullfacts import PullFacts, facts_from_rest
from capdaemon.languages import wants_whole_files
from capdaemon.model import (
    MODE_SYMLINK,
    CheckRun,
    FileChange,
    LabelEvent,
    PRSnapshot,
)

if TYPE_CHECKING:
    from capdaemon.forge.files import Files
    from capdaemon.forge.protection import Protection
    from capdaemon.forge.session import Compared, ForgeSession

WHOLE_FILE_READS = 300  # comment-only candidates read whole per PR (two blob reads each)


class Snapshots:
    """Reads a PRSnapshot (complete, or marked incomplete)."""

    def __init__(
        self,
        session: ForgeSession,
        files: Files,
        checks: Checks,
        protection: Protection,
        listed_facts: Callable[[str, int], PullFacts | None] | None = None,
    ) -> None:
        self._http = session.http
        self._listed_facts = listed_facts
        self._caches = session.caches
        self._files = files
        self._checks = checks
        self._protection = protection

    def snapshot(
        self,
        repo: str,
        number: int,
        *,
        contents_for: Callable[[str], bool] | None = None,
        known_runs: tuple[str, Iterable[CheckRun]] | None = None,
    ) -> PRSnapshot:
        """A complete, immutable PRSnapshot, or one marked incomplete (caps, failed pages, modes).

        `known_runs` = (sha, check runs just read on it by `check_runs`): used instead of
        reading them again when the PR's head is that sha. The PR's own facts come from this
        tick's batch when it carried them (no read), else from one REST read of the PR; a
        second gathering (the head moved) always reads the PR again.
        Raises NotFound for a missing PR, RateLimited when the tick's wait budget is spent, and
        Incomplete when the PR itself, its checks, label events or policy cannot be read.
        """
        pick = contents_for or default_contents_for()
        known = (known_runs[0], tuple(known_runs[1])) if known_runs is not None else None
        listed = self._listed_facts(repo, number) if self._listed_facts else None
        snap, moved = self._gather(repo, number, pick, known, listed)
        if moved:
            snap, moved = self._gather(repo, number, pick, None)
        if moved:
            snap = dataclasses.replace(
                snap,
                files_complete=False,
                incomplete_reason=_join(snap.incomplete_reason, "head moved while gathering"),
            )
        log.info(
            "forge.snapshot",
            pr=snap.ref,
            head=snap.head_sha[:12],
            files=len(snap.files),
            commits=len(snap.commits),
            complete=snap.files_complete and snap.commits_complete,
            reason=snap.incomplete_reason,
        )
        return snap

    def _gather(
        self,
        repo: str,
        number: int,
        pick: Callable[[str], bool],
        known: tuple[str, tuple[CheckRun, ...]] | None = None,
        facts: PullFacts | None = None,
    ) -> tuple[PRSnapshot, bool]:
        """(the snapshot, whether the head moved while its unbound lists were read)."""
        pr = facts or facts_from_rest(self._http.get(f"/repos/{repo}/pulls/{number}"))
        head, base_sha, base_ref = pr.head_sha, pr.base_sha, pr.base_ref
        listed = self._listed(repo, number, pr)
        files = self._files_with_modes(repo, listed, base_sha, head, pick)
        label_events: tuple[LabelEvent, ...] = ()
        if pr.labels:  # events only matter for labels the PR carries now
            label_events = self._label_events(repo, number)
        if known is not None and known[0] == head:
            check_runs = known[1]
        else:
            check_runs = tuple(self._checks.check_runs(repo, head))
        policy = self._protection.policy_text(repo, base_ref)
        # the PR file/commit lists are not bound to a sha: make sure the head held still
        moved = not listed.sha_bound and self._head_moved(repo, number, head)
        snap = _snapshot(repo, number, pr, listed, files, label_events, check_runs, policy)
        return snap, moved

    def _head_moved(self, repo: str, number: int, head: str) -> bool:
        again = self._http.get(f"/repos/{repo}/pulls/{number}")
        return bool(again["head"]["sha"] != head)

    def _listed(self, repo: str, number: int, pr: PullFacts) -> _Listed:
        """The changed files and commits: one compare bound to both shas when it can list them
        all, else the PR's own (paged, unbound) lists; caps and failed pages are recorded."""
        head, base_sha = pr.head_sha, pr.base_sha
        n_files, n_commits = pr.changed_files, pr.commits
        listed = None
        if n_files <= COMPARE_MAX_FILES and n_commits <= COMMITS_CAP:
            listed = self._compared(repo, base_sha, head, n_files, n_commits)
        if listed is None:
            listed = self._paged(repo, number, base_sha, head)
        if len(listed.files) >= FILES_CAP or n_files > len(listed.files):
            listed.files_ok = False
            listed.reasons.append(
                f"file list truncated: {len(listed.files)} of {n_files} files listed "
                f"(GitHub lists at most {FILES_CAP})"
            )
        if n_commits > COMMITS_CAP or len(listed.commits) < n_commits:
            listed.commits_ok = False
            listed.reasons.append(
                f"commit list truncated: {len(listed.commits)} of {n_commits} commits listed "
                f"(GitHub lists at most {COMMITS_CAP})"
            )
        return listed

    def _compared(
        self, repo: str, base_sha: str, head: str, n_files: int, n_commits: int
    ) -> _Listed | None:
        """One call: files (≤300), commits (≤250), merge base — all bound to the two shas."""
        cmp = self._compare(repo, base_sha, head)
        if (
            cmp is not None
            and len(cmp["files"]) == n_files
            and len(cmp["commits"]) == n_commits == cmp["total_commits"]
        ):
            return _Listed(cmp["files"], cmp["commits"], cmp["merge_base"], sha_bound=True)
        return None

    def _paged(self, repo: str, number: int, base_sha: str, head: str) -> _Listed:
        """The PR's file and commit lists, every page (a failed page is a recorded reason)."""
        merge_base: str | None = None
        try:
            first = self._http.get(f"/repos/{repo}/compare/{base_sha}...{head}", {"per_page": 1})
            merge_base = (first.get("merge_base_commit") or {}).get("sha")
        except (NotFound, Incomplete, Transient, Invalid) as exc:
            log.warning("forge.merge_base_unavailable", pr=f"{repo}#{number}", error=str(exc))
        pulls = f"/repos/{repo}/pulls/{number}"
        files, files_ok = self._http.pages_partial(f"{pulls}/files")
        reasons = [] if files_ok else ["a page of the file list could not be read"]
        commits, commits_ok = self._http.pages_partial(f"{pulls}/commits")
        if not commits_ok:
            reasons.append("a page of the commit list could not be read")
        return _Listed(files, commits, merge_base, False, files_ok, commits_ok, reasons)

    def _files_with_modes(
        self, repo: str, listed: _Listed, base_sha: str, head: str, pick: Callable[[str], bool]
    ) -> list[FileChange]:
        """FileChanges with modes and picked contents (kept per sha pair when bound)."""
        bound_key = (repo, base_sha, head, pick)
        cached = self._caches.bound.get_(bound_key) if listed.sha_bound else None
        if cached is not None:  # same shas, same question: the answer cannot have changed
            return cached
        old_sha = listed.merge_base or base_sha
        files, modes_ok, why = self._file_changes(repo, listed.files, old_sha, head, pick)
        if listed.sha_bound and modes_ok:
            self._caches.bound.put(bound_key, files)
        if not modes_ok:
            listed.files_ok = False
            listed.reasons.append(why)
        return files

    def _compare(self, repo: str, base: str, head: str) -> Compared | None:
        key = (repo, base, head)
        caches = self._caches
        hit = caches.compare.get_(key) or carried_compare(
            base,
            head,
            lambda sha: caches.parents.get_((repo, sha)),
            lambda older, h: caches.compare.get_((repo, older, h)),
        )
        if hit is not None:
            caches.compare.put(key, hit)
            return hit
        try:
            data = self._http.get(f"/repos/{repo}/compare/{base}...{head}")
        except (NotFound, Invalid, Transient, Incomplete) as exc:
            log.warning("forge.compare_failed", repo=repo, error=str(exc))
            return None
        out: Compared = {
            "files": data.get("files") or [],
            "commits": data.get("commits") or [],
            "total_commits": int(data.get("total_commits", -1)),
            "merge_base": (data.get("merge_base_commit") or {}).get("sha"),
        }
        self._caches.compare.put(key, out)
        return out

    def _file_changes(
        self,
        repo: str,
        raw: list[dict[str, Any]],
        old_sha: str,
        new_sha: str,
        pick: Callable[[str], bool],
    ) -> tuple[list[FileChange], bool, str]:
        """FileChanges with modes from the trees at the merge base and the head (fail closed)."""
        old_paths = {
            f.get("previous_filename") or f["filename"] for f in raw if f["status"] != "added"
        }
        new_paths = {f["filename"] for f in raw if f["status"] != "removed"}
        wants = _TextPicker(pick)
        try:
            old = self._files.entries(repo, old_sha, old_paths, shared=True)
            new = self._files.entries(repo, new_sha, new_paths)
        except ForgeError as exc:
            log.warning("forge.modes_unavailable", repo=repo, error=str(exc))
            files = [self._change(f, None, None, None, None) for f in raw]
            return files, False, "file modes could not be read"
        ok, missing = True, []
        out = []
        for f in raw:
            change, problems = self._one_change(repo, f, old, new, wants)
            if problems:
                ok = False
                missing.extend(problems)
            out.append(change)
        why = (
            "file mode/content unknown for: "
            + ", ".join(missing[:5])
            + (" …" if len(missing) > 5 else "")
        )
        return out, ok, why

    def _one_change(
        self,
        repo: str,
        f: dict[str, Any],
        old: dict[str, Entry],
        new: dict[str, Entry],
        wants: _TextPicker,
    ) -> tuple[FileChange, list[str]]:
        """One file's FileChange, and what about it could not be read (empty when all could)."""
        missing = []
        path, status = f["filename"], f["status"]
        prev = f.get("previous_filename") or path
        o = old.get(prev) if status != "added" else None
        n = new.get(path) if status != "removed" else None
        if (status != "added" and o is None) or (status != "removed" and n is None):
            missing.append(path)
        base_text = head_text = None
        # A symlink's blob is its target: always read it, scope checks need it.
        link = n is not None and n[0] == MODE_SYMLINK
        if link or wants(f):
            try:
                patch = f.get("patch")
                base_text = self._text(repo, o, patch, "-", status == "removed")
                head_text = self._text(repo, n, patch, "+", status == "added")
            except ForgeError as exc:
                missing.append(f"{path} (content: {exc.status})")
        return self._change(f, o, n, base_text, head_text), missing

    def _text(
        self, repo: str, entry: Entry | None, patch: str | None, sign: str, whole: bool
    ) -> str | None:
        """A blob's text: rebuilt from the patch of a wholly added (`+`) or removed (`-`) file
        when that hashes to the blob, else read by sha; None for no blob (absent, submodule)."""
        if entry is None or entry[1] != "blob":
            return None
        text = _from_patch(patch, sign, entry[2]) if whole else None
        return text if text is not None else self._files.blob(repo, entry[2])

    @staticmethod
    def _change(
        f: dict[str, Any],
        o: Entry | None,
        n: Entry | None,
        base_text: str | None,
        head_text: str | None,
    ) -> FileChange:
        return FileChange(
            path=f["filename"],
            status=_status(f["status"]),
            previous_path=f.get("previous_filename"),
            old_mode=o[0] if o else None,
            new_mode=n[0] if n else None,
            additions=int(f.get("additions") or 0),
            deletions=int(f.get("deletions") or 0),
            patch=f.get("patch"),
            base_content=base_text,
            head_content=head_text,
        )

    def _label_events(self, repo: str, number: int) -> tuple[LabelEvent, ...]:
        items = self._http.pages(f"/repos/{repo}/issues/{number}/events")
        out = []
        for e in items:
            if e.get("event") in ("labeled", "unlabeled") and e.get("label"):
                at = _dt(e.get("created_at"))
                if at is not None:
                    out.append(
                        LabelEvent(
                            label=e["label"]["name"],
                            action=e["event"],
                            actor=_login(e.get("actor")),
                            at=at,
                        )
                    )
        return tuple(out)


@dataclass
class _Listed:
    """A PR's changed files and commits as GitHub listed them, and how complete they are."""

    files: list[dict[str, Any]]
    commits: list[dict[str, Any]]
    merge_base: str | None
    sha_bound: bool  # read by one compare of the two shas (so the head cannot have moved)
    files_ok: bool = True
    commits_ok: bool = True
    reasons: list[str] = field(default_factory=list)


def _snapshot(
    repo: str,
    number: int,
    pr: PullFacts,
    listed: _Listed,
    files: list[FileChange],
    label_events: tuple[LabelEvent, ...],
    check_runs: tuple[CheckRun, ...],
    policy: str | None,
) -> PRSnapshot:
    return PRSnapshot(
        repo=repo,
        number=number,
        base_ref=pr.base_ref,
        base_sha=pr.base_sha,
        head_sha=pr.head_sha,
        author=pr.author,
        head_ref=pr.head_ref,
        draft=pr.draft,
        title=pr.title,
        body=pr.body,
        labels=pr.labels,
        label_events=label_events,
        files=tuple(files),
        commits=tuple(_commit(c) for c in listed.commits),
        check_runs=check_runs,
        files_complete=listed.files_ok,
        commits_complete=listed.commits_ok,
        incomplete_reason="; ".join(listed.reasons) or None,
        mergeable=pr.mergeable,
        mergeable_state=pr.mergeable_state,
        state=pr.state,
        base_policy_text=policy,
    )


class _TextPicker:
    """Which listed files get their base/head texts read: `pick`'s paths always, and up to
    WHOLE_FILE_READS modified files per PR where the comment-only carve-out may apply (their
    patch looks like comment edits); past that the carve-out is refused, not paid for."""

    def __init__(self, pick: Callable[[str], bool]) -> None:
        self.pick = pick
        self.left = WHOLE_FILE_READS

    def __call__(self, f: dict[str, Any]) -> bool:
        path = f["filename"]
        if self.pick(path) or self.pick(f.get("previous_filename") or path):
            return True
        if self.left <= 0 or f["status"] != "modified":
            return False
        if wants_whole_files(path, f.get("patch")):
            self.left -= 1
            return True
        return False
