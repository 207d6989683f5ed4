"""The PRs page (filter, sort, state, what each PR waits on), the merge queue, each PR's story."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlencode

from capdaemon.dashboard.html import esc, quadrant, table, when
from capdaemon.dashboard.links import story_href, web_url
from capdaemon.dashboard.prfacts import WAIT_KINDS
from capdaemon.dashboard.readmodel import QUADRANTS, PRRow, ReadModel
from capdaemon.story import describe

PAGE_SIZE = 200
STATES = ("open", "merged", "closed", "gone")
FILTERS = ("q", "repo", "state", "quadrant", "author", "waiting")
SORTS: dict[str, Callable[[PRRow], Any]] = {
    "time": lambda r: r.ts,
    "repo": lambda r: (r.repo, r.number),
    "number": lambda r: (r.number, r.repo),
    "state": lambda r: (r.state, r.ts),
    "quadrant": lambda r: (r.quadrant, r.ts),
    "author": lambda r: (r.author.lower(), r.ts),
}


def search(rows: Iterable[PRRow], query: str) -> list[PRRow]:
    """Rows whose repo, number, title, author, head, quadrant, rules or action contain `query`."""
    words = query.lower().split()
    if not words:
        return list(rows)
    return [r for r in rows if all(w in r.haystack() for w in words)]


def select(model: ReadModel, opts: Mapping[str, str]) -> list[PRRow]:
    """The rows the filters keep (search words, repo, state, quadrant, author, waiting kind),
    in the chosen order (`sort`, `order`: newest classification first by default)."""
    rows = search(model.prs, opts.get("q", ""))
    exact = {k: opts.get(k, "") for k in ("repo", "state", "quadrant")}
    author = opts.get("author", "").lower()
    kind = opts.get("waiting", "")
    rows = [
        r
        for r in rows
        if all(not v or getattr(r, k) == v for k, v in exact.items())
        and (not author or r.author.lower() == author)
        and (not kind or _waits_on(model, r, kind))
    ]
    key = SORTS.get(opts.get("sort", ""), SORTS["time"])
    default_desc = opts.get("sort", "time") in ("", "time")
    desc = opts.get("order", "desc" if default_desc else "asc") == "desc"
    if key is not SORTS["time"] or not desc:
        rows.sort(key=key, reverse=desc)
    return rows


def _waits_on(model: ReadModel, r: PRRow, kind: str) -> bool:
    waits = model.waiting(r)
    if kind == "nothing":
        return r.state == "open" and not waits
    return any(k == kind for k, _ in waits)


def waiting_cell(model: ReadModel, r: PRRow) -> str:
    """What the PR waits on, one line per thing; "—" for a PR that is not open."""
    waits = model.waiting(r)
    if not waits:
        return "merge queue" if r.state == "open" else '<span class="muted">—</span>'
    return "".join(
        f'<span class="wait" data-wait="{esc(k)}"><b>{esc(k)}</b>: {esc(v)}</span>'
        for k, v in waits
    )


def github_link(model: ReadModel, ref: str) -> str:
    """A link to the PR on GitHub (none when the API has no web UI)."""
    url = web_url(model.config, ref, "pull")
    if not url:
        return ""
    return f'<a class="gh" href="{esc(url)}" rel="noopener noreferrer">on GitHub</a>'


def _options(name: str, values: Iterable[str], chosen: str, label: str) -> str:
    opts = [f'<option value="">{esc(label)}: any</option>']
    opts += [
        f'<option value="{esc(v)}"{" selected" if v == chosen else ""}>{esc(v)}</option>'
        for v in values
    ]
    return f'<select name="{name}" aria-label="{esc(label)}">{"".join(opts)}</select>'


def _form(model: ReadModel, opts: Mapping[str, str], root: str) -> str:
    repos = sorted({r.repo for r in model.prs} | {rc.name for rc in model.config.repos})
    return (
        f'<form method="get" action="{root}prs.html" role="search" id="filters">'
        f'<input type="search" id="q" name="q" value="{esc(opts.get("q", ""))}" '
        'placeholder="repo, number, title, author, quadrant, rule…" aria-label="search PRs"> '
        + _options("repo", repos, opts.get("repo", ""), "repo")
        + _options("state", STATES, opts.get("state", ""), "state")
        + _options("quadrant", QUADRANTS, opts.get("quadrant", ""), "quadrant")
        + _options("waiting", ("nothing", *WAIT_KINDS), opts.get("waiting", ""), "waiting on")
        + f' <input type="text" name="author" value="{esc(opts.get("author", ""))}" '
        'placeholder="author" aria-label="author"> '
        + _options("sort", tuple(SORTS), opts.get("sort", ""), "sort by")
        + _options("order", ("asc", "desc"), opts.get("order", ""), "order")
        + " <button>filter</button></form>"
    )


def _qs(opts: Mapping[str, str], **change: object) -> str:
    merged = {k: v for k, v in opts.items() if v and k in (*FILTERS, "sort", "order")}
    merged.update({k: str(v) for k, v in change.items()})
    return esc(urlencode(merged))


def render_table(
    model: ReadModel,
    opts: Mapping[str, str] | str = "",
    page: int = 1,
    page_size: int | None = PAGE_SIZE,
    *,
    root: str = "",
) -> str:
    """The PRs body: filter form, count, table (one page of `page_size` rows; None: all)."""
    opts = {"q": opts} if isinstance(opts, str) else opts
    rows = select(model, opts)
    total = len(rows)
    pages = 1
    if page_size is not None:
        pages = max(1, -(-total // page_size))
        page = min(max(1, page), pages)
        rows = rows[(page - 1) * page_size : page * page_size]
    body = _form(model, opts, root) + (
        f'<p><span id="shown">{len(rows)}</span> shown of <span id="matching">{total}</span> '
        f"matching ({len(model.prs)} classified PRs)"
        + (f"; page {page} of {pages}" if pages > 1 else "")
        + "</p>"
    )
    nav = []
    if page > 1:
        nav.append(f'<a href="{root}prs.html?{_qs(opts, page=page - 1)}">← previous</a>')
    if page < pages:
        nav.append(f'<a href="{root}prs.html?{_qs(opts, page=page + 1)}">next →</a>')
    return (
        body
        + table(PR_HEAD, (_cells(model, r, root) for r in rows), id_="prs", scroll=True)
        + (f"<p>{' · '.join(nav)}</p>" if nav else "")
    )


PR_HEAD = (
    "repo",
    "number",
    "title",
    "author",
    "head branch",
    "state",
    "quadrant",
    "waiting on",
    "rules that voted",
    "action",
    "classified",
)


def _cells(model: ReadModel, r: PRRow, root: str) -> list[str]:
    story = esc(root + story_href(r.ref))
    return [
        f'<a href="{story}">{esc(r.repo)}</a>',
        f'<a href="{story}" class="why">#{r.number}</a> {github_link(model, r.ref)}',
        esc(r.title),
        esc(r.author),
        _head(r),
        f'<span class="state" data-state="{esc(r.state)}">{esc(r.state or "?")}</span>',
        quadrant(r.quadrant),
        waiting_cell(model, r),
        esc(r.rules or "none"),
        esc(r.action),
        when(r.ts),
    ]


def _head(r: PRRow) -> str:
    """The head branch name (escaped: its author chose it), else the head commit."""
    if r.branch:
        return f'<code class="branch">{esc(r.branch)}</code>'
    return f"<code>{esc(r.head[:10])}</code>"


def render_queue(model: ReadModel, root: str = "") -> str:
    """Open PRs with nothing to wait on (by repo as configured, then PR number); then how
    many open PRs wait on each thing."""
    ready = model.queue()
    cells = (
        [
            str(i),
            f'<a href="{esc(root + story_href(r.ref))}">{esc(r.ref)}</a> '
            + github_link(model, r.ref),
            esc(r.title),
            esc(r.author),
            quadrant(r.quadrant),
            when(r.ts),
        ]
        for i, r in enumerate(ready, 1)
    )
    waiting: dict[str, int] = {}
    for r in model.prs:
        if r.state == "open":
            for k, _ in model.waiting(r):
                waiting[k] = waiting.get(k, 0) + 1
    counts = (
        [f'<a href="{root}prs.html?state=open&amp;waiting={esc(k)}">{esc(k)}</a>', str(n)]
        for k, n in sorted(waiting.items(), key=lambda kv: WAIT_KINDS.index(kv[0]))
    )
    unprotected = [
        f"<li><code>{esc(r.config.name)}</code> ({esc(r.config.base)}): "
        f"{esc(r.protection.get('drift') or r.protection.get('missing'))}</li>"
        for r in model.repos
        if r.protection.get("drift") or r.protection.get("missing")
    ]
    note = (
        '<div class="banner" id="protection-note">Base branch protection is not as required '
        "(merges still go ahead; drift is an incident the breaker counts):<ul>"
        + "".join(unprotected)
        + "</ul></div>"
        if unprotected
        else ""
    )
    return (
        note
        + "<p>Open PRs the state shows nothing to wait on, by repo (as configured) and number: "
        "the next tick merges them once GitHub confirms the checks and mergeability.</p>"
        + table(("#", "PR", "title", "author", "quadrant", "classified"), cells, id_="queue")
        + "<h2>Open PRs that wait, by what they wait on</h2>"
        + table(("waiting on", "open PRs"), counts, id_="waiting-counts")
    )


def _kind(rec: Mapping[str, Any]) -> str:
    if "quadrant" in rec and "rules_fired" in rec:
        return "verdict"
    action = str(rec.get("action", ""))
    if action.startswith(("vote", "ballot", "one_tap")) or "vote" in action:
        return "vote"
    return "action"


def render_story(model: ReadModel, ref: str, root: str = "../") -> str:
    """The `why` story of one PR as a timeline: each verdict, vote and action, newest last,
    in the same words `capdaemon why` prints (escaped, control characters shown)."""
    row = model.by_ref.get(ref)
    if row is None:
        return f"<p>nothing is known of {esc(ref)}</p>"
    try:
        records = model.story(ref)
    except Exception as exc:  # a log rewritten since start-up: say so, never a blank page
        return f'<div class="banner" role="alert">{esc(exc)}</div>'
    facts = table(
        ("title", "author", "state", "quadrant", "waiting on", "head branch", "head", "GitHub"),
        [
            [
                esc(row.title),
                esc(row.author),
                esc(row.state),
                quadrant(row.quadrant),
                waiting_cell(model, row),
                f"<code>{esc(row.branch)}</code>" if row.branch else "",
                f"<code>{esc(row.head)}</code>",
                github_link(model, ref),
            ]
        ],
        id_="pr-facts",
        scroll=True,
    )
    items = []
    for rec in records:
        kind = _kind(rec)
        lines = "<br>".join(esc(line) for line in describe(rec))
        items.append(
            f'<li class="kind-{kind}" data-kind="{kind}"><span class="when">'
            f"{when(rec.get('ts'))} · {kind}</span><br>{lines}</li>"
        )
    timeline = f'<ol class="timeline" id="story">{"".join(items)}</ol>' if items else "<p>none</p>"
    return (
        f'<p><a href="{root}prs.html">← all PRs</a></p>'
        + facts
        + f"<h2>Timeline ({len(records)} records; as <code>capdaemon why {esc(ref)}</code>)</h2>"
        + timeline
    )
