"""The PRs page (a searchable table of classified PRs) and each PR's `why` story page."""

from __future__ import annotations

from collections.abc import Iterable

from capdaemon.commands._common import printable
from capdaemon.dashboard.html import esc, quadrant, table
from capdaemon.dashboard.readmodel import PRRow, ReadModel
from capdaemon.story import describe

PAGE_SIZE = 200


def search(rows: Iterable[PRRow], query: str) -> list[PRRow]:
    """Rows whose repo, number, title, author, head, quadrant, rules or action contain `query`."""
    words = query.lower().split()
    if not words:
        return list(rows)
    return [r for r in rows if all(w in r.haystack() for w in words)]


def render_table(
    model: ReadModel, query: str = "", page: int = 1, page_size: int | None = PAGE_SIZE
) -> str:
    """The PRs body: search form, count, table (one page of `page_size` rows; None: all)."""
    from capdaemon.dashboard.site import story_href

    rows = search(model.prs, query)
    total = len(rows)
    pages = 1
    if page_size is not None:
        pages = max(1, -(-total // page_size))
        page = min(max(1, page), pages)
        rows = rows[(page - 1) * page_size : page * page_size]
    body = (
        '<form method="get" action="prs.html" role="search">'
        f'<input type="search" id="q" name="q" value="{esc(query)}" '
        'placeholder="repo, number, title, author, quadrant, rule…" aria-label="search PRs"> '
        "<button>search</button></form>"
        f'<p><span id="shown">{len(rows)}</span> shown of <span id="matching">{total}</span> '
        f"matching ({len(model.prs)} classified PRs)"
        + (f"; page {page} of {pages}" if pages > 1 else "")
        + "</p>"
    )
    nav = []
    if page > 1:
        nav.append(f'<a href="prs.html?{_qs(query, page - 1)}">← newer</a>')
    if page < pages:
        nav.append(f'<a href="prs.html?{_qs(query, page + 1)}">older →</a>')
    cells = (
        [
            f'<a href="{esc(story_href(r.ref))}">{esc(r.repo)}</a>',
            f'<a href="{esc(story_href(r.ref))}" class="why">#{r.number}</a>',
            esc(r.title),
            esc(r.author),
            _head(r),
            quadrant(r.quadrant),
            esc(r.rules or "none"),
            esc(r.action),
            esc(r.ts[:19] + "Z" if len(r.ts) > 20 else r.ts),
        ]
        for r in rows
    )
    head = ("repo", "number", "title", "author", "head branch", "quadrant", "rules that voted")
    return (
        body
        + table((*head, "action", "time"), cells, id_="prs")
        + (f"<p>{' · '.join(nav)}</p>" if nav else "")
    )


def _head(r: PRRow) -> str:
    """The head branch name (escaped: its author chose it), else the head commit."""
    if r.branch:
        return f'<code class="branch">{esc(r.branch)}</code>'
    return f"<code>{esc(r.head[:10])}</code>"


def _qs(query: str, page: int) -> str:
    from urllib.parse import urlencode

    return esc(urlencode({"q": query, "page": page}))


def render_story(model: ReadModel, ref: str) -> str:
    """The `why` story of one PR: the same lines `capdaemon why` prints, escaped."""
    row = model.by_ref.get(ref)
    if row is None:
        return f"<p>nothing is known of {esc(ref)}</p>"
    try:
        records = model.story(ref)
    except Exception as exc:  # a log rewritten since start-up: say so, never a blank page
        return f'<div class="banner" role="alert">{esc(exc)}</div>'
    lines = [printable(line) for rec in records for line in describe(rec)]
    facts = table(
        ("title", "author", "quadrant", "head branch", "head", "state"),
        [
            [
                esc(row.title),
                esc(row.author),
                quadrant(row.quadrant),
                f"<code>{esc(row.branch)}</code>" if row.branch else "",
                f"<code>{esc(row.head)}</code>",
                esc(row.state),
            ]
        ],
        id_="pr-facts",
    )
    return (
        '<p><a href="../prs.html">← all PRs</a></p>'
        + facts
        + f"<h2>Story ({len(records)} records; as <code>capdaemon why {esc(ref)}</code>)</h2>"
        + f'<pre id="story">{esc(chr(10).join(lines))}</pre>'
    )
