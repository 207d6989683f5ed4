"""The tick itself: its steps in order, what it works with, its budget, failures and metrics."""
