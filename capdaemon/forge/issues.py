"""Issues and comments the Forge writes, found again by their hidden markers (never twice)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from capdaemon.forge.convert import LABEL_COLOR, _dt, _login, log
from capdaemon.forge.errors import FORGE_FAILURES, Invalid, NotFound
from capdaemon.forge.markers import marker_key, parse_marker
from capdaemon.forge.overflow import fit_body
from capdaemon.forge.types import MarkedIssue
from capdaemon.state import canonical_json

if TYPE_CHECKING:
    from capdaemon.forge.session import ForgeSession


class Issues:
    """Marked issues (found by one scan per repo, then an index), comments and labels."""

    def __init__(self, session: ForgeSession) -> None:
        self._http = session.http
        self._identity = session.identity
        self._overflow = session.overflow
        self._memo = session.memo
        # marker index: (repo, marker_key) → issue number, built by one full scan per repo
        self._index: dict[tuple[str, str], int] = {}
        self._indexed: set[str] = set()
        # markers whose create reply was lost: GitHub may create the issue later, so an index
        # scanned meanwhile cannot vouch that it does not exist (rescanned until found)
        self._unsure: set[tuple[str, str]] = set()
        self._labels: dict[str, set[str]] = {}

    def marked_issues(
        self, repo: str, kind: str | None = None, state: str = "all"
    ) -> list[MarkedIssue]:
        """Issues we wrote (our login + a capdaemon marker), optionally of one marker kind."""
        params: dict[str, Any] = {"state": state, "sort": "created", "direction": "asc"}
        if not self._identity.as_app:
            params["creator"] = self._identity.login  # reliable for users; Apps filtered here
        items = self._http.pages(f"/repos/{repo}/issues", params)
        out = []
        for it in items:
            mi = self._marked(repo, it)
            if mi is None:
                continue
            self._index.setdefault((repo, marker_key(mi.marker)), mi.number)
            if kind is None or mi.marker.get("kind") == kind:
                out.append(mi)
        if state == "all":
            self._indexed.add(repo)
        return out

    def _marked(self, repo: str, it: dict[str, Any]) -> MarkedIssue | None:
        if "pull_request" in it or not self._identity.ours(_login(it.get("user"))):
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

    def find_issue(self, repo: str, marker: dict[str, Any]) -> MarkedIssue | None:
        """Our issue with the same marker kind+key (one scan per repo per Forge, then an index)."""
        key = marker_key(marker)
        if repo not in self._indexed:
            self.marked_issues(repo)
        number = self._index.get((repo, key))
        if number is None:
            return None
        try:
            it = self._http.get(f"/repos/{repo}/issues/{number}")
        except NotFound:
            self._index.pop((repo, key), None)
            return None
        self._saw(repo, it)
        mi = self._marked(repo, it)
        return mi if mi is not None and marker_key(mi.marker) == key else None

    def _ours_by_number(self, repo: str, number: int, marker: dict[str, Any]) -> MarkedIssue | None:
        """Issue `number` when we opened it (whatever its body says now), as if marked `marker`."""
        try:
            it = self._http.get(f"/repos/{repo}/issues/{number}")
        except NotFound:
            return None
        if "pull_request" in it or not self._identity.ours(_login(it.get("user"))):
            return None
        self._index[(repo, marker_key(marker))] = number
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
        text = fit_body(body, marker, self._overflow.path)
        key = (repo, marker_key(marker))
        if key in self._unsure:
            self._indexed.discard(repo)  # a lost create may have landed since the last scan
        cur = self.find_issue(repo, marker)
        if cur is None and number is not None:
            cur = self._ours_by_number(repo, number, marker)
        if cur is None:
            return self._create(repo, marker, title, text, labels)
        self._unsure.discard(key)
        return self._update(cur, title, text, labels, reopen)

    def _create(
        self, repo: str, marker: dict[str, Any], title: str, text: str, labels: list[str]
    ) -> MarkedIssue:
        key = (repo, marker_key(marker))
        self.ensure_repo_labels(repo, labels)
        try:
            _, it = self._http.req(
                "POST",
                f"/repos/{repo}/issues",
                body={"title": title, "body": text, "labels": labels},
            )
        except FORGE_FAILURES:
            # the reply was lost or refused: GitHub may still have created the issue, so the
            # marker index is no longer complete — rescan before the next create (no duplicate)
            self._indexed.discard(repo)
            self._unsure.add(key)
            raise
        self._saw(repo, it)
        mi = self._marked(repo, it)
        assert mi is not None
        self._unsure.discard(key)
        self._index[key] = mi.number
        log.info(
            "forge.write", op="create_issue", repo=repo, number=mi.number, kind=marker.get("kind")
        )
        return mi

    def _update(
        self, cur: MarkedIssue, title: str, text: str, labels: list[str], reopen: bool
    ) -> MarkedIssue:
        """Bring title, body and state to what is wanted; add the labels it lacks."""
        repo = cur.repo
        patch: dict[str, Any] = {}
        if cur.title != title:
            patch["title"] = title
        if cur.body != text:
            patch["body"] = text
        if reopen and cur.state != "open":
            patch["state"] = "open"
        result = cur
        if patch:
            _, it = self._http.req("PATCH", f"/repos/{repo}/issues/{cur.number}", body=patch)
            self._saw(repo, it)
            result = self._marked(repo, it) or cur
            log.info(
                "forge.write", op="update_issue", repo=repo, number=cur.number, fields=sorted(patch)
            )
        missing = [lb for lb in labels if lb not in result.labels]
        if missing:
            self.ensure_repo_labels(repo, missing)
            _, data = self._http.req(
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
        state = self._memo.issue_states.get((repo, number))
        if state is None:  # not read or written this tick
            state = str(self._http.get(f"/repos/{repo}/issues/{number}").get("state"))
        if state != "closed":
            _, it = self._http.req(
                "PATCH",
                f"/repos/{repo}/issues/{number}",
                body={"state": "closed", "state_reason": "completed"},
            )
            self._saw(repo, it)
            log.info("forge.write", op="close_issue", repo=repo, number=number)
            wrote = True
        return wrote

    def _saw(self, repo: str, it: Any) -> None:
        """Keep an issue's state as GitHub just answered it, for the rest of this tick."""
        if isinstance(it, dict) and isinstance(it.get("number"), int):
            self._memo.issue_states[(repo, it["number"])] = str(it.get("state"))

    def comment_once(self, repo: str, number: int, marker: dict[str, Any], body: str) -> bool:
        """Post `body` unless one of our comments carries an equal marker; True when posted.

        Our comments' markers are read once a tick per issue; what we post is added to them
        (one writer under the tick lock), so a second comment in the same tick reads nothing.
        A post whose answer was lost forgets them: the next one reads the comments again."""
        want = canonical_json(dict(marker))
        key = (repo, number)
        mine = self._memo.our_comments.get(key)
        if mine is None:
            mine = set()
            for c in self._http.pages(f"/repos/{repo}/issues/{number}/comments"):
                if self._identity.ours(_login(c.get("user"))):
                    m = parse_marker(c.get("body"))
                    if m is not None:
                        mine.add(canonical_json(m))
            self._memo.our_comments[key] = mine
        if want in mine:
            log.info("forge.write", op="comment", repo=repo, number=number, noop=True)
            return False
        try:
            self._http.req(
                "POST",
                f"/repos/{repo}/issues/{number}/comments",
                body={"body": fit_body(body, marker, self._overflow.path)},
            )
        except BaseException:
            self._memo.our_comments.pop(key, None)
            raise
        mine.add(want)
        log.info("forge.write", op="comment", repo=repo, number=number, kind=marker.get("kind"))
        return True

    def add_labels(self, repo: str, number: int, labels: Iterable[str]) -> bool:
        """Add the labels the issue/PR lacks (created in the repo if needed); False if none."""
        it = self._http.get(f"/repos/{repo}/issues/{number}")
        have = {lb["name"] for lb in it.get("labels") or ()}
        missing = [lb for lb in dict.fromkeys(labels) if lb not in have]
        if not missing:
            return False
        self.ensure_repo_labels(repo, missing)
        self._http.req("POST", f"/repos/{repo}/issues/{number}/labels", body={"labels": missing})
        log.info("forge.write", op="add_labels", repo=repo, number=number, labels=missing)
        return True

    def remove_label(self, repo: str, number: int, label: str) -> bool:
        """Remove a label if present; False when it was not there."""
        it = self._http.get(f"/repos/{repo}/issues/{number}")
        if label not in {lb["name"] for lb in it.get("labels") or ()}:
            return False
        try:
            self._http.req(
                "DELETE", f"/repos/{repo}/issues/{number}/labels/{quote(label, safe='')}"
            )
        except NotFound:
            return False
        log.info("forge.write", op="remove_label", repo=repo, number=number, label=label)
        return True

    def ensure_repo_labels(self, repo: str, labels: Iterable[str]) -> None:
        labels = list(labels)
        if not labels:
            return
        known = self._labels.get(repo)
        if known is None or any(lb not in known for lb in labels):
            known = {lb["name"] for lb in self._http.pages(f"/repos/{repo}/labels")}
            self._labels[repo] = known
        for lb in labels:
            if lb in known:
                continue
            try:
                self._http.req(
                    "POST", f"/repos/{repo}/labels", body={"name": lb, "color": LABEL_COLOR}
                )
                log.info("forge.write", op="create_label", repo=repo, label=lb)
            except Invalid:  # already exists (created meanwhile)
                pass
            known.add(lb)
