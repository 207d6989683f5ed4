"""Steps 0 and 4 of a tick: record before act, reconcile, and the merge at the approved sha."""
