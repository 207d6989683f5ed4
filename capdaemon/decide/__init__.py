"""The pure decision core: ballots, tiers, merging, breaker, burn-in, probes, digest, checks."""
