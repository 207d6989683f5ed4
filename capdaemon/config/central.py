"""The central capdaemon.yml: its keys and `load_capdaemon`, one small reader per section."""

from __future__ import annotations

import ipaddress
from dataclasses import fields
from typing import Any

from capdaemon.config.base import _union
from capdaemon.config.channels import parse_channels
from capdaemon.config.sections import (
    _ENV_RE,
    _HHMM_RE,
    _LOGIN_RE,
    _REPO_RE,
    RESTRICTIVE_TIER_LISTS,
    ConfigError,
    _check_glob,
    _extra_checks,
    _restrictive,
    _Section,
)
from capdaemon.config.types import (
    DEFAULT_MODE,
    MAX_BURST_PER_MINUTE,
    MAX_SWEEP_POINTS_PER_HOUR,
    BreakerConfig,
    Config,
    GitHubConfig,
    MetricsConfig,
    PostMergeConfig,
    RepoConfig,
    ScheduleConfig,
    TierConfig,
)
from capdaemon.quoting import quote_value
from capdaemon.yamlread import LList

GITHUB_KEYS = frozenset(
    {
        "base_url",
        "app_id",
        "private_key_file",
        "installation_id",
        "token_env",
        "per_tick_wait_seconds",
        "writes_per_hour",
        "writes_per_minute",
        "requests_per_hour",
    }
)
BOT_KEYS = frozenset({"login", "own_repo", "decision_repo"})
CANONICAL_APP_KEYS = frozenset({"slug", "id"})
# A supervised repo's keys are RepoConfig's fields: adding a setting is the field (with its
# default), the sample config and its consumer. Fields of a plain type (str, int, bool, float,
# tuple of str) are read by `_plain`; the others have their own checks in `_repo`.
REPO_KEYS = frozenset(f.name for f in fields(RepoConfig))
_CHECKED_REPO_KEYS = frozenset(
    {"name", "base", "merge_method", "extra_checks", "owners", "blocking_labels",
     "task_branch_pattern"}
)  # fmt: skip
SCHEDULE_KEYS = frozenset(
    {"tick_seconds", "digest_time", "timezone", "detect_seconds", "detect_requests_per_minute",
     "detect_burst_requests_per_minute", "detect_burst_seconds",
     "detect_burst_graphql_points_per_hour"}
)  # fmt: skip
TIER_KEYS = frozenset(
    {"many_files", "large_diff_lines", "one_tap_ttl_hours"}
    | set(RESTRICTIVE_TIER_LISTS)
    | {f"extra_{n}" for n in RESTRICTIVE_TIER_LISTS}
)
POST_MERGE_KEYS = frozenset({"window_minutes", "auto_revert_pr", "revert_daily_cap"})
BREAKER_KEYS = frozenset({"threshold", "window_hours"})
METRICS_KEYS = frozenset({"listen", "allow_non_loopback"})
_LISTEN_RE = r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}$"
CAPDAEMON_KEYS = frozenset(
    {
        "github",
        "bot",
        "canonical_app",
        "owners",
        "owners_include_admins",
        "mode",
        "repos",
        "schedule",
        "tiers",
        "post_merge",
        "breaker",
        "metrics",
        "passive_review_days",
        "random_review_share",
        "burn_in_days",
        "telegram",
        "notifications",
    }
)


def _check_branch_pattern(pattern: str) -> None:
    import re

    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"bad regular expression {quote_value(pattern)}: {exc}") from None
    if "task_id" not in rx.groupindex:
        raise ValueError(f"pattern {quote_value(pattern)} has no named group (?P<task_id>...)")


def _check_ref_name(name: str) -> None:
    if (
        not name
        or name.startswith("-")
        or any(c in name for c in " ~^:?*[\\\x00\n")
        or ".." in name
    ):
        raise ValueError(f"{quote_value(name)} is not a valid branch name")


def load_capdaemon(file: str, data: Any) -> dict[str, Any]:
    """The fields of Config that come from capdaemon.yml, section by section."""
    sec = _Section(file, data, "", CAPDAEMON_KEYS)
    out: dict[str, Any] = {"github": _github(sec)}
    out.update(_bot(sec))
    out["owners"] = sec.strs("owners", pattern=_LOGIN_RE, what="a GitHub login") or ()
    out["owners_include_admins"] = sec.bool("owners_include_admins", False)
    out["mode"] = sec.str("mode", DEFAULT_MODE, choices=("enforce", "shadow"))
    out["repos"] = _repos(sec, file)
    out["schedule"] = _schedule(sec)
    out["tiers"] = _tiers(sec)
    out["post_merge"] = _post_merge(sec)
    out["breaker"] = _breaker(sec)
    out["metrics"] = _metrics(sec)
    out["passive_review_days"] = sec.num(
        "passive_review_days", Config.passive_review_days, minimum=0, exclusive_min=True
    )
    out["random_review_share"] = sec.num(
        "random_review_share", Config.random_review_share, minimum=0, maximum=1
    )
    out["burn_in_days"] = sec.num("burn_in_days", Config.burn_in_days, minimum=0)
    owners = frozenset(o.lower() for o in out["owners"])
    owners |= {o.lower() for r in out["repos"] for o in r.owners}
    out["channels"] = parse_channels(sec, owners)
    return out


