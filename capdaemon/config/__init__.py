"""Configuration: frozen types for config/*.yml (types), the validating section reader
(sections), the central capdaemon.yml (central), the other files and the directory loader
(loaders), and a repo's own `.capdaemon.yml` (policy). `from capdaemon.config import X` keeps
working for every name below."""

from __future__ import annotations

from capdaemon.classify.ruletable import DISABLEABLE_RULES as DISABLEABLE_RULES
from capdaemon.config.central import BOT_KEYS as BOT_KEYS
from capdaemon.config.central import BREAKER_KEYS as BREAKER_KEYS
from capdaemon.config.central import CANONICAL_APP_KEYS as CANONICAL_APP_KEYS
from capdaemon.config.central import CAPDAEMON_KEYS as CAPDAEMON_KEYS
from capdaemon.config.central import GITHUB_KEYS as GITHUB_KEYS
from capdaemon.config.central import POST_MERGE_KEYS as POST_MERGE_KEYS
from capdaemon.config.central import REPO_KEYS as REPO_KEYS
from capdaemon.config.central import SCHEDULE_KEYS as SCHEDULE_KEYS
from capdaemon.config.central import TIER_KEYS as TIER_KEYS
from capdaemon.config.central import load_capdaemon as load_capdaemon
from capdaemon.config.loaders import AGENT_KEYS as AGENT_KEYS
from capdaemon.config.loaders import AGENT_REGISTRY_KEYS as AGENT_REGISTRY_KEYS
from capdaemon.config.loaders import BUILTIN_RULES as BUILTIN_RULES
from capdaemon.config.loaders import CLASSIFIER_KEYS as CLASSIFIER_KEYS
from capdaemon.config.loaders import CONFIG_FILES as CONFIG_FILES
from capdaemon.config.loaders import SKILLS_KEYS as SKILLS_KEYS
from capdaemon.config.loaders import USER_RULES_SUBDIR as USER_RULES_SUBDIR
from capdaemon.config.loaders import load_config as load_config
from capdaemon.config.loaders import user_rules_dir as user_rules_dir
from capdaemon.config.policy import REPO_POLICY_KEYS as REPO_POLICY_KEYS
from capdaemon.config.policy import RepoPolicy as RepoPolicy
from capdaemon.config.policy import parse_repo_policy as parse_repo_policy
from capdaemon.config.policy import with_repo_policy as with_repo_policy
from capdaemon.config.sections import CARVE_OUT_CLASSIFIER_LISTS as CARVE_OUT_CLASSIFIER_LISTS
from capdaemon.config.sections import CHECK_SPEC_KEYS as CHECK_SPEC_KEYS
from capdaemon.config.sections import RESTRICTIVE_CLASSIFIER_LISTS as RESTRICTIVE_CLASSIFIER_LISTS
from capdaemon.config.sections import RESTRICTIVE_TIER_LISTS as RESTRICTIVE_TIER_LISTS
from capdaemon.config.sections import ConfigError as ConfigError
from capdaemon.config.sections import _Section as _Section
from capdaemon.config.types import DEFAULT_ALWAYS_D_GLOBS as DEFAULT_ALWAYS_D_GLOBS
from capdaemon.config.types import DEFAULT_CONFIG_FILE_GLOBS as DEFAULT_CONFIG_FILE_GLOBS
from capdaemon.config.types import DEFAULT_CRITICAL_GLOBS as DEFAULT_CRITICAL_GLOBS
from capdaemon.config.types import (
    DEFAULT_EXTERNAL_CONTENT_PATTERNS as DEFAULT_EXTERNAL_CONTENT_PATTERNS,
)
from capdaemon.config.types import DEFAULT_EXTERNAL_GLOBS as DEFAULT_EXTERNAL_GLOBS
from capdaemon.config.types import DEFAULT_IRREVERSIBLE_GLOBS as DEFAULT_IRREVERSIBLE_GLOBS
from capdaemon.config.types import DEFAULT_NONCRITICAL_DIRS as DEFAULT_NONCRITICAL_DIRS
from capdaemon.config.types import DEFAULT_NONCRITICAL_FILES as DEFAULT_NONCRITICAL_FILES
from capdaemon.config.types import DEFAULT_SCHEMA_GLOBS as DEFAULT_SCHEMA_GLOBS
from capdaemon.config.types import (
    DEFAULT_SECRET_CONTENT_PATTERNS as DEFAULT_SECRET_CONTENT_PATTERNS,
)
from capdaemon.config.types import DEFAULT_SECRET_GLOBS as DEFAULT_SECRET_GLOBS
from capdaemon.config.types import DEFAULT_SELF_LOGIC_PATTERNS as DEFAULT_SELF_LOGIC_PATTERNS
from capdaemon.config.types import DEFAULT_SELF_PATHS as DEFAULT_SELF_PATHS
from capdaemon.config.types import DEFAULT_SOURCE_ROOT as DEFAULT_SOURCE_ROOT
from capdaemon.config.types import KNOWN_VALIDATORS as KNOWN_VALIDATORS
from capdaemon.config.types import AgentEntry as AgentEntry
from capdaemon.config.types import AgentRegistry as AgentRegistry
from capdaemon.config.types import BreakerConfig as BreakerConfig
from capdaemon.config.types import CheckSpec as CheckSpec
from capdaemon.config.types import ClassifierConfig as ClassifierConfig
from capdaemon.config.types import Config as Config
from capdaemon.config.types import GitHubConfig as GitHubConfig
from capdaemon.config.types import MetricsConfig as MetricsConfig
from capdaemon.config.types import PostMergeConfig as PostMergeConfig
from capdaemon.config.types import RepoConfig as RepoConfig
from capdaemon.config.types import ScheduleConfig as ScheduleConfig
from capdaemon.config.types import SkillsConfig as SkillsConfig
from capdaemon.config.types import TierConfig as TierConfig
