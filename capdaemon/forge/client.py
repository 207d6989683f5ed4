"""Forge: the only PyGithub user — gathers PR snapshots and makes idempotent, marked writes."""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import requests
import structlog
from github import Auth, Github, GithubException, GithubIntegration

from capdaemon.config import DEFAULT_SOURCE_ROOT, GitHubConfig
from capdaemon.forge.auth import InstallationTokenAuth
from capdaemon.forge.errors import (
    Forbidden,
    ForgeError,
    HeadMoved,
    Incomplete,
    Invalid,
    NotFound,
    NotMergeable,
    RateLimited,
    RevertConflict,
    Transient,
)
from capdaemon.forge.markers import marker_key, parse_marker, with_marker
from capdaemon.forge.scrub import Scrubber
from capdaemon.forge.transport import Clock, Sleeper, Transport, WaitBudget, utc_now
from capdaemon.forge.types import (
    Comment,
    IssueActivity,
    MarkedIssue,
    PRStatus,
    PRSummary,
    Reaction,
)
from capdaemon.globs import GlobSet
from capdaemon.model import (
    MODE_SYMLINK,
    CheckRun,
    Commit,
    FileChange,
    FileStatus,
    LabelEvent,
    PRSnapshot,
)
from capdaemon.state import canonical_json

log = structlog.get_logger(__name__)

CHECK_NAME = "L1.C3"
POLICY_FILE = ".capdaemon.yml"
FILES_CAP = 3000  # GitHub lists at most 3,000 files of a PR
COMMITS_CAP = 250  # ... and at most 250 commits
COMPARE_MAX_FILES = 300  # the compare API returns at most 300 files
CONTENT_MAX_BYTES = 2 * 1024 * 1024
POLICY_TTL = timedelta(seconds=60)
DEFAULT_CONTENT_GLOBS: tuple[str, ...] = (
    "config/**/*.yml",
    "config/**/*.yaml",
    "config/**/*.json",
    "config/**/*.toml",
    f"{DEFAULT_SOURCE_ROOT}/**",
)
USER_AGENT = "capdaemon/0.1 (+PyGithub)"
LABEL_COLOR = "ededed"

T = TypeVar("T")
Entry = tuple[str, str, str]  # (mode, type, sha) of a tree entry


@functools.lru_cache(maxsize=8)
def default_contents_for(globs: tuple[str, ...] = DEFAULT_CONTENT_GLOBS) -> Callable[[str], bool]:
    """Which changed files get base/head content: config files and the bot's source root."""
    return GlobSet.of(globs).match


def _dt(value: Any) -> datetime | None:
    if not value:
        return None
    d = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if d.tzinfo is None:
        raise ValueError(f"naive timestamp from GitHub: {value!r}")
    return d


def _login(obj: Any) -> str:
    return (obj or {}).get("login") or ""


def _next_link(link: str | None) -> str | None:
    if not link:
        return None
    for part in link.split(","):
        section = part.split(";")
        if len(section) >= 2 and 'rel="next"' in section[1].strip():
            return section[0].strip().strip("<>")
    return None


def _status(value: str) -> FileStatus:
    try:
        return FileStatus(value)
    except ValueError:
        return FileStatus.CHANGED  # unknown kinds of change are treated as type/mode changes


def _decode(content_b64: str | None) -> str | None:
    if content_b64 is None:
        return None
    raw = base64.b64decode(content_b64)
    if len(raw) > CONTENT_MAX_BYTES:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


_MISS: Any = object()


