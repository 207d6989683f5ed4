"""The read-only dashboard: pages built from bot-state/ and the config, served or exported."""
