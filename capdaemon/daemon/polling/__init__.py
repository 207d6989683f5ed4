"""Steps 1-2 of a tick: what changed on GitHub, each PR classified, recorded and published."""
