"""The Agents-and-permissions page and the Repos page (capabilities, burn-in, protection)."""

from __future__ import annotations

from collections.abc import Iterable

from capdaemon.dashboard.html import esc, table, when
from capdaemon.dashboard.readmodel import ReadModel, TaskRow
from capdaemon.decide.burnin import BurnInStatus
from capdaemon.stores.policystate import PolicySummary
from capdaemon.timefmt import utc_iso


def _list(items: Iterable[str]) -> str:
    items = list(items)
    if not items:
        return '<span class="muted">none</span>'
    return "<br>".join(f"<code>{esc(i)}</code>" for i in items)


def _task_row(t: TaskRow) -> list[str]:
    """One task's capability as table cells (a tampered or unreadable one: its reason)."""
    s = t.task.snapshot
    esc_open = sum(1 for e in t.escalations if e.open)
    escal = f"{len(t.escalations)} ({esc_open} open)" if t.escalations else "0"
    if s is None:
        return (
            [esc(t.task.task_id), f'<span class="bad">{esc(t.task.state)}</span>']
            + [esc(t.task.reason)]
            + [""] * 6
            + [str(t.violations), escal]
        )
    c = s.capability
    binding = (
        f"agents: {_list(c.agents)}<br>branches: {_list(c.branches)}"
        if c.bound
        else '<span class="muted">unbound</span>'
    )
    return [
        esc(t.task.task_id) + (f"<br>{esc(c.title)}" if c.title else ""),
        esc(t.task.state),
        "legacy (no scope)" if c.legacy else _list(c.paths),
        "" if c.legacy else _list(c.forbidden_paths),
        "" if c.legacy else _list(c.commands),
        esc(f"{c.merge_policy} (level {c.level})"),
        esc(f"{c.ttl_hours} h, expires ") + when(utc_iso(s.expires_at)),
        binding,
        f"<code>{esc(s.sha256[:16])}…</code>",
        str(t.violations),
        escal,
    ]


def render_agents(model: ReadModel) -> str:
    """Agent identities with their burn-in clocks, then each task's capability."""
    days = model.config.burn_in_days
    agents = table(
        ("agent", "in registry", "status", "first seen", "clock start", "days left", "rejections"),
        (
            [
                esc(a.agent_id),
                "yes" if model.config.registry.knows(*a.agent_id.split("/", 1)) else "no",
                "hard-block (promoted)" if a.status is BurnInStatus.HARD_BLOCK else "burn-in",
                when(utc_iso(a.first_seen)),
                when(utc_iso(a.clock_start)),
                f"{a.days_left(model.now, days):.1f}",
                str(a.rejections),
            ]
            for a in model.agents
        ),
        id_="agents",
    )
    rows = [_task_row(t) for t in model.tasks]
    tasks = table(
        (
            "task",
            "state",
            "allowed paths",
            "forbidden paths",
            "commands",
            "merge policy",
            "TTL / expiry",
            "bound to",
            "snapshot hash",
            "scope violations",
            "escalations",
        ),
        rows,
        id_="tasks",
        scroll=True,
    )
    escalations = table(
        ("when", "task", "layer", "what was out of scope", "why", "state"),
        (
            [
                when(e.when),
                esc(e.task),
                esc(e.layer),
                _list(e.what),
                "<br>".join(esc(w) for w in e.why),
                "resolved" if e.resolved else ("owners notified" if e.notified else "open"),
            ]
            for t in model.tasks
            for e in t.escalations
        ),
        id_="escalations",
        scroll=True,
    )
    registry = table(
        ("tool", "models", "trust"),
        (
            [esc(a.tool), _list(a.models) if a.models else "any", esc(a.trust)]
            for a in model.config.registry.agents
        ),
        id_="registry",
    )
    return (
        f"<h2>Agent identities seen (burn-in {days:g} days)</h2>"
        + agents
        + "<h2>Agent registry (config)</h2>"
        + registry
        + "<h2>Task capabilities</h2>"
        + tasks
        + "<h2>Escalations (scope violations refused by the local guard)</h2>"
        + escalations
    )


def render_repos(model: ReadModel) -> str:
    """Each supervised repo: protection as last seen, required and extra checks, its policy."""
    cfg = model.config
    app = cfg.canonical_app or "?"
    out = []
    for r in model.repos:
        rc, p = r.config, r.protection
        if not p:
            prot = '<span class="muted">not checked yet</span>'
        elif p.get("missing") or p.get("drift"):
            prot = f'<span class="bad">{esc(p.get("missing") or p.get("drift"))}</span>'
        else:
            prot = '<span class="ok">as required</span>'
        checks = [f"L1.C3 (capdaemon's own check, App {esc(app)} id {esc(cfg.canonical_app_id)})"]
        checks += [_check(c.context, c.app_id) for c in rc.extra_checks]
        pol = r.policy
        if pol is not None:
            checks += [_check(c, a) + " (from .capdaemon.yml)" for c, a in pol.extra_checks]
        policy = (
            f"base <code>{esc(rc.base)}</code>, merge method {esc(rc.merge_method)}, "
            f"capability required: {'yes' if rc.require_capability else 'no'}<br>"
            f"owners: {_list(cfg.owners)}<br>"
            f"this repo's extra owners: {_list(rc.owners)}<br>"
            f"blocking labels: {_list(rc.blocking_labels)}<br>" + _repo_file(rc.base, pol)
        )
        if r.policy_errors:
            policy += "<br>" + "<br>".join(
                f'<span class="bad">{esc(e)}</span>' for e in r.policy_errors[-3:]
            )
        out.append([f"<code>{esc(rc.name)}</code>", prot, "<br>".join(checks), policy])
    return table(
        ("repo", "protection / rulesets", "required checks", "effective policy"), out, id_="repos"
    )


def _check(context: str, app_id: int | None) -> str:
    return f"{esc(context)} — " + (
        f"App id {esc(app_id)}" if app_id else "any GitHub App (never a status)"
    )


def _repo_file(base: str, pol: PolicySummary | None) -> str:
    """What the base branch's .capdaemon.yml adds, as the daemon last read it."""
    where = f"base branch <code>{esc(base)}</code>'s <code>.capdaemon.yml</code>"
    if pol is None:
        return f'{where}: <span class="muted">not read by a tick yet</span>'
    head = f"{where} (policy hash <code>{esc(pol.policy_hash[:12])}</code>)"
    if pol.error is not None:
        return f'{head}: <span class="bad">does not parse, PRs are D: {esc(pol.error)}</span>'
    if not pol.present:
        return f'{head}: <span class="muted">none (or empty) on the branch, nothing added</span>'
    added = [
        ("owners", pol.owners),
        ("blocking labels", pol.blocking_labels),
        ("extra checks", tuple(c for c, _ in pol.extra_checks)),
        ("critical globs", pol.critical_globs),
        ("irreversible globs", pol.irreversible_globs),
        ("always-D globs", pol.always_d_globs),
    ]
    lines = [f"+ {label}: {_list(items)}" for label, items in added if items]
    body = "<br>".join(lines) if lines else '<span class="muted">adds nothing</span>'
    return f'{head} adds:<br><span class="repo-policy">{body}</span>'
