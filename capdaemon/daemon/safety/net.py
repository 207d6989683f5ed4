"""The SafetyNet: one object per daemon composing the safety-net parts over one safety.json."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from capdaemon.audit import AuditLog
from capdaemon.channels.hub import Channels
from capdaemon.config import Config
from capdaemon.daemon.core.failure import per_item
from capdaemon.daemon.merging.basebind import BaseBinding
from capdaemon.daemon.merging.intent import no_crash
from capdaemon.daemon.safety.breaker import Breaker
from capdaemon.daemon.safety.burnin import BurnIn
from capdaemon.daemon.safety.common import Report, TickReads, log
from capdaemon.daemon.safety.integrity import AuditGate
from capdaemon.daemon.safety.logtail import BreakerLogTail
from capdaemon.daemon.safety.probes import Probes
from capdaemon.daemon.safety.protection import Protection
from capdaemon.daemon.safety.reviews import RandomReviews
from capdaemon.daemon.safety.tiers import Tiers
from capdaemon.stores.botstate import Metrics, PRStore
from capdaemon.stores.safety_state import SafetyStore, new_actions

if TYPE_CHECKING:
    from capdaemon.channels.onetap import TelegramDesk
    from capdaemon.forge.port import ForgePort


@dataclass
class SafetyNet:
    """The safety net of one daemon: its parts share one SafetyStore (bot-state/safety.json)."""

    state_dir: Path
    store: SafetyStore
    tiers: Tiers
    burn_in: BurnIn
    breaker: Breaker
    reviews: RandomReviews
    probes: Probes
    protection: Protection
    integrity: AuditGate
    basebind: BaseBinding
    channels: Channels

    @classmethod
    def build(
        cls,
        *,
        config: Config,
        state_dir: Path,
        forge: ForgePort,
        classifier_log: AuditLog,
        actions_log: AuditLog,
        prs: PRStore,
        metrics: Metrics,
        bot_login: Callable[[], str],
        crash: Callable[[str], None] = no_crash,
        desk: TelegramDesk | None = None,
    ) -> SafetyNet:
        """Wire the parts (safety.json is read on first use, not here)."""
        state_dir = Path(state_dir)
        store = SafetyStore(state_dir)
        repo = config.ballot_repo
        breaker = Breaker(
            config=config,
            store=store,
            forge=forge,
            actions_log=actions_log,
            state_dir=state_dir,
            decision_repo=repo,
            bot_login=bot_login,
            log_tail=BreakerLogTail(state_dir),
        )
        reviews = RandomReviews(
            config=config,
            store=store,
            forge=forge,
            actions_log=actions_log,
            decision_repo=repo,
        )
        probes = Probes(
            config=config,
            store=store,
            forge=forge,
            actions_log=actions_log,
            state_dir=state_dir,
            prs=prs,
            decision_repo=repo,
            bot_login=bot_login,
            shadow=config.mode == "shadow",
            breaker=breaker,
            reviews=reviews,
            crash=crash,
        )
        return cls(
            state_dir=state_dir,
            store=store,
            tiers=Tiers(
                config=config,
                store=store,
                forge=forge,
                actions_log=actions_log,
                prs=prs,
                decision_repo=repo,
                bot_login=bot_login,
            ),
            burn_in=BurnIn(
                config=config,
                state_dir=state_dir,
                store=store,
                metrics=metrics,
                actions_log=actions_log,
                prs=prs,
            ),
            breaker=breaker,
            reviews=reviews,
            probes=probes,
            protection=Protection(
                config=config,
                store=store,
                forge=forge,
                actions_log=actions_log,
                decision_repo=repo,
                breaker=breaker,
            ),
            integrity=AuditGate(
                config=config,
                store=store,
                forge=forge,
                actions_log=actions_log,
                classifier_log=classifier_log,
                decision_repo=repo,
                breaker=breaker,
            ),
            basebind=BaseBinding(prs=prs, actions_log=actions_log, forge=forge, probes=probes),
            channels=Channels(config, state_dir, desk),
        )

    def save(self) -> None:
        """Write safety.json when it changed (the tick calls this once per chunk and at its end)."""
        self.store.save()

    def step_probes_and_breaker(
        self, now: datetime, reads: TickReads, report: Report | None = None
    ) -> None:
        """Step 7: new merges → probes (+ revert, incident), protection drift, API-failure
        streaks, the incident issue and `/breaker reset` comments, random reviews."""
        s = self.store
        records, cursor = new_actions(self.state_dir, s["cursor"])
        parts: tuple[Callable[[], None], ...] = (
            lambda: self.probes.watch_merges(records, now, report),
            lambda: self.probes.probe(now, reads, report),
            lambda: self.protection.check(now, report),
            lambda: self.reviews.close_due(now, reads, report),
            lambda: self.breaker.sync_issue(now, report),
        )
        for part in parts:
            with per_item(report, "safety.failed", "safety step", log=log):
                part()
        s["cursor"] = cursor
        s.save()
        self.breaker.api_failures(now, report)
