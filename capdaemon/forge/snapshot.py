"""Forge reads that gather one PR's immutable snapshot: files, modes, contents, commits, labels."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

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
    RateLimited,
    Transient,
)
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
    from capdaemon.forge.session import ForgeSession


class Snapshots:
    """Reads a PRSnapshot (complete, or marked incomplete)."""

    def __init__(
        self, session: ForgeSession, files: Files, checks: Checks, protection: Protection
    ) -> None:
        self._http = session.http
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
        reading them again when the PR's head is that sha.
        Raises NotFound for a missing PR, RateLimited when the tick's wait budget is spent, and
        Incomplete when the PR itself, its checks, label events or policy cannot be read.
        """
        pick = contents_for or default_contents_for()
        known = (known_runs[0], tuple(known_runs[1])) if known_runs is not None else None
        snap, moved = self._gather(repo, number, pick, known)
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
    ) -> tuple[PRSnapshot, bool]:
        pr = self._http.get(f"/repos/{repo}/pulls/{number}")
        head, base_sha, base_ref = pr["head"]["sha"], pr["base"]["sha"], pr["base"]["ref"]
        n_files = int(pr.get("changed_files") or 0)
        n_commits = int(pr.get("commits") or 0)
        reasons: list[str] = []
        files_ok = commits_ok = True
        raw_files: list[dict[str, Any]] | None = None
        raw_commits: list[dict[str, Any]] = []
        merge_base: str | None = None
        sha_bound = False

        if n_files <= COMPARE_MAX_FILES and n_commits <= COMMITS_CAP:
            # One call: files (≤300), commits (≤250), merge base — all bound to the two shas.
            cmp = self._compare(repo, base_sha, head)
            if (
                cmp is not None
                and len(cmp["files"]) == n_files
                and len(cmp["commits"]) == n_commits == cmp["total_commits"]
            ):
                raw_files, raw_commits, merge_base = cmp["files"], cmp["commits"], cmp["merge_base"]
                sha_bound = True
        if raw_files is None:
            try:
                first = self._http.get(
                    f"/repos/{repo}/compare/{base_sha}...{head}", {"per_page": 1}
                )
                merge_base = (first.get("merge_base_commit") or {}).get("sha")
            except (NotFound, Incomplete, Transient, Invalid) as exc:
                log.warning("forge.merge_base_unavailable", pr=f"{repo}#{number}", error=str(exc))
            raw_files, files_ok = self._http.pages_partial(f"/repos/{repo}/pulls/{number}/files")
            if not files_ok:
                reasons.append("a page of the file list could not be read")
            raw_commits, commits_ok = self._http.pages_partial(
                f"/repos/{repo}/pulls/{number}/commits"
            )
            if not commits_ok:
                reasons.append("a page of the commit list could not be read")
        if len(raw_files) >= FILES_CAP or n_files > len(raw_files):
            files_ok = False
            reasons.append(
                f"file list truncated: {len(raw_files)} of {n_files} files listed "
                f"(GitHub lists at most {FILES_CAP})"
            )
        if n_commits > COMMITS_CAP or len(raw_commits) < n_commits:
            commits_ok = False
            reasons.append(
                f"commit list truncated: {len(raw_commits)} of {n_commits} commits listed "
                f"(GitHub lists at most {COMMITS_CAP})"
            )

        bound_key = (repo, base_sha, head, pick)
        cached = self._caches.bound.get_(bound_key) if sha_bound else None
        if cached is not None:  # same shas, same question: the answer cannot have changed
            files, modes_ok, why = cached, True, ""
        else:
            files, modes_ok, why = self._file_changes(
                repo, raw_files, merge_base or base_sha, head, pick
            )
            if sha_bound and modes_ok:
                self._caches.bound.put(bound_key, files)
        if not modes_ok:
            files_ok = False
            reasons.append(why)

        labels = tuple(lb["name"] for lb in pr.get("labels") or ())
        label_events: tuple[LabelEvent, ...] = ()
        if labels:  # events only matter for labels the PR carries now
            label_events = self._label_events(repo, number)
        if known is not None and known[0] == head:
            check_runs = known[1]
        else:
            check_runs = tuple(self._checks.check_runs(repo, head))
        policy = self._protection.policy_this_tick(repo, base_ref)

        moved = False
        if (
            not sha_bound
        ):  # the PR file/commit lists are not bound to a sha: make sure the head held still
            again = self._http.get(f"/repos/{repo}/pulls/{number}")
            moved = again["head"]["sha"] != head
        snap = PRSnapshot(
            repo=repo,
            number=number,
            base_ref=base_ref,
            base_sha=base_sha,
            head_sha=head,
            author=_login(pr.get("user")),
            head_ref=pr["head"].get("ref", ""),
            draft=bool(pr.get("draft")),
            title=pr.get("title") or "",
            body=pr.get("body") or "",
            labels=labels,
            label_events=label_events,
            files=tuple(files),
            commits=tuple(_commit(c) for c in raw_commits),
            check_runs=check_runs,
            files_complete=files_ok,
            commits_complete=commits_ok,
            incomplete_reason="; ".join(reasons) or None,
            mergeable=pr.get("mergeable"),
            mergeable_state=pr.get("mergeable_state"),
            state=pr.get("state", "open"),
            base_policy_text=policy,
        )
        return snap, moved

    def _compare(self, repo: str, base: str, head: str) -> dict[str, Any] | None:
        key = (repo, base, head)
        hit = self._caches.compare.get_(key)
        if hit is not None:
            return hit
        try:
            data = self._http.get(f"/repos/{repo}/compare/{base}...{head}")
        except (NotFound, Invalid, Transient, Incomplete) as exc:
            log.warning("forge.compare_failed", repo=repo, error=str(exc))
            return None
        out = {
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
        try:
            old = self._files.entries(repo, old_sha, old_paths)
            new = self._files.entries(repo, new_sha, new_paths)
        except RateLimited:
            raise
        except ForgeError as exc:
            log.warning("forge.modes_unavailable", repo=repo, error=str(exc))
            files = [self._change(f, None, None, None, None) for f in raw]
            return files, False, "file modes could not be read"
        ok, missing = True, []
        out = []
        for f in raw:
            path, status = f["filename"], f["status"]
            prev = f.get("previous_filename") or path
            o = old.get(prev) if status != "added" else None
            n = new.get(path) if status != "removed" else None
            if (status != "added" and o is None) or (status != "removed" and n is None):
                ok = False
                missing.append(path)
            base_text = head_text = None
            # A symlink's blob is its target: always read it, scope checks need it.
            link = n is not None and n[0] == MODE_SYMLINK
            if pick(path) or pick(prev) or link:
                try:
                    patch = f.get("patch")
                    if o is not None and o[1] == "blob":
                        base_text = _from_patch(patch, "-", o[2]) if status == "removed" else None
                        if base_text is None:
                            base_text = self._files.blob(repo, o[2])
                    if n is not None and n[1] == "blob":
                        head_text = _from_patch(patch, "+", n[2]) if status == "added" else None
                        if head_text is None:
                            head_text = self._files.blob(repo, n[2])
                except RateLimited:
                    raise
                except ForgeError as exc:
                    ok = False
                    missing.append(f"{path} (content: {exc.status})")
            out.append(self._change(f, o, n, base_text, head_text))
        why = (
            "file mode/content unknown for: "
            + ", ".join(missing[:5])
            + (" …" if len(missing) > 5 else "")
        )
        return out, ok, why

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
