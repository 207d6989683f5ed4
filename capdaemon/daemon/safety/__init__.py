"""The safety net: tiers and one-tap, burn-in, breaker, probes and reverts, protection.

One `SafetyNet` per daemon (`SafetyNet.build`), its parts small classes over one SafetyStore
(bot-state/safety.json; breaker.json for the breaker); decisions come from capdaemon.decide.
"""

from __future__ import annotations

from capdaemon.daemon.safety.breaker import owners_reset
from capdaemon.daemon.safety.common import INCIDENT, ONE_TAP
from capdaemon.daemon.safety.net import SafetyNet
from capdaemon.daemon.safety.protection import protection_problems

__all__ = ["INCIDENT", "ONE_TAP", "SafetyNet", "owners_reset", "protection_problems"]
