"""File-backed stores beside the pure capability core: snapshots, dispatches, escalations."""
