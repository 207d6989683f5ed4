"""The safety net: tiers and one-tap, burn-in, breaker, probes and reverts, protection.

One `SafetyNet` per daemon (`SafetyNet.build`, in net.py), its parts small classes over one
SafetyStore (bot-state/safety.json; breaker.json for the breaker); decisions come from
capdaemon.decide.
"""
