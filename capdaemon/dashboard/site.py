"""The dashboard's pages by path: one place that maps a path to its HTML (server and export)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from capdaemon.dashboard import overview, permissions, prs
from capdaemon.dashboard.html import FAVICON, page
from capdaemon.dashboard.readmodel import ReadModel

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
STORY_DIR = "pr"


def story_slug(ref: str) -> str:
    """`owner/repo#N` → a file-name-safe slug (`owner_repo_N`)."""
    repo, _, number = ref.rpartition("#")
    owner, _, name = repo.partition("/")
    return _UNSAFE.sub("-", f"{owner}_{name}_{number}").lstrip(".") or "pr"


def story_href(ref: str) -> str:
    """The story page of a PR, relative to the dashboard's root."""
    return f"{STORY_DIR}/{story_slug(ref)}.html"


@dataclass(frozen=True)
class Page:
    """A rendered response: status, content type and body."""

    status: int
    content_type: str
    body: str


def _frame(model: ReadModel, active: str, title: str, body: str, root: str, static: bool) -> str:
    note = f"read-only · state {model.state_dir} · built {model.now:%Y-%m-%d %H:%M:%S}Z"
    return page(
        active=active,
        title=title,
        body=body,
        root=root,
        problems=[(p.file, p.message) for p in model.problems],
        note=note,
        static=static,
    )


def render(
    model: ReadModel,
    path: str,
    *,
    query: str = "",
    page_no: int = 1,
    static: bool = False,
    slugs: dict[str, str] | None = None,
) -> Page:
    """The page at `path` (e.g. "index.html", "pr/acme_widgets_4.html"); 404 when unknown."""
    html = "text/html; charset=utf-8"
    path = path.lstrip("/") or "index.html"
    if path == "index.html":
        return Page(200, html, _frame(model, path, "Overview", overview.render(model), "", static))
    if path == "prs.html":
        size = None if static else prs.PAGE_SIZE
        body = prs.render_table(model, query, page_no, size)
        return Page(200, html, _frame(model, path, "Pull requests", body, "", static))
    if path == "agents.html":
        body = permissions.render_agents(model)
        return Page(200, html, _frame(model, path, "Agents and permissions", body, "", static))
    if path == "repos.html":
        body = permissions.render_repos(model)
        return Page(200, html, _frame(model, path, "Repos", body, "", static))
    if path == "favicon.svg":
        return Page(200, "image/svg+xml", FAVICON)
    if path.startswith(f"{STORY_DIR}/") and path.endswith(".html"):
        slug = path[len(STORY_DIR) + 1 : -len(".html")]
        ref = (slugs if slugs is not None else story_index(model)).get(slug)
        if ref is not None:
            body = prs.render_story(model, ref)
            return Page(200, html, _frame(model, "prs.html", f"Why {ref}", body, "../", static))
    body = "<p>No such page.</p>"
    return Page(404, html, _frame(model, "", "Not found", body, "", static))


def story_index(model: ReadModel) -> dict[str, str]:
    """slug → PR reference, for every classified PR."""
    return {story_slug(r.ref): r.ref for r in model.prs}


def all_paths(model: ReadModel) -> Iterator[str]:
    """Every page of the site (for the static export)."""
    yield from ("index.html", "prs.html", "agents.html", "repos.html", "favicon.svg")
    for r in model.prs:
        yield story_href(r.ref)
