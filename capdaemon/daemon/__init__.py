"""The daemon: tick orchestration, scheduler, bot-state records, systemd notify."""