def _github(sec: _Section) -> GitHubConfig:
    """`github:`: where GitHub is and how to authenticate (App id and key go together)."""
    gh = sec.section("github", GITHUB_KEYS)
    gd = GitHubConfig()
    base_url = gh.str(
        "base_url", gd.base_url, pattern=r"^https?://[^\s/]+", what="an http(s) URL"
    ).rstrip("/")
    github = GitHubConfig(
        base_url=base_url,
        app_id=gh.int("app_id", None, minimum=1),
        private_key_file=gh.str("private_key_file", None),
        installation_id=gh.int("installation_id", None, minimum=1),
        token_env=gh.str(
            "token_env", gd.token_env, pattern=_ENV_RE, what="an environment variable name"
        ),
        per_tick_wait_seconds=gh.num("per_tick_wait_seconds", gd.per_tick_wait_seconds, minimum=0),
        writes_per_hour=gh.int("writes_per_hour", gd.writes_per_hour, minimum=1),
        writes_per_minute=gh.int("writes_per_minute", gd.writes_per_minute, minimum=1),
        requests_per_hour=gh.int("requests_per_hour", None, minimum=1),
    )
    if (github.app_id is None) != (github.private_key_file is None):
        missing = "private_key_file" if github.private_key_file is None else "app_id"
        raise gh.error(missing, "app_id and private_key_file go together (GitHub App auth)")
    return github


def _bot(sec: _Section) -> dict[str, Any]:
    """`bot:` and `canonical_app:`: who capdaemon is and which App publishes verdicts."""
    bot = sec.section("bot", BOT_KEYS)
    out: dict[str, Any] = {
        "bot_login": bot.str("login", Config.bot_login, pattern=_LOGIN_RE, what="a GitHub login"),
        "own_repo": bot.str("own_repo", None, pattern=_REPO_RE, what="owner/name"),
        "decision_repo": bot.str("decision_repo", None, pattern=_REPO_RE, what="owner/name"),
    }
    app = sec.section("canonical_app", CANONICAL_APP_KEYS)
    out["canonical_app"] = app.str(
        "slug", None, pattern=r"^[a-z0-9][a-z0-9-]{0,99}$", what="an App slug"
    )
    out["canonical_app_id"] = app.int("id", None, minimum=1)
    return out


def _repos(sec: _Section, file: str) -> tuple[RepoConfig, ...]:
    """`repos:`: the supervised repositories, each named once."""
    repos: list[RepoConfig] = []
    items = sec.list("repos") or []
    names: set[str] = set()
    for i, item in enumerate(items):
        line = items.lines[i] if isinstance(items, LList) else None
        r = _Section(file, item, f"repos[{i}]", REPO_KEYS, line)
        if not r.has("name"):
            raise ConfigError(file, r.path, "missing required key 'name'", r.line)
        name = r.str("name", pattern=_REPO_RE, what="owner/name")
        if name.lower() in names:
            raise r.error("name", f"repo {quote_value(name)} is listed twice")
        names.add(name.lower())
        repos.append(_repo(r, name))
    return tuple(repos)


def _repo(r: _Section, name: str) -> RepoConfig:
    """One `repos[i]` entry whose name was checked."""
    rd = RepoConfig(name="x/y")
    base = r.str("base", rd.base)
    try:
        _check_ref_name(base)
    except ValueError as exc:
        raise r.error("base", str(exc)) from None
    pattern = r.str("task_branch_pattern", rd.task_branch_pattern)
    try:
        _check_branch_pattern(pattern)
    except ValueError as exc:
        raise r.error("task_branch_pattern", str(exc)) from None
    plain = {k: _plain(r, k, getattr(rd, k)) for k in REPO_KEYS - _CHECKED_REPO_KEYS}
    return RepoConfig(
        name=name,
        base=base,
        merge_method=r.str("merge_method", rd.merge_method, choices=("merge", "squash", "rebase")),
        extra_checks=_extra_checks(r),
        owners=r.strs("owners", pattern=_LOGIN_RE, what="a GitHub login") or (),
        blocking_labels=(
            rd.blocking_labels
            if not r.has("blocking_labels")
            else _union(rd.blocking_labels, r.strs("blocking_labels") or ())
        ),
        task_branch_pattern=pattern,
        **plain,
    )


def _plain(r: _Section, key: str, default: Any) -> Any:
    """A repo setting of a plain type, read and type-checked against its default's type."""
    if isinstance(default, bool):
        return r.bool(key, default)
    if isinstance(default, int):
        return r.int(key, default)
    if isinstance(default, float):
        return r.num(key, default)
    if isinstance(default, str):
        return r.str(key, default)
    if isinstance(default, tuple) and all(isinstance(v, str) for v in default):
        found = r.strs(key)
        return default if found is None else found
    raise TypeError(f"RepoConfig.{key}: no plain reader for {type(default).__name__}")


