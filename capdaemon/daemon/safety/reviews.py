"""Random reviews: a deterministic share of auto-merged PRs gets a passive review issue."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from capdaemon.audit import AuditLog
from capdaemon.config import Config
from capdaemon.daemon.safety.common import Report, TickReads
from capdaemon.decide.checks import random_review_body
from capdaemon.decide.labels import Label
from capdaemon.decide.review import passive_close_due, sampled
from capdaemon.stores.botstate import PRRecord
from capdaemon.stores.safety_state import SafetyStore
from capdaemon.timefmt import parse_utc, utc_iso

if TYPE_CHECKING:
    from capdaemon.forge.port import ForgePort


@dataclass
class RandomReviews:
    """Open the sampled review issues and close them when no owner took one over in time."""

    config: Config
    store: SafetyStore
    forge: ForgePort
    actions_log: AuditLog
    decision_repo: str | None

    def sample(self, rec: PRRecord, head: str, now: datetime, report: Report | None) -> None:
        """Open a random-review issue for an auto-merged head when it falls in the sample."""
        s = self.store
        key = f"{rec.ref}@{head}"
        if (
            key in s["reviewed"]
            or rec.quadrant not in ("A", "B", "C")
            or rec.ballot_approves(rec.head_sha)
        ):
            return
        share = self.config.random_review_share
        repo = self.decision_repo
        if not sampled(rec.repo, rec.number, head, share) or repo is None:
            s["reviewed"][key] = {"sampled": False}
            return
        days = self.config.passive_review_days
        issue = self.forge.ensure_issue(
            repo,
            {"kind": "random-review", "key": key, "pr": rec.ref},
            f"Random review: {rec.ref} {rec.title}"[:200],
            random_review_body(rec.ref, "", rec.title, head, share, days),
            [Label.RANDOM_REVIEW.value],
        )
        s["reviewed"][key] = {
            "sampled": True,
            "number": issue.number,
            "opened_at": utc_iso(issue.created_at or now),
            "open": True,
        }
        self.actions_log.append(
            {
                "action": "random_review",
                "pr": rec.ref,
                "head_sha": head,
                "issue": f"{repo}#{issue.number}",
            },
            now=now,
        )
        if report is not None:
            report.issues.append(f"random-review:{repo}#{issue.number}")

    def close_due(self, now: datetime, reads: TickReads, report: Report | None) -> None:
        """Random-review issues are passive: closed after `passive_review_days` unless owned."""
        s = self.store
        repo, days = self.decision_repo, self.config.passive_review_days
        for key, info in s["reviewed"].items():
            if not info.get("open") or repo is None:
                continue
            opened = parse_utc(info["opened_at"], "opened_at")
            if now - opened < timedelta(days=days):
                continue
            comments = self.forge.comments(repo, int(info["number"]))
            pr_repo = key.split("#", 1)[0]
            owners = reads.owners(pr_repo, [c.user for c in comments])
            commented = any(c.user.lower() in owners for c in comments)
            if passive_close_due(opened, now, commented, days):
                note = f"No owner comment in {days:g} days."
                self.forge.close_issue(repo, int(info["number"]), note)
                info["open"] = False
                self.actions_log.append(
                    {
                        "action": "issue_closed",
                        "kind": "random-review",
                        "issue": f"{repo}#{info['number']}",
                    },
                    now=now,
                )
            elif commented:
                info["open"] = False  # an owner took it over: never auto-closed
        s.save()