class _Lru(OrderedDict[Any, Any]):
    """A tiny LRU for immutable (content-addressed) results (safe across gather threads)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self._lock = threading.Lock()

    def get_(self, key: Any, default: Any = None) -> Any:
        with self._lock:
            try:
                self.move_to_end(key)
            except KeyError:
                return default
            return self[key]

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self[key] = value
            self.move_to_end(key)
            while len(self) > self.size:
                self.popitem(last=False)


class Forge:
    """The GitHub adapter: immutable snapshots in, idempotent marked writes out."""

    def __init__(
        self,
        gh: Github,
        transport: Transport,
        *,
        scrubber: Scrubber,
        clock: Clock,
        app_id: int | None = None,
        integration: GithubIntegration | None = None,
        installation_auth: InstallationTokenAuth | None = None,
        login: str | None = None,
    ) -> None:
        self._gh = gh
        self._rq = gh.requester
        # PyGithub's Requester is not safe for concurrent requests (its one connection object
        # keeps the verb/url/headers of the request being built between two calls), so each
        # concurrent request borrows a Requester of its own; all share the Transport (ETag
        # cache, retries, rate limits, counters) and the auth, so a 304 is a 304 whichever
        # thread asks.
        self._free: list[Any] = [self._rq]
        self._all_rq: list[Any] = [self._rq]
        self._rq_lock = threading.Lock()
        self.transport = transport
        self.scrubber = scrubber
        self.clock = clock
        self.app_id = app_id
        self._integration = integration
        self.installation_auth = installation_auth
        self._login = login
        self._app_slug: str | None = None
        self._lock = threading.RLock()
        # content-addressed caches: never stale
        self._compare_cache = _Lru(128)
        self._tree_cache = _Lru(16)
        self._subtree_cache = _Lru(512)
        self._blob_cache = _Lru(512)
        self._bound_cache = _Lru(1024)  # (repo, base, head, picker) → FileChanges with modes
        self._sha_cache = _Lru(1024)  # (kind, repo, sha) → facts about an immutable commit
        # marker index: (repo, marker_key) → issue number, built by one full scan per repo
        self._issue_index: dict[tuple[str, str], int] = {}
        self._indexed: set[str] = set()
        self._labels: dict[str, set[str]] = {}
        # .capdaemon.yml per (repo, base ref), remembered for one tick (a minute at most)
        self._policy_seen: dict[tuple[str, str], tuple[str | None, datetime]] = {}

    # ================================================================ construction
    @classmethod
    def from_config(
        cls,
        gh: GitHubConfig,
        *,
        token: str | None = None,
        key_pem: bytes | None = None,
        clock: Clock | None = None,
        sleep: Sleeper | None = None,
        write_interval: float = 1.0,
        attempts: int = 4,
        timeout: int = 30,
    ) -> Forge:
        """Build from config: as an App installation when app_id and a key are given, else a token.

        The token defaults to the variable `gh.token_env`; the key to `gh.private_key_file`.
        `sleep` and `clock` are injectable (tests pass a recording sleeper); `write_interval`
        paces writes (GitHub asks for about one write a second).
        """
        clock = clock if clock is not None else utc_now
        scrubber = Scrubber()
        budget = WaitBudget(gh.per_tick_wait_seconds)
        transport = Transport(
            budget=budget,
            sleep=sleep if sleep is not None else _real_sleep,
            clock=clock,
            scrubber=scrubber,
            attempts=attempts,
            write_interval=write_interval,
        )
        base_url = gh.base_url.rstrip("/")
        common: dict[str, Any] = {
            "base_url": base_url,
            "timeout": timeout,
            "user_agent": USER_AGENT,
            "per_page": 100,
            "retry": None,  # retries live in our Transport only
            "seconds_between_requests": None,
            "seconds_between_writes": None,
        }
        if gh.app_id is not None and (key_pem is not None or gh.private_key_file):
            if key_pem is None:
                assert gh.private_key_file is not None
                key_pem = Path(gh.private_key_file).read_bytes()
            key_text = key_pem.decode("utf-8") if isinstance(key_pem, bytes) else str(key_pem)
            scrubber.add(key_text)
            app_auth = Auth.AppAuth(gh.app_id, key_text)
            integration = GithubIntegration(auth=app_auth, **common)
            _mount(integration.requester, transport)
            installation_id = gh.installation_id
            if installation_id is None:
                installation_id = _only_installation(integration, scrubber)
            inst_auth = InstallationTokenAuth(
                integration, installation_id, clock=clock, scrubber=scrubber
            )
            client = Github(auth=inst_auth, **common)
            _mount(client.requester, transport)
            return cls(
                client,
                transport,
                scrubber=scrubber,
                clock=clock,
                app_id=gh.app_id,
                integration=integration,
                installation_auth=inst_auth,
            )
        if token is None:
            token = os.environ.get(gh.token_env) or None
        if not token:
            raise ForgeError(
                f"no GitHub credentials: set github.app_id + private_key_file, "
                f"or the {gh.token_env} variable"
            )
        scrubber.add(token)
        client = Github(auth=Auth.Token(token), **common)
        _mount(client.requester, transport)
        return cls(client, transport, scrubber=scrubber, clock=clock)

    def close(self) -> None:
        """Close HTTP connections."""
        self._gh.close()
        for rq in self._all_rq[1:]:
            rq.close()

    @contextmanager
    def _requester(self) -> Iterator[Any]:
        """A Requester for this one request (reads may run in several threads at once)."""
        with self._rq_lock:
            rq = self._free.pop() if self._free else None
        if rq is None:
            rq = self._rq.withAuth(self._rq.auth)
            _mount(rq, self.transport)
            with self._rq_lock:
                self._all_rq.append(rq)
        try:
            yield rq
        finally:
            with self._rq_lock:
                self._free.append(rq)

    # ================================================================ identity, budget
    @property
    def as_app(self) -> bool:
        """True as a GitHub App installation (check runs), False with a token (statuses)."""
        return self.installation_auth is not None

    @property
    def login(self) -> str:
        """Who we act as: `<app-slug>[bot]` for an App, the token's user login otherwise."""
        if self._login is None:
            if self._integration is not None:
                with self._errors("GET /app"):
                    app = self._integration.get_app()
                self._app_slug = app.slug
                self._login = f"{app.slug}[bot]"
            else:
                _, data = self._req("GET", "/user")
                self._login = data["login"]
        return self._login

    @property
    def app_slug(self) -> str | None:
        """The App's slug (None with a token)."""
        if self._integration is not None and self._app_slug is None:
            _ = self.login
        return self._app_slug

    @property
    def budget(self) -> WaitBudget:
        """This tick's wait budget."""
        return self.transport.budget

    def new_tick(self) -> None:
        """Call at the start of each tick: resets the wait budget and per-tick negative caches."""
        self.transport.budget.reset()
        self._policy_seen.clear()

    def rate_budget(self) -> dict[str, Any]:
        """The last primary rate-limit figures plus this tick's wait budget, for tick metrics."""
        r = self.transport.rate
        reset = datetime.fromtimestamp(r.reset, tz=UTC) if r.reset else None
        return {
            "remaining": r.remaining,
            "limit": r.limit,
            "used": r.used,
            "reset": reset.isoformat() if reset else None,
            "wait_budget_left": round(self.transport.budget.remaining, 3),
            "wait_spent": round(self.transport.budget.spent, 3),
            "requests": self.transport.stats.sent,
            "not_modified": self.transport.stats.not_modified,
        }

    # ================================================================ HTTP helpers
    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except ForgeError:
            raise
        except GithubException as exc:
            raise self._translate(exc, what) from None
        except requests.RequestException as exc:
            raise Transient(self.scrubber.scrub(f"GitHub {what}: {type(exc).__name__}")) from None

    def _translate(self, exc: GithubException, what: str) -> ForgeError:
        status = exc.status
        message = ""
        if isinstance(exc.data, dict):
            message = str(exc.data.get("message", ""))
        text = self.scrubber.scrub(f"GitHub {what}: {status} {message}".strip())
        kind: type[ForgeError]
        if status == 404:
            kind = NotFound
        elif status == 409:
            kind = HeadMoved
        elif status == 405:
            kind = NotMergeable
        elif status in (401, 403):
            if status == 401 and self.installation_auth is not None:
                self.installation_auth.invalidate()
            kind = Forbidden
        elif status == 422:
            kind = Invalid
        elif status is not None and status >= 500:
            kind = Transient
        else:
            kind = ForgeError
        return kind(text, status=status)

    def _req(
        self, verb: str, url: str, *, params: dict[str, Any] | None = None, body: Any = None
    ) -> tuple[dict[str, Any], Any]:
        with self._errors(f"{verb} {url.split('?')[0]}"), self._requester() as rq:
            return rq.requestJsonAndCheck(verb, url, parameters=params, input=body)

    def _get(self, url: str, params: dict[str, Any] | None = None) -> Any:
        return self._req("GET", url, params=params)[1]

    def _pages(
        self,
        url: str,
        params: dict[str, Any] | None = None,
        *,
        key: str | None = None,
        limit: int | None = None,
    ) -> list[Any]:
        """Every item of a paginated list (per_page=100); any failed page raises (ForgeError)."""
        items, _ = self._pages_partial(url, params, key=key, limit=limit, strict=True)
        return items

    def _pages_partial(
        self,
        url: str,
        params: dict[str, Any] | None = None,
        *,
        key: str | None = None,
        limit: int | None = None,
        strict: bool = False,
    ) -> tuple[list[Any], bool]:
        """(items, all read). A failed later page ends the walk with False (raises if strict)."""
        p = {"per_page": 100, **(params or {})}
        headers, data = self._req("GET", url, params=p)
        items = list(data[key] if key else data)
        nxt = _next_link(headers.get("link"))
        while nxt and (limit is None or len(items) < limit):
            try:
                headers, data = self._req("GET", nxt)
            except RateLimited:
                raise
            except ForgeError as exc:
                if strict:
                    raise Incomplete(f"{exc} (a later page of {url})", status=exc.status) from None
                log.warning("forge.page_failed", url=url, error=str(exc))
                return items, False
            items.extend(data[key] if key else data)
            nxt = _next_link(headers.get("link"))
        return items, True

    # ================================================================ reads
    def list_open_prs(self, repo: str) -> list[PRSummary]:
        """All open PRs of `repo` (a failed page raises Incomplete: never a partial list)."""
        items = self._pages(
            f"/repos/{repo}/pulls", {"state": "open", "sort": "created", "direction": "asc"}
        )
        return [self._summary(repo, p) for p in items]

    def _summary(self, repo: str, p: dict[str, Any]) -> PRSummary:
        return PRSummary(
            repo=repo,
            number=int(p["number"]),
            head_sha=p["head"]["sha"],
            head_ref=p["head"].get("ref", ""),
            base_ref=p["base"].get("ref", ""),
            author=_login(p.get("user")),
            draft=bool(p.get("draft")),
            labels=tuple(lb["name"] for lb in p.get("labels") or ()),
            state=p.get("state", "open"),
            updated_at=_dt(p.get("updated_at")),
        )

    def pull_status(self, repo: str, number: int) -> PRStatus:
        """Open, merged (and at which merge commit) or closed: one ETag-cached GET of the PR."""
        p = self._get(f"/repos/{repo}/pulls/{number}")
        merged = bool(p.get("merged"))
        return PRStatus(
            repo=repo,
            number=int(p["number"]),
            state=str(p.get("state", "open")),
            merged=merged,
            merge_sha=p.get("merge_commit_sha") if merged else None,
            head_sha=p["head"]["sha"],
            mergeable=p.get("mergeable"),
        )

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
        pr = self._get(f"/repos/{repo}/pulls/{number}")
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
                first = self._get(f"/repos/{repo}/compare/{base_sha}...{head}", {"per_page": 1})
                merge_base = (first.get("merge_base_commit") or {}).get("sha")
            except (NotFound, Incomplete, Transient, Invalid) as exc:
                log.warning("forge.merge_base_unavailable", pr=f"{repo}#{number}", error=str(exc))
            raw_files, files_ok = self._pages_partial(f"/repos/{repo}/pulls/{number}/files")
            if not files_ok:
                reasons.append("a page of the file list could not be read")
            raw_commits, commits_ok = self._pages_partial(f"/repos/{repo}/pulls/{number}/commits")
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
        cached = self._bound_cache.get_(bound_key) if sha_bound else None
        if cached is not None:  # same shas, same question: the answer cannot have changed
            files, modes_ok, why = cached, True, ""
        else:
            files, modes_ok, why = self._file_changes(
                repo, raw_files, merge_base or base_sha, head, pick
            )
            if sha_bound and modes_ok:
                self._bound_cache.put(bound_key, files)
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
            check_runs = tuple(self._check_runs(repo, head))
        policy = self._policy(repo, base_ref)

        moved = False
        if (
            not sha_bound
        ):  # the PR file/commit lists are not bound to a sha: make sure the head held still
            again = self._get(f"/repos/{repo}/pulls/{number}")
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
        hit = self._compare_cache.get_(key)
        if hit is not None:
            return hit
        try:
            data = self._get(f"/repos/{repo}/compare/{base}...{head}")
        except (NotFound, Invalid, Transient, Incomplete) as exc:
            log.warning("forge.compare_failed", repo=repo, error=str(exc))
            return None
        out = {
            "files": data.get("files") or [],
            "commits": data.get("commits") or [],
            "total_commits": int(data.get("total_commits", -1)),
            "merge_base": (data.get("merge_base_commit") or {}).get("sha"),
        }
        self._compare_cache.put(key, out)
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
            old = self._entries(repo, old_sha, old_paths)
            new = self._entries(repo, new_sha, new_paths)
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
                            base_text = self._blob(repo, o[2])
                    if n is not None and n[1] == "blob":
                        head_text = _from_patch(patch, "+", n[2]) if status == "added" else None
                        if head_text is None:
                            head_text = self._blob(repo, n[2])
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

    def _entries(self, repo: str, commit_sha: str, paths: set[str]) -> dict[str, Entry]:
        """(mode, type, sha) of each of `paths` at a commit (absent paths left out).

        One recursive tree per commit (cached: a sha never changes); if GitHub truncates it (huge
        repos), walk only the directories on the changed paths, one non-recursive tree each.
        """
        if not paths:
            return {}
        key = (repo, commit_sha)
        index = self._tree_cache.get_(key)
        if index is None:
            data = self._get(f"/repos/{repo}/git/trees/{commit_sha}", {"recursive": "1"})
            if not data.get("truncated"):
                index = {
                    e["path"]: (e["mode"], e["type"], e["sha"])
                    for e in data.get("tree", ())
                    if e.get("type") != "tree"
                }
                self._tree_cache.put(key, index)
        if index is not None:
            return {p: index[p] for p in paths if p in index}
        return {p: e for p in paths if (e := self._walk(repo, commit_sha, p)) is not None}

    def _walk(self, repo: str, tree_ish: str, path: str) -> Entry | None:
        parts = path.split("/")
        cur = tree_ish
        for i, name in enumerate(parts):
            listing = self._subtree_cache.get_((repo, cur))
            if listing is None:
                data = self._get(f"/repos/{repo}/git/trees/{cur}")
                if data.get("truncated"):
                    raise Incomplete(f"tree {cur} of {repo} is truncated")
                listing = {
                    e["path"]: (e["mode"], e["type"], e["sha"]) for e in data.get("tree", ())
                }
                self._subtree_cache.put((repo, cur), listing)
            e = listing.get(name)
            if e is None:
                return None
            if i == len(parts) - 1:
                return e
            if e[1] != "tree":
                return None
            cur = e[2]
        return None

    def _blob(self, repo: str, sha: str) -> str | None:
        key = (repo, sha)
        hit = self._blob_cache.get_(key, _MISS)  # None is a valid answer (binary or too big)
        if hit is not _MISS:
            return hit
        data = self._get(f"/repos/{repo}/git/blobs/{sha}")
        text = (
            _decode(data.get("content"))
            if data.get("encoding", "base64") == "base64"
            else data.get("content")
        )
        self._blob_cache.put(key, text)
        return text

    def _label_events(self, repo: str, number: int) -> tuple[LabelEvent, ...]:
        items = self._pages(f"/repos/{repo}/issues/{number}/events")
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

    def _check_runs(self, repo: str, sha: str) -> list[CheckRun]:
        headers, data = self._req(
            "GET", f"/repos/{repo}/commits/{sha}/check-runs", params={"per_page": 100}
        )
        runs = list(data.get("check_runs") or [])
        nxt = _next_link(headers.get("link"))
        while nxt:
            headers, data = self._req("GET", nxt)
            runs.extend(data.get("check_runs") or [])
            nxt = _next_link(headers.get("link"))
        total = int(data.get("total_count", len(runs)))
        if total > len(runs):
            raise Incomplete(f"check runs of {repo}@{sha[:12]}: {len(runs)} of {total} listed")
        return [_check_run(r) for r in runs]

    def _policy(self, repo: str, base_ref: str) -> str | None:
        """`.capdaemon.yml` from the base branch, read once per repo and tick (then 304s)."""
        key = (repo, base_ref)
        seen = self._policy_seen.get(key)
        now = self.clock()
        if seen is not None and now - seen[1] < POLICY_TTL:
            return seen[0]
        try:
            text = self.read_file(repo, POLICY_FILE, base_ref, strict=True)
        except NotFound:
            text = None
        self._policy_seen[key] = (text, now)
        return text

    def read_file(self, repo: str, path: str, ref: str, *, strict: bool = False) -> str | None:
        """A file's text at `ref` (None when absent or binary; strict: absence raises NotFound)."""
        try:
            data = self._get(f"/repos/{repo}/contents/{quote(path)}", {"ref": ref})
        except NotFound:
            if strict:
                raise
            return None
        if not isinstance(data, dict) or data.get("type") not in ("file", "symlink", None):
            return None
        if data.get("content") is None and data.get("sha"):
            return self._blob(repo, data["sha"])
        return _decode(data.get("content"))

    def comments(self, repo: str, issue_no: int) -> list[Comment]:
        """All comments of an issue (every page), oldest first, with edit times."""
        items = self._pages(f"/repos/{repo}/issues/{issue_no}/comments")
        return [_comment(c) for c in items]

    def reactions(self, repo: str, issue_no: int) -> list[Reaction]:
        """All reactions on the issue itself (every page)."""
        items = self._pages(f"/repos/{repo}/issues/{issue_no}/reactions")
        out = []
        for r in items:
            at = _dt(r.get("created_at"))
            assert at is not None
            out.append(
                Reaction(
                    id=int(r["id"]), user=_login(r.get("user")), content=r["content"], created_at=at
                )
            )
        return out

    def issue_activity(self, repo: str, state: str = "open") -> dict[int, IssueActivity]:
        """Comment count, update time and reaction rollup of every issue of `repo` (no PRs).

        From the issue list: one request per 100 issues, 304s (not counted) when nothing
        changed. With a token only our own issues are listed (`creator`), as an App all.
        A failed page raises Incomplete: never a partial map.
        """
        params: dict[str, Any] = {"state": state, "sort": "created", "direction": "asc"}
        if not self.as_app:
            params["creator"] = self.login
        out: dict[int, IssueActivity] = {}
        for it in self._pages(f"/repos/{repo}/issues", params):
            if "pull_request" in it:
                continue
            rollup = it.get("reactions")
            reactions = None
            if isinstance(rollup, dict):
                reactions = tuple(
                    sorted(
                        (str(k), int(v))
                        for k, v in rollup.items()
                        if isinstance(v, int) and not isinstance(v, bool)
                    )
                )
            out[int(it["number"])] = IssueActivity(
                repo=repo,
                number=int(it["number"]),
                state=str(it.get("state", "open")),
                comments=int(it.get("comments") or 0),
                updated_at=_dt(it.get("updated_at")),
                reactions=reactions,
                body=it.get("body") if isinstance(it.get("body"), str) else None,
                title=it.get("title") if isinstance(it.get("title"), str) else None,
            )
        return out

    def permission(self, repo: str, login: str) -> str:
        """`admin`, `maintain`, `write`, `triage`, `read` or `none` for `login` on `repo`."""
        try:
            data = self._get(f"/repos/{repo}/collaborators/{quote(login, safe='')}/permission")
        except NotFound:
            return "none"
        return str(data.get("role_name") or data.get("permission") or "none")

    def collaborators(self, repo: str) -> list[tuple[str, str]] | None:
        """(login, role) of every collaborator of `repo`; None when GitHub does not let us
        list them (403/404: e.g. no push access, or a server without the endpoint)."""
        try:
            items = self._pages(f"/repos/{repo}/collaborators", {"affiliation": "all"})
        except (NotFound, Forbidden):
            return None
        out = []
        for c in items:
            role = c.get("role_name")
            if not role:
                perms = c.get("permissions") or {}
                role = next(
                    (
                        name
                        for key, name in (
                            ("admin", "admin"),
                            ("maintain", "maintain"),
                            ("push", "write"),
                            ("triage", "triage"),
                            ("pull", "read"),
                        )
                        if perms.get(key)
                    ),
                    "none",
                )
            out.append((_login(c), str(role)))
        return out

    def marked_issues(
        self, repo: str, kind: str | None = None, state: str = "all"
    ) -> list[MarkedIssue]:
        """Issues we wrote (our login + a capdaemon marker), optionally of one marker kind."""
        params: dict[str, Any] = {"state": state, "sort": "created", "direction": "asc"}
        if not self.as_app:
            params["creator"] = (
                self.login
            )  # a user login is a reliable filter; for Apps we filter here
        items = self._pages(f"/repos/{repo}/issues", params)
        out = []
        for it in items:
            mi = self._marked(repo, it)
            if mi is None:
                continue
            self._issue_index.setdefault((repo, marker_key(mi.marker)), mi.number)
            if kind is None or mi.marker.get("kind") == kind:
                out.append(mi)
        if state == "all":
            self._indexed.add(repo)
        return out

    def _ours(self, login: str) -> bool:
        return login.lower() == self.login.lower()

    def _marked(self, repo: str, it: dict[str, Any]) -> MarkedIssue | None:
        if "pull_request" in it or not self._ours(_login(it.get("user"))):
            return None
        marker = parse_marker(it.get("body"))
        if marker is None:
            return None
        return MarkedIssue(
            repo=repo,
            number=int(it["number"]),
            state=it.get("state", "open"),
            title=it.get("title") or "",
            body=it.get("body") or "",
            labels=tuple(lb["name"] for lb in it.get("labels") or ()),
            marker=marker,
            created_at=_dt(it.get("created_at")),
            closed_at=_dt(it.get("closed_at")),
            author=_login(it.get("user")),
        )

    def commit_checks(self, repo: str, sha: str) -> list[CheckRun]:
        """Check runs and (latest per context) commit statuses on `sha`; statuses have no App."""
        return self._check_runs(repo, sha) + self.commit_statuses(repo, sha)

    def check_runs(self, repo: str, sha: str) -> list[CheckRun]:
        """The check runs on `sha` only (what a PRSnapshot carries; no statuses)."""
        return self._check_runs(repo, sha)

    def commit_statuses(self, repo: str, sha: str) -> list[CheckRun]:
        """The latest commit status per context on `sha`, as CheckRuns without an App."""
        runs: list[CheckRun] = []
        data = self._get(f"/repos/{repo}/commits/{sha}/status", {"per_page": 100})
        for s in data.get("statuses") or ():
            state = s.get("state")
            runs.append(
                CheckRun(
                    name=s.get("context", ""),
                    status="in_progress" if state == "pending" else "completed",
                    conclusion=None
                    if state == "pending"
                    else ("success" if state == "success" else "failure"),
                    output_summary=s.get("description") or "",
                    started_at=_dt(s.get("created_at")),
                    completed_at=_dt(s.get("updated_at")),
                    id=s.get("id"),
                )
            )
        return runs

    def commit_parents(self, repo: str, sha: str) -> tuple[str, ...]:
        """The parent shas of a commit (immutable: served from the sha cache after one read)."""
        key = ("parents", repo, sha)
        cached = self._sha_cache.get_(key)
        if cached is not None:
            return cached
        data = self._get(f"/repos/{repo}/git/commits/{sha}")
        parents = tuple(str(p["sha"]) for p in data.get("parents") or ())
        self._sha_cache.put(key, parents)
        return parents

    def get_protection(self, repo: str, branch: str) -> dict[str, Any] | None:
        """The branch protection document, or None when the branch is not protected."""
        try:
            return self._get(f"/repos/{repo}/branches/{quote(branch, safe='')}/protection")
        except NotFound:
            return None

    # ================================================================ writes
    def publish_check(
        self,
        repo: str,
        head_sha: str,
        *,
        success: bool,
        title: str,
        summary: str,
        marker: dict[str, Any],
        name: str = CHECK_NAME,
        details_url: str | None = None,
    ) -> bool:
        """Publish L1.C3 on `head_sha` (a check run as an App, a commit status with a token).

        Returns False when the same conclusion and text are already there (no write).
        """
        conclusion = "success" if success else "failure"
        if not self.as_app:
            return self._publish_status(repo, head_sha, conclusion, title, name, details_url)
        text = with_marker(summary, marker)[:65000]
        out = {"title": title[:1000], "summary": text}
        app_id = self.app_id
        runs = self._pages(
            f"/repos/{repo}/commits/{head_sha}/check-runs", {"check_name": name}, key="check_runs"
        )
        mine = [
            r for r in runs if r.get("name") == name and (r.get("app") or {}).get("id") == app_id
        ]
        mine.sort(key=lambda r: int(r.get("id") or 0), reverse=True)
        if mine:
            cur = mine[0]
            co = cur.get("output") or {}
            if (
                cur.get("status") == "completed"
                and cur.get("conclusion") == conclusion
                and co.get("title") == out["title"]
                and co.get("summary") == out["summary"]
            ):
                log.info("forge.write", op="publish_check", repo=repo, sha=head_sha[:12], noop=True)
                return False
            body: dict[str, Any] = {
                "status": "completed",
                "conclusion": conclusion,
                "output": out,
                "completed_at": _iso(self.clock()),
            }
            if details_url:
                body["details_url"] = details_url
            self._req("PATCH", f"/repos/{repo}/check-runs/{cur['id']}", body=body)
        else:
            body = {
                "name": name,
                "head_sha": head_sha,
                "status": "completed",
                "conclusion": conclusion,
                "completed_at": _iso(self.clock()),
                "output": out,
            }
            if details_url:
                body["details_url"] = details_url
            self._req("POST", f"/repos/{repo}/check-runs", body=body)
        log.info(
            "forge.write", op="publish_check", repo=repo, sha=head_sha[:12], conclusion=conclusion
        )
        return True

    def _publish_status(
        self, repo: str, sha: str, conclusion: str, title: str, name: str, details_url: str | None
    ) -> bool:
        description = title[:140]
        statuses = self._get(f"/repos/{repo}/commits/{sha}/statuses", {"per_page": 100})
        for s in statuses:  # newest first
            if s.get("context") == name and self._ours(_login(s.get("creator"))):
                if s.get("state") == conclusion and (s.get("description") or "") == description:
                    log.info("forge.write", op="publish_status", repo=repo, sha=sha[:12], noop=True)
                    return False
                break
        body: dict[str, Any] = {"state": conclusion, "context": name, "description": description}
        if details_url:
            body["target_url"] = details_url
        self._req("POST", f"/repos/{repo}/statuses/{sha}", body=body)
        log.info("forge.write", op="publish_status", repo=repo, sha=sha[:12], conclusion=conclusion)
        return True

    def find_issue(self, repo: str, marker: dict[str, Any]) -> MarkedIssue | None:
        """Our issue with the same marker kind+key (one scan per repo per Forge, then an index)."""
        key = marker_key(marker)
        if repo not in self._indexed:
            self.marked_issues(repo)
        number = self._issue_index.get((repo, key))
        if number is None:
            return None
        try:
            it = self._get(f"/repos/{repo}/issues/{number}")
        except NotFound:
            self._issue_index.pop((repo, key), None)
            return None
        mi = self._marked(repo, it)
        return mi if mi is not None and marker_key(mi.marker) == key else None

    def _ours_by_number(self, repo: str, number: int, marker: dict[str, Any]) -> MarkedIssue | None:
        """Issue `number` when we opened it (whatever its body says now), as if marked `marker`."""
        try:
            it = self._get(f"/repos/{repo}/issues/{number}")
        except NotFound:
            return None
        if "pull_request" in it or not self._ours(_login(it.get("user"))):
            return None
        self._issue_index[(repo, marker_key(marker))] = number
        return MarkedIssue(
            repo=repo,
            number=number,
            state=it.get("state", "open"),
            title=it.get("title") or "",
            body=it.get("body") or "",
            labels=tuple(lb["name"] for lb in it.get("labels") or ()),
            marker=dict(marker),
            created_at=_dt(it.get("created_at")),
            closed_at=_dt(it.get("closed_at")),
            author=_login(it.get("user")),
        )

    def ensure_issue(
        self,
        repo: str,
        marker: dict[str, Any],
        title: str,
        body: str,
        labels: Iterable[str] = (),
        *,
        reopen: bool = False,
        number: int | None = None,
    ) -> MarkedIssue:
        """Create the issue for `marker` (kind+key), or update title/body, add missing labels.

        Labels are only added, never removed here (an owner's or the daemon's extra labels stay).
        A closed issue stays closed unless `reopen`. `number`: the issue the caller recorded for
        this marker; when it is still one of ours it is used even if someone rewrote its body
        and marker (so the body is restored instead of a duplicate being opened).
        """
        labels = list(dict.fromkeys(labels))
        text = with_marker(body, marker)
        cur = self.find_issue(repo, marker)
        if cur is None and number is not None:
            cur = self._ours_by_number(repo, number, marker)
        if cur is None:
            self._ensure_repo_labels(repo, labels)
            _, it = self._req(
                "POST",
                f"/repos/{repo}/issues",
                body={"title": title, "body": text, "labels": labels},
            )
            mi = self._marked(repo, it)
            assert mi is not None
            self._issue_index[(repo, marker_key(marker))] = mi.number
            log.info(
                "forge.write",
                op="create_issue",
                repo=repo,
                number=mi.number,
                kind=marker.get("kind"),
            )
            return mi
        patch: dict[str, Any] = {}
        if cur.title != title:
            patch["title"] = title
        if cur.body != text:
            patch["body"] = text
        if reopen and cur.state != "open":
            patch["state"] = "open"
        result = cur
        if patch:
            _, it = self._req("PATCH", f"/repos/{repo}/issues/{cur.number}", body=patch)
            result = self._marked(repo, it) or cur
            log.info(
                "forge.write", op="update_issue", repo=repo, number=cur.number, fields=sorted(patch)
            )
        missing = [lb for lb in labels if lb not in result.labels]
        if missing:
            self._ensure_repo_labels(repo, missing)
            _, data = self._req(
                "POST", f"/repos/{repo}/issues/{cur.number}/labels", body={"labels": missing}
            )
            result = dataclasses.replace(result, labels=tuple(lb["name"] for lb in data))
            log.info("forge.write", op="add_labels", repo=repo, number=cur.number, labels=missing)
        if not patch and not missing:
            log.info("forge.write", op="ensure_issue", repo=repo, number=cur.number, noop=True)
        return result

    def close_issue(self, repo: str, number: int, comment: str | None = None) -> bool:
        """Close an issue (optional one-time comment); False when already closed and commented."""
        wrote = False
        if comment:
            wrote = self.comment_once(
                repo, number, {"kind": "close", "issue": f"{repo}#{number}"}, comment
            )
        it = self._get(f"/repos/{repo}/issues/{number}")
        if it.get("state") != "closed":
            self._req(
                "PATCH",
                f"/repos/{repo}/issues/{number}",
                body={"state": "closed", "state_reason": "completed"},
            )
            log.info("forge.write", op="close_issue", repo=repo, number=number)
            wrote = True
        return wrote

    def comment_once(self, repo: str, number: int, marker: dict[str, Any], body: str) -> bool:
        """Post `body` unless one of our comments carries an equal marker; True when posted."""
        want = canonical_json(dict(marker))
        for c in self._pages(f"/repos/{repo}/issues/{number}/comments"):
            if self._ours(_login(c.get("user"))):
                m = parse_marker(c.get("body"))
                if m is not None and canonical_json(m) == want:
                    log.info("forge.write", op="comment", repo=repo, number=number, noop=True)
                    return False
        self._req(
            "POST",
            f"/repos/{repo}/issues/{number}/comments",
            body={"body": with_marker(body, marker)},
        )
        log.info("forge.write", op="comment", repo=repo, number=number, kind=marker.get("kind"))
        return True

    def add_labels(self, repo: str, number: int, labels: Iterable[str]) -> bool:
        """Add the labels the issue/PR lacks (created in the repo if needed); False if none."""
        it = self._get(f"/repos/{repo}/issues/{number}")
        have = {lb["name"] for lb in it.get("labels") or ()}
        missing = [lb for lb in dict.fromkeys(labels) if lb not in have]
        if not missing:
            return False
        self._ensure_repo_labels(repo, missing)
        self._req("POST", f"/repos/{repo}/issues/{number}/labels", body={"labels": missing})
        log.info("forge.write", op="add_labels", repo=repo, number=number, labels=missing)
        return True

    def remove_label(self, repo: str, number: int, label: str) -> bool:
        """Remove a label if present; False when it was not there."""
        it = self._get(f"/repos/{repo}/issues/{number}")
        if label not in {lb["name"] for lb in it.get("labels") or ()}:
            return False
        try:
            self._req("DELETE", f"/repos/{repo}/issues/{number}/labels/{quote(label, safe='')}")
        except NotFound:
            return False
        log.info("forge.write", op="remove_label", repo=repo, number=number, label=label)
        return True

    def _ensure_repo_labels(self, repo: str, labels: Iterable[str]) -> None:
        labels = list(labels)
        if not labels:
            return
        known = self._labels.get(repo)
        if known is None or any(lb not in known for lb in labels):
            known = {lb["name"] for lb in self._pages(f"/repos/{repo}/labels")}
            self._labels[repo] = known
        for lb in labels:
            if lb in known:
                continue
            try:
                self._req("POST", f"/repos/{repo}/labels", body={"name": lb, "color": LABEL_COLOR})
                log.info("forge.write", op="create_label", repo=repo, label=lb)
            except Invalid:  # already exists (created meanwhile)
                pass
            known.add(lb)

    def close_pr(self, repo: str, number: int, comment: str | None) -> bool:
        """Comment once and close the PR; False when it was already closed and commented."""
        wrote = False
        if comment:
            wrote = self.comment_once(
                repo, number, {"kind": "close-pr", "pr": f"{repo}#{number}"}, comment
            )
        pr = self._get(f"/repos/{repo}/pulls/{number}")
        if pr.get("state") != "closed":
            self._req("PATCH", f"/repos/{repo}/pulls/{number}", body={"state": "closed"})
            log.info("forge.write", op="close_pr", repo=repo, number=number)
            wrote = True
        return wrote

    def merge(self, repo: str, number: int, sha: str, method: str) -> str:
        """Merge at exactly `sha` with `method`; the merge commit's sha. HeadMoved if head moved.

        Idempotent: a PR already merged at `sha` returns its merge commit without a second merge.
        """
        pr = self._get(f"/repos/{repo}/pulls/{number}")
        if pr.get("merged"):
            if pr["head"]["sha"] != sha:
                raise HeadMoved(
                    f"{repo}#{number} was merged at {pr['head']['sha'][:12]}, not {sha[:12]}",
                    status=409,
                )
            return str(pr.get("merge_commit_sha"))
        if pr["head"]["sha"] != sha:
            raise HeadMoved(
                f"{repo}#{number} head is {pr['head']['sha'][:12]}, expected {sha[:12]}", status=409
            )
        try:
            _, data = self._req(
                "PUT",
                f"/repos/{repo}/pulls/{number}/merge",
                body={"sha": sha, "merge_method": method},
            )
        except NotMergeable:
            again = self._get(f"/repos/{repo}/pulls/{number}")  # a retried PUT after a lost reply
            if again.get("merged") and again["head"]["sha"] == sha:
                return str(again.get("merge_commit_sha"))
            raise
        log.info("forge.write", op="merge", repo=repo, number=number, sha=sha[:12], method=method)
        return str(data["sha"])

    def create_revert_pr(
        self, repo: str, merge_sha: str, base: str, *, title: str, body: str, label: str
    ) -> int:
        """Open (once) a PR reverting single-parent commit `merge_sha` on `base`; its number."""
        number, _ = self.open_revert_pr(repo, merge_sha, base, title=title, body=body, label=label)
        return number

    def open_revert_pr(
        self, repo: str, merge_sha: str, base: str, *, title: str, body: str, label: str
    ) -> tuple[int, str]:
        """Open (once) a PR reverting single-parent commit `merge_sha` on `base`.

        Returns (PR number, the revert commit sha the PR was opened with). The daemon trusts
        the bot's own `decision:auto-revert` label only at exactly that head. When the PR
        already existed (a retry after a crash), its head as listed now is returned.

        The revert tree is the parent's tree when `base` is still at `merge_sha`; else each path
        the commit changed is restored to its parent version, and RevertConflict is raised when such
        a path changed since (the revert does not apply cleanly) or the commit has several parents.
        """
        branch = f"capdaemon/revert-{merge_sha[:12]}"
        marker = {"kind": "revert", "key": f"{repo}@{merge_sha}"}
        owner = repo.split("/")[0]
        for p in self._pages(f"/repos/{repo}/pulls", {"state": "all", "head": f"{owner}:{branch}"}):
            if p["head"].get("ref") == branch and self._ours(_login(p.get("user"))):
                self.add_labels(repo, int(p["number"]), [label])
                return int(p["number"]), str(p["head"].get("sha") or "")
        commit_sha = self._ref_sha(repo, branch)
        if commit_sha is None:
            commit_sha = self._revert_commit(repo, merge_sha, base)
            try:
                self._req(
                    "POST",
                    f"/repos/{repo}/git/refs",
                    body={"ref": f"refs/heads/{branch}", "sha": commit_sha},
                )
            except Invalid:  # created meanwhile
                pass
        _, pr = self._req(
            "POST",
            f"/repos/{repo}/pulls",
            body={"title": title, "head": branch, "base": base, "body": with_marker(body, marker)},
        )
        number = int(pr["number"])
        self.add_labels(repo, number, [label])
        log.info(
            "forge.write", op="create_revert_pr", repo=repo, number=number, reverts=merge_sha[:12]
        )
        return number, commit_sha

    def _ref_sha(self, repo: str, branch: str) -> str | None:
        try:
            data = self._get(f"/repos/{repo}/git/ref/heads/{quote(branch, safe='/')}")
        except NotFound:
            return None
        return str(data["object"]["sha"])

    def _revert_commit(self, repo: str, merge_sha: str, base: str) -> str:
        m = self._get(f"/repos/{repo}/git/commits/{merge_sha}")
        parents = [p["sha"] for p in m.get("parents") or ()]
        if len(parents) != 1:
            raise RevertConflict(
                f"{merge_sha[:12]} has {len(parents)} parents; only single-parent commits revert"
            )
        parent = parents[0]
        base_head = self._ref_sha(repo, base)
        if base_head is None:
            raise NotFound(f"branch {base} of {repo} not found", status=404)
        if base_head == merge_sha:
            tree = self._get(f"/repos/{repo}/git/commits/{parent}")["tree"]["sha"]
        else:
            cmp = self._get(f"/repos/{repo}/compare/{parent}...{merge_sha}")
            changed = cmp.get("files") or []
            if len(changed) >= COMPARE_MAX_FILES:
                raise RevertConflict(
                    f"{merge_sha[:12]} changes {len(changed)}+ files; too many to revert per path"
                )
            paths = set()
            for f in changed:
                paths.add(f["filename"])
                if f.get("previous_filename"):
                    paths.add(f["previous_filename"])
            at_parent = self._entries(repo, parent, paths)
            at_merge = self._entries(repo, merge_sha, paths)
            at_base = self._entries(repo, base_head, paths)
            items: list[dict[str, Any]] = []
            for p in sorted(paths):
                if at_base.get(p) != at_merge.get(p):
                    raise RevertConflict(
                        f"revert of {merge_sha[:12]} does not apply cleanly: {p} changed since"
                    )
                want = at_parent.get(p)
                if want is None:
                    if p in at_base:
                        items.append(
                            {"path": p, "mode": at_base[p][0], "type": at_base[p][1], "sha": None}
                        )
                else:
                    items.append({"path": p, "mode": want[0], "type": want[1], "sha": want[2]})
            base_tree = self._get(f"/repos/{repo}/git/commits/{base_head}")["tree"]["sha"]
            _, t = self._req(
                "POST", f"/repos/{repo}/git/trees", body={"base_tree": base_tree, "tree": items}
            )
            tree = t["sha"]
        subject = (m.get("message") or "").splitlines()[0] if m.get("message") else merge_sha[:12]
        message = f'Revert "{subject}"\n\nThis reverts commit {merge_sha}.\n'
        _, c = self._req(
            "POST",
            f"/repos/{repo}/git/commits",
            body={"message": message, "tree": tree, "parents": [base_head]},
        )
        return str(c["sha"])

    def set_protection(
        self,
        repo: str,
        branch: str,
        check_name: str = CHECK_NAME,
        app_id: int | None = None,
        *,
        enforce_admins: bool = False,
    ) -> bool:
        """Require `check_name` (from `app_id`), PRs, no force pushes on `branch`; False if so."""
        cur = self.get_protection(repo, branch)
        if cur is not None and protection_ok(cur, check_name, app_id):
            return False
        checks: list[dict[str, Any]] = []
        strict = False
        if cur is not None:
            rsc = cur.get("required_status_checks") or {}
            strict = bool(rsc.get("strict"))
            for c in rsc.get("checks") or [{"context": ctx} for ctx in rsc.get("contexts") or ()]:
                if c.get("context") != check_name:
                    checks.append(
                        {k: v for k, v in c.items() if k in ("context", "app_id") and v is not None}
                    )
        mine: dict[str, Any] = {"context": check_name}
        if app_id is not None:
            mine["app_id"] = app_id
        checks.append(mine)
        body = {
            "required_status_checks": {"strict": strict, "checks": checks},
            "enforce_admins": enforce_admins,
            "required_pull_request_reviews": {"required_approving_review_count": 0},
            "restrictions": None,
            "allow_force_pushes": False,
            "allow_deletions": False,
        }
        self._req("PUT", f"/repos/{repo}/branches/{quote(branch, safe='')}/protection", body=body)
        log.info("forge.write", op="set_protection", repo=repo, branch=branch, check=check_name)
        return True


