"""The one home of every file and folder name capdaemon reads or writes (config and bot-state)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

# -- the config directory -------------------------------------------------------------------
MAIN_CONFIG_FILE = "capdaemon.yml"  # <config>/capdaemon.yml: repos, owners, schedule, github
CLASSIFIER_CONFIG_FILE = "classifier.yml"  # <config>/classifier.yml: path lists and limits
SKILLS_CONFIG_FILE = "skills.yml"  # <config>/skills.yml: user rules switched on or off
REGISTRY_CONFIG_FILE = "agent_registry.yml"  # <config>/agent_registry.yml: agent logins
REPO_POLICY_FILE = ".capdaemon.yml"  # a supervised repo's own additions, on its base branch

# -- bot-state: hash-chained logs ------------------------------------------------------------
CLASSIFIER_LOG = "classifier_audit.jsonl"
ACTIONS_LOG = "actions.jsonl"

# -- bot-state: state files ------------------------------------------------------------------
STATE_FORMAT_FILE = "format.json"  # the directory's layout version (capdaemon.stateformat)
PRS_FILE = "prs.json"
JOURNAL_FILE = "prs.journal"
METRICS_FILE = "tick_metrics.json"
BREAKER_FILE = "breaker.json"
SAFETY_FILE = "safety.json"
BUDGET_FILE = "budget.json"
DIGEST_STATE_FILE = "digest_state.json"
NOTIFICATIONS_FILE = "notifications.json"
NOTIFICATIONS_LOCK_FILE = ".notifications.lock"
TELEGRAM_FILE = "telegram.json"
FORGE_CACHE_FILE = "forge-cache.json"
ISSUE_WATCH_FILE = "issue_watch.json"  # where the decision repo's changes list starts (since)
REPO_POLICIES_FILE = "repo_policies.json"  # each repo's .capdaemon.yml as last parsed (display)

# -- bot-state: folders ----------------------------------------------------------------------
CAPABILITIES_DIR = "capabilities"
ESCALATIONS_DIR = "escalations"
DIGEST_DIR = "digests"
OVERFLOW_DIR = "overflow"


def key_file_path(name: str, env: Mapping[str, str]) -> Path:
    """Where a secret file (App key, bot token, HMAC key) is read: a relative name is looked
    up in $CREDENTIALS_DIRECTORY (systemd's LoadCredential=) first."""
    path = Path(name)
    creds = env.get("CREDENTIALS_DIRECTORY")
    if not path.is_absolute() and creds and (Path(creds) / path).exists():
        return Path(creds) / path
    return path
