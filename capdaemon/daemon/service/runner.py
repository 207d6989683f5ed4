"""Start-up and the scheduler: config, credentials, the state lock, the Forge, and the tick job."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from capdaemon.config import Config, GitHubConfig
from capdaemon.daemon.polling.detector import ChangeDetector, add_detect_job, detect_job
from capdaemon.daemon.service.gapwatch import GapWatch
from capdaemon.daemon.service.notify import Notifier
from capdaemon.daemon.service.preflight import (
    CredentialsError,
    UnreachableError,
    authenticate,
    build_forge,
    check_key_pem,
    forge_errors,
    repo_problems,
)
from capdaemon.filenames import key_file_path
from capdaemon.logging import get_logger
from capdaemon.state import StateLock
from capdaemon.stateformat import check_format, stamp_format

if TYPE_CHECKING:
    from capdaemon.classify.user_rules import UserRule
    from capdaemon.daemon.core.tick import Ticker
    from capdaemon.daemon.service.reload import Reloader
    from capdaemon.forge import tokencache
    from capdaemon.forge.client import Forge
    from capdaemon.forge.port import ForgePort

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_STATE = 3  # corrupt or unwritable state: an operator must look (systemd does not restart)

__all__ = ["EXIT_CONFIG", "EXIT_FAILED", "EXIT_OK", "EXIT_STATE", "CredentialsError"]


def app_key_path(
    gh: GitHubConfig, env: Mapping[str, str] | None = None, config_dir: Path | None = None
) -> Path | None:
    """Where the App key is read from ($CREDENTIALS_DIRECTORY, then the config dir), or None
    when the config uses a token."""
    env = os.environ if env is None else env
    if gh.app_id is None or not gh.private_key_file:
        return None
    path = key_file_path(gh.private_key_file, env)
    if not path.is_absolute() and config_dir is not None and not path.exists():
        path = config_dir / path
    return path


def github_credentials(
    gh: GitHubConfig, env: Mapping[str, str] | None = None, config_dir: Path | None = None
) -> tuple[str | None, bytes | None]:
    """(token, App private key PEM) for the Forge: App id + key file, else the token env var."""
    env = os.environ if env is None else env
    path = app_key_path(gh, env, config_dir)
    if path is not None:
        try:
            return None, path.read_bytes()
        except OSError as exc:
            raise CredentialsError(
                f"github.private_key_file: cannot read the App key {path}: {exc.strerror}"
            ) from exc
    token = env.get(gh.token_env, "")
    if not token:
        raise CredentialsError(
            f"no GitHub credentials: set github.app_id + github.private_key_file in capdaemon.yml, "
            f"or the environment variable {gh.token_env}"
        )
    return token, None


def is_loopback(base_url: str) -> bool:
    """True for a GitHub on this machine (the sandbox): no write pacing is needed there."""
    from urllib.parse import urlsplit

    host = (urlsplit(base_url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


def with_base_url(config: Config, base_url: str | None) -> Config:
    """The config with its GitHub base URL replaced (the sandbox, GitHub Enterprise)."""
    if not base_url:
        return config
    return dataclasses.replace(config, github=dataclasses.replace(config.github, base_url=base_url))


@contextlib.contextmanager
def open_ticker(
    config: Config,
    state_dir: Path,
    *,
    rules: tuple[UserRule, ...] = (),
    env: Mapping[str, str] | None = None,
    heartbeat: Callable[[], object] | None = None,
    forge: ForgePort | None = None,
    verify: bool = False,
    wait_for_github: bool = False,
    reloader: Reloader | None = None,
) -> Iterator[Ticker]:
    """Read credentials, build the Forge (unless given), lock the state dir, build the Ticker.

    With `verify`, the key must parse and GitHub must accept the credentials before anything
    is created or written in the state directory. With `wait_for_github` (the daemon), an
    unreachable GitHub is not fatal: the scheduled ticks are skipped until it answers.
    Raises CredentialsError, UnreachableError, LockedError (another daemon holds the dir),
    StateError (a corrupt state file, named). The lock is held until the context exits.
    A `reloader` (`capdaemon run`) applies config edits at the start of each full tick.
    """
    from capdaemon.daemon.core.tick import Ticker
    from capdaemon.forge import tokencache

    check_format(Path(state_dir))  # a newer format: nothing in it is read (StateFormatError)
    cache: tokencache.Loaded | None = None  # set when this function builds the Forge
    built: Forge | None = None
    if forge is None:
        config_dir = Path(config.config_dir) if config.config_dir else None
        token, key_pem = github_credentials(config.github, env, config_dir)
        if verify and key_pem is not None:
            check_key_pem(key_pem, app_key_path(config.github, env, config_dir) or "")
        forge = built = build_forge(
            config.github,
            token=token,
            key_pem=key_pem,
            write_interval=0.0 if is_loopback(config.github.base_url) else 1.0,
            state_dir=Path(state_dir),  # over-long bodies are saved here in full
        )
        # a cron tick starts where the last process left off: same token, same ETags
        cache = tokencache.load(built, Path(state_dir), config.github.base_url)
        if verify:
            try:
                authenticate(built, config.github)
                with forge_errors(config.github):
                    unknown = repo_problems(built, config)
            except UnreachableError as exc:
                if not wait_for_github:
                    raise
                get_logger("capdaemon.daemon").warning(
                    "daemon.unreachable", error=str(exc), then="ticks wait until GitHub answers"
                )
            else:
                if unknown:
                    raise CredentialsError("; ".join(unknown))
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    with StateLock(state_dir):
        _stamp(state_dir)
        from capdaemon.channels import tgjob

        try:
            desk = tgjob.build_desk(config, state_dir, env)
        except ValueError as exc:  # missing/refused bot token or HMAC key: a config problem
            raise CredentialsError(str(exc)) from None
        ticker = Ticker(
            config,
            state_dir,
            forge,
            rules=rules,
            env=env,
            heartbeat=heartbeat,
            desk=desk,
            before_tick=reloader.before_tick if reloader is not None else None,
        )
        try:
            yield ticker
        finally:
            if cache is not None and built is not None:
                _keep_cache(built, state_dir, config.github.base_url, cache)


def _stamp(state_dir: Path) -> None:
    """Stamp the locked state directory's format (stateformat), saying so when it was older;
    a newer format raises StateFormatError before anything is written."""
    stamped = stamp_format(state_dir)
    if stamped:
        get_logger("capdaemon.daemon").info("state.format_stamped", detail=stamped)


def _keep_cache(forge: Forge, state_dir: Path, base_url: str, cache: tokencache.Loaded) -> None:
    """Save the token and ETag cache for the next process (never over an unreadable file)."""
    from capdaemon.forge import tokencache

    try:
        if not cache.unreadable:
            tokencache.save(forge, state_dir, base_url)
    except OSError as exc:
        get_logger("capdaemon.daemon").warning("forge.cache_not_saved", error=exc.strerror)
    finally:
        forge.close()


def serve(
    ticker: Ticker,
    *,
    tick_seconds: float,
    notifier: Notifier | None = None,
    reloader: Reloader | None = None,
    fixed_interval: bool = False,
    stopped_early: Sequence[int] = (),
) -> int:
    """Run the tick every `tick_seconds` on one BlockingScheduler until SIGTERM/SIGINT (exit 0),
    and between ticks the change detector (`schedule.detect_seconds`;
    capdaemon.daemon.polling.detector).

    The signal handler asks the tick to stop after its current step and stops the scheduler;
    the main thread then waits for the running tick to return. A fatal tick error (corrupt
    state) stops the daemon with exit 1; other tick errors are logged and retried next tick.
    With a `reloader` (the one the Ticker was built with: each tick starts by applying a
    changed config directory), SIGHUP reads and checks it at once (RELOADING=1 … READY=1 to
    systemd); a new `schedule:` applied by a tick moves the digest and, unless
    `fixed_interval` (--tick-seconds), the tick interval. `stopped_early`: the stop signals
    received while starting (held_stop_signals): the daemon stops at once, exit 0.
    """
    from apscheduler.executors.pool import ThreadPoolExecutor
    from apscheduler.schedulers.blocking import BlockingScheduler

    from capdaemon.daemon.service.digest_job import add_digest_job, cron_trigger

    log = get_logger("capdaemon.daemon")
    notifier = notifier or Notifier()
    outcome = {"code": EXIT_OK}
    sched = BlockingScheduler(timezone=UTC, executors={"default": ThreadPoolExecutor(1)})

    def stop(code: int) -> None:
        outcome["code"] = max(outcome["code"], code)
        ticker.request_stop()
        if sched.running:
            sched.shutdown(wait=False)

    detector = ChangeDetector(ticker)
    gaps = GapWatch(ticker, tick_seconds)  # a frozen process or a suspended host: said

    def job() -> None:
        gaps.tick_starting()
        if not detector.stats.looks:  # its marks, before the first tick lists anything
            detect_job(detector)
        running = ticker.config
        try:
            code = tick_job(ticker)
        finally:
            gaps.tick_ended()
        reschedule(running, ticker.config)  # the tick may have applied a config edit
        if code is not None:
            stop(code)
        notifier.watchdog()

    def on_signal(signum: int, _frame: object) -> None:
        log.info("daemon.signal", signal=signal.Signals(signum).name)
        notifier.stopping()
        stop(EXIT_OK)

    def reload_now() -> None:
        status = reloader.request(ticker) if reloader is not None else "no config directory to read"
        notifier.ready(status=status)

    def on_hangup(_signum: int, _frame: object) -> None:
        log.info("daemon.signal", signal="SIGHUP", then="reading the config directory")
        notifier.reloading("reading the config directory")
        threading.Thread(target=reload_now, name="config-reload", daemon=True).start()

    def reschedule(old: Config, new: Config) -> None:
        """A reloaded `schedule:`: the digest's time and zone, the tick interval (unless
        --tick-seconds fixed it)."""
        if new.schedule == old.schedule:
            return
        sched.reschedule_job("digest", trigger=cron_trigger(new))
        if not fixed_interval and new.schedule.tick_seconds != old.schedule.tick_seconds:
            sched.reschedule_job("tick", trigger="interval", seconds=new.schedule.tick_seconds)
            gaps.interval = new.schedule.tick_seconds
            notifier.fit_watchdog(new.schedule.tick_seconds)
            log.info("daemon.rescheduled", tick_seconds=new.schedule.tick_seconds)

    sched.add_job(
        job,
        "interval",
        seconds=tick_seconds,
        id="tick",
        max_instances=1,
        coalesce=True,
        misfire_grace_time=max(1, int(tick_seconds)),
        next_run_time=datetime.now(UTC),
    )
    add_digest_job(sched, ticker)  # 09:00 local CronTrigger, generous misfire grace, coalesced
    from capdaemon.channels.tgjob import add_poll_job

    add_poll_job(sched, ticker)  # Telegram taps, on its own thread; idle when nothing is live
    add_detect_job(sched, detector)  # changes between ticks, on its own thread
    watch_overruns(sched, tick_seconds)
    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, on_hangup)
    try:
        if stopped_early:
            on_signal(stopped_early[0], None)
        else:
            notifier.ready(status=f"ticking every {tick_seconds:g} s")
            watchdog = notifier.fit_watchdog(tick_seconds)
            if watchdog is not None:
                log.info("daemon.watchdog", seconds=watchdog, tick_seconds=tick_seconds)
            log.info("daemon.start", tick_seconds=tick_seconds, pid=os.getpid())
            sched.start()
            ticker.wait_idle()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    log.info("daemon.stop", exit_code=outcome["code"])
    return outcome["code"]


@contextlib.contextmanager
def held_stop_signals() -> Iterator[list[int]]:
    """While the daemon starts (config, credentials, the lock, the Ticker): a SIGTERM or
    SIGINT is kept, not fatal, so a stop asked for during start-up still exits 0 once serve()
    has its own handlers; the signals received, in order."""
    got: list[int] = []
    previous = {
        s: signal.signal(s, lambda signum, _frame: got.append(signum))
        for s in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        yield got
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def tick_job(ticker: Ticker) -> int | None:
    """One scheduled tick. The credentials are proven first: a tick that cannot authenticate
    (key or token revoked, GitHub unreachable) is skipped — nothing written, not counted.
    Returns EXIT_FAILED when the daemon must stop (corrupt state), else None."""
    from capdaemon.daemon.service.preflight import recheck
    from capdaemon.state import StateError

    log = get_logger("capdaemon.daemon")
    try:
        recheck(ticker.forge, ticker.config.github)
    except (CredentialsError, UnreachableError) as exc:
        log.error("tick.skipped", error=str(exc))
        return None
    try:
        ticker.tick()
    except StateError as exc:
        log.error("tick.fatal", error=str(exc))
        return EXIT_FAILED
    except Exception as exc:  # a failed tick is retried next interval; the daemon stays up
        log.error("tick.failed", error=f"{type(exc).__name__}: {exc}")
    return None


# The jobs whose skipped run an operator must hear of; the change detector and the Telegram
# poll wake every second or so and skip a run whenever a tick holds them up, which is normal.
WATCHED_JOBS = frozenset({"tick", "digest"})


def watch_overruns(sched: Any, tick_seconds: float) -> None:
    """One `tick.overrun` warning when a tick (or the digest) is still running at its next
    start time (the scheduler skips that run; its own plain-text message is filtered out of the
    logs). Other jobs' skipped wake-ups are not logged."""
    from apscheduler.events import EVENT_JOB_MAX_INSTANCES, EVENT_JOB_MISSED

    log = get_logger("capdaemon.daemon")

    def listener(event: Any) -> None:
        if event.job_id not in WATCHED_JOBS:
            return
        times = getattr(event, "scheduled_run_times", None) or [
            getattr(event, "scheduled_run_time", None)
        ]
        log.warning(
            "tick.overrun" if event.code == EVENT_JOB_MAX_INSTANCES else "tick.missed",
            job=event.job_id,
            skipped_run=_iso_or_none(times[-1] if times else None),
            tick_seconds=tick_seconds,
            reason="the previous run is still going"
            if event.code == EVENT_JOB_MAX_INSTANCES
            else "the scheduler woke up too late",
        )

    sched.add_listener(listener, EVENT_JOB_MAX_INSTANCES | EVENT_JOB_MISSED)


def _iso_or_none(when: Any) -> str | None:
    return when.isoformat() if isinstance(when, datetime) else None


def run_once(ticker: Ticker) -> dict[str, Any]:
    """One tick, in this thread (what `capdaemon tick --once` and the demo do)."""
    return ticker.tick().to_dict()