# ==================================================================== helpers
def protection_ok(prot: dict[str, Any], check_name: str, app_id: int | None) -> bool:
    """Does `prot` require `check_name` (from `app_id`) and PRs, and forbid force pushes?"""
    rsc = prot.get("required_status_checks") or {}
    checks = rsc.get("checks") or [{"context": c} for c in rsc.get("contexts") or ()]
    has_check = any(
        c.get("context") == check_name and (app_id is None or c.get("app_id") == app_id)
        for c in checks
    )
    force = prot.get("allow_force_pushes")
    force_on = bool(force.get("enabled")) if isinstance(force, dict) else bool(force)
    return has_check and not force_on and prot.get("required_pull_request_reviews") is not None


def git_blob_sha(data: bytes) -> str:
    """Git's object id of a blob with this content."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # git's id, not for security


def _from_patch(patch: str | None, sign: str, blob_sha: str) -> str | None:
    """The whole text of an added (`+`) or removed (`-`) file rebuilt from its patch.

    Only trusted when the rebuilt bytes hash to the blob sha git has for the file; else None
    (the caller fetches the blob). Saves a request per added config file.
    """
    if patch is None:
        return None
    lines: list[str] = []
    no_eol = False
    for line in patch.split("\n"):
        if line.startswith("@@"):
            continue
        if line.startswith("\\"):
            no_eol = True
            continue
        if line.startswith(sign):
            lines.append(line[1:])
        elif line:
            return None
    text = "\n".join(lines) + ("" if no_eol or not lines else "\n")
    try:
        ok = git_blob_sha(text.encode("utf-8")) == blob_sha
    except UnicodeEncodeError:
        return None
    return text if ok else None


def _iso(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _join(a: str | None, b: str) -> str:
    return f"{a}; {b}" if a else b


def _commit(c: dict[str, Any]) -> Commit:
    cm = c.get("commit") or {}
    a = cm.get("author") or {}
    k = cm.get("committer") or {}
    return Commit(
        sha=c["sha"],
        parents=tuple(p["sha"] for p in c.get("parents") or ()),
        message=cm.get("message") or "",
        author_name=a.get("name") or "",
        author_email=a.get("email") or "",
        authored_at=_dt(a.get("date")),
        committer_name=k.get("name") or "",
        committer_email=k.get("email") or "",
        committed_at=_dt(k.get("date")),
        author_login=_login(c.get("author")) or None,
        committer_login=_login(c.get("committer")) or None,
    )


def _check_run(r: dict[str, Any]) -> CheckRun:
    app = r.get("app") or {}
    out = r.get("output") or {}
    return CheckRun(
        name=r.get("name", ""),
        status=r.get("status", ""),
        conclusion=r.get("conclusion"),
        app_slug=app.get("slug"),
        app_id=app.get("id"),
        output_title=out.get("title") or "",
        output_summary=out.get("summary") or "",
        output_text=out.get("text") or "",
        started_at=_dt(r.get("started_at")),
        completed_at=_dt(r.get("completed_at")),
        id=r.get("id"),
    )


def _comment(c: dict[str, Any]) -> Comment:
    created = _dt(c.get("created_at"))
    assert created is not None
    return Comment(
        id=int(c["id"]),
        user=_login(c.get("user")),
        body=c.get("body") or "",
        created_at=created,
        updated_at=_dt(c.get("updated_at")) or created,
    )


def _real_sleep(seconds: float) -> None:
    import time

    time.sleep(seconds)


def _mount(requester: Any, transport: Transport) -> None:
    """Mount our Transport on every requests.Session this PyGithub Requester creates.

    PyGithub 2.x builds its session inside a connection class chosen per Requester; there is no
    public hook, so we wrap that (name-mangled) attribute of this one Requester only — no global
    injection, no change for other Requesters in the process.
    """
    attr = "_Requester__connectionClass"
    base_cls = getattr(requester, attr, None)
    if base_cls is None:
        raise ForgeError("unsupported PyGithub: Requester has no connection class to wrap")

    def factory(*args: Any, **kwargs: Any) -> Any:
        cnx = base_cls(*args, **kwargs)
        cnx.session.mount("http://", transport)
        cnx.session.mount("https://", transport)
        return cnx

    setattr(requester, attr, factory)


def _only_installation(integration: GithubIntegration, scrubber: Scrubber) -> int:
    try:
        ids = [i.id for i in integration.get_installations()]
    except GithubException as exc:
        raise ForgeError(
            scrubber.scrub(f"listing App installations failed: {exc.status}")
        ) from None
    if len(ids) != 1:
        raise ForgeError(f"the App has {len(ids)} installations; set github.installation_id")
    return ids[0]