def _schedule(sec: _Section) -> ScheduleConfig:
    """`schedule:`: tick interval, digest time and a time zone that exists."""
    sd = ScheduleConfig()
    sc = sec.section("schedule", SCHEDULE_KEYS)
    tz = sc.str("timezone", sd.timezone)
    if sc.has("timezone"):
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise sc.error("timezone", f"unknown time zone {quote_value(tz)}") from None
    tick = sc.int("tick_seconds", sd.tick_seconds, minimum=1)
    detect = sc.int("detect_seconds", sd.detect_seconds, minimum=0)
    if detect and detect >= tick:
        raise sc.error(
            "detect_seconds",
            f"must be less than tick_seconds ({tick}), or 0 to look for changes only at ticks;"
            f" got {detect}",
        )
    quiet = sc.int("detect_requests_per_minute", sd.detect_requests_per_minute, minimum=1)
    burst = sc.int(
        "detect_burst_requests_per_minute", sd.detect_burst_requests_per_minute, minimum=1
    )
    if not quiet <= burst <= MAX_BURST_PER_MINUTE:
        raise sc.error(
            "detect_burst_requests_per_minute",
            f"must be from detect_requests_per_minute ({quiet}) to {MAX_BURST_PER_MINUTE} (half"
            f" of GitHub's secondary limit of 900 REST requests a minute); got {burst}",
        )
    points = sc.int(
        "detect_burst_graphql_points_per_hour",
        sd.detect_burst_graphql_points_per_hour,
        minimum=0,
    )
    if points > MAX_SWEEP_POINTS_PER_HOUR:
        raise sc.error(
            "detect_burst_graphql_points_per_hour",
            f"must be from 0 (no rollup sweep) to {MAX_SWEEP_POINTS_PER_HOUR} (half of GitHub's"
            f" smallest GraphQL budget of 5,000 points an hour); got {points}",
        )
    return ScheduleConfig(
        tick_seconds=tick,
        digest_time=sc.str("digest_time", sd.digest_time, pattern=_HHMM_RE, what="a time HH:MM"),
        timezone=tz,
        detect_seconds=detect,
        detect_requests_per_minute=quiet,
        detect_burst_requests_per_minute=burst,
        detect_burst_seconds=sc.int("detect_burst_seconds", sd.detect_burst_seconds, minimum=0),
        detect_burst_graphql_points_per_hour=points,
    )


def _tiers(sec: _Section) -> TierConfig:
    """`tiers:`: the review-tier thresholds and their (only growing) glob lists."""
    td = TierConfig()
    ts = sec.section("tiers", TIER_KEYS)
    return TierConfig(
        many_files=ts.int("many_files", td.many_files, minimum=1),
        large_diff_lines=ts.int("large_diff_lines", td.large_diff_lines, minimum=1),
        one_tap_ttl_hours=ts.num(
            "one_tap_ttl_hours", td.one_tap_ttl_hours, minimum=0, exclusive_min=True
        ),
        **{n: _restrictive(ts, n, getattr(td, n), _check_glob) for n in RESTRICTIVE_TIER_LISTS},
    )


def _post_merge(sec: _Section) -> PostMergeConfig:
    """`post_merge:`: the watch window and the auto-revert switch and cap."""
    pd = PostMergeConfig()
    ps = sec.section("post_merge", POST_MERGE_KEYS)
    return PostMergeConfig(
        window_minutes=ps.int("window_minutes", pd.window_minutes, minimum=1),
        auto_revert_pr=ps.bool("auto_revert_pr", pd.auto_revert_pr),
        revert_daily_cap=ps.int("revert_daily_cap", pd.revert_daily_cap, minimum=0),
    )


def _breaker(sec: _Section) -> BreakerConfig:
    """`breaker:`: how many incidents in how many hours trip it."""
    bd = BreakerConfig()
    bs = sec.section("breaker", BREAKER_KEYS)
    return BreakerConfig(
        threshold=bs.int("threshold", bd.threshold, minimum=1),
        window_hours=bs.num("window_hours", bd.window_hours, minimum=0, exclusive_min=True),
    )


def _metrics(sec: _Section) -> MetricsConfig:
    """`metrics:`: where `capdaemon run` serves /healthz and /metrics (off when absent); only
    on a loopback address unless `allow_non_loopback` says otherwise (nothing there is secret,
    but PR counts and timings are the owners' business)."""
    ms = sec.section("metrics", METRICS_KEYS)
    allow = ms.bool("allow_non_loopback", False)
    listen = ms.str("listen", "", pattern=_LISTEN_RE, what="host:port (e.g. 127.0.0.1:9464)")
    if not listen:
        return MetricsConfig(None, allow)
    host, port = MetricsConfig(listen).address or ("", 0)
    if not 0 < port < 65536:
        raise ms.error("listen", f"port {port} is not from 1 to 65535")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback and not allow:
        raise ms.error(
            "listen",
            f"{quote_value(host)} is not a loopback address (127.0.0.1, ::1, localhost): the"
            " endpoints have no authentication; set metrics.allow_non_loopback: true to serve"
            " them there anyway",
        )
    return MetricsConfig(listen, allow)
