"""Step 3 of a tick: ballot rounds and owners' votes, and the ballot issue each round uses."""
