"""Channels owners watch outside GitHub: Telegram one-tap approvals and apprise notifications."""
