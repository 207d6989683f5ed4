"""The dashboard's pages by path: one place that maps a path to its HTML (server and export)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from capdaemon.dashboard import overview, permissions, prs, trends
from capdaemon.dashboard.html import FAVICON, page, when
from capdaemon.dashboard.links import STORY_DIR, story_href, story_slug
from capdaemon.dashboard.readmodel import ReadModel

__all__ = ["STORY_DIR", "Page", "all_paths", "render", "story_href", "story_index", "story_slug"]
SHADOW_MARK = ' · <b class="bad" id="shadow-mode">shadow mode: capdaemon merges nothing</b>'
REFRESH_SECONDS = 60  # served pages reload themselves (the model is rebuilt when state changes)


@dataclass(frozen=True)
class Page:
    """A rendered response: status, content type and body."""

    status: int
    content_type: str
    body: str


def _frame(model: ReadModel, active: str, title: str, body: str, root: str, static: bool) -> str:
    note = f"read-only · state {model.state_dir} · built "
    return page(
        active=active,
        title=title,
        body=body,
        root=root,
        problems=[(p.file, p.message) for p in model.problems],
        note=note,
        note_html=when(model.now.isoformat())
        + (SHADOW_MARK if model.config.mode == "shadow" else ""),
        static=static,
        refresh=0 if static else REFRESH_SECONDS,
    )


# path → (title, body of (model, options, page number, root, static))
_Body = Callable[[ReadModel, Mapping[str, str], int, str, bool], str]
PAGES: dict[str, tuple[str, _Body]] = {
    "index.html": ("Overview", lambda m, o, n, root, static: overview.render(m, root)),
    "prs.html": (
        "Pull requests",
        lambda m, o, n, root, static: prs.render_table(
            m, o, n, None if static else prs.PAGE_SIZE, root=root
        ),
    ),
    "queue.html": ("Merge queue", lambda m, o, n, root, static: prs.render_queue(m, root)),
    "trends.html": (
        "Trends",
        lambda m, o, n, root, static: trends.render(m, o.get("range", ""), root),
    ),
    "agents.html": (
        "Agents and permissions",
        lambda m, o, n, root, static: permissions.render_agents(m),
    ),
    "repos.html": ("Repos", lambda m, o, n, root, static: permissions.render_repos(m)),
}


def render(
    model: ReadModel,
    path: str,
    *,
    query: str = "",
    page_no: int = 1,
    static: bool = False,
    slugs: dict[str, str] | None = None,
    params: Mapping[str, str] | None = None,
) -> Page:
    """The page at `path` (e.g. "index.html", "pr/acme_widgets_4.html"); 404 when unknown.

    Served pages link root-relative ("/prs.html"); the static export links relative to the
    file ("prs.html", "../prs.html") so it opens from file://."""
    html = "text/html; charset=utf-8"
    path = path.lstrip("/") or "index.html"
    root = "" if static else "/"
    opts = dict(params or {})
    if query:
        opts.setdefault("q", query)
    if path in PAGES:
        title, body_of = PAGES[path]
        body = body_of(model, opts, page_no, root, static)
        return Page(200, html, _frame(model, path, title, body, root, static))
    if path == "favicon.svg":
        return Page(200, "image/svg+xml", FAVICON)
    if path.startswith(f"{STORY_DIR}/") and path.endswith(".html"):
        slug = path[len(STORY_DIR) + 1 : -len(".html")]
        ref = (slugs if slugs is not None else story_index(model)).get(slug)
        if ref is not None:
            sroot = "../" if static else "/"
            body = prs.render_story(model, ref, sroot)
            return Page(200, html, _frame(model, "prs.html", f"Why {ref}", body, sroot, static))
    body = f'<p>No such page. <a href="{root}index.html">Back to the overview</a>.</p>'
    return Page(404, html, _frame(model, "", "Not found", body, root, static))


def story_index(model: ReadModel) -> dict[str, str]:
    """slug → PR reference, for every classified PR."""
    return {story_slug(r.ref): r.ref for r in model.prs}


def all_paths(model: ReadModel) -> Iterator[str]:
    """Every page of the site (for the static export)."""
    yield from (*PAGES, "favicon.svg")
    for r in model.prs:
        yield story_href(r.ref)
