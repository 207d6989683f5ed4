"""The sandbox's REST routes: every handler module's route list, composed in one place."""

from __future__ import annotations

import functools

from werkzeug.routing import Map

from . import (
    api_access,
    api_checks,
    api_contents,
    api_events,
    api_gitdata,
    api_issues,
    api_labels,
    api_meta,
    api_pulls,
    api_repos,
)
from .routing import Handler, RouteList, compose

ROUTE_LISTS: tuple[RouteList, ...] = (
    api_meta.ROUTES,
    api_access.ROUTES,
    api_repos.ROUTES,
    api_contents.ROUTES,
    api_checks.ROUTES,
    api_gitdata.ROUTES,
    api_issues.ROUTES,
    api_labels.ROUTES,
    api_pulls.ROUTES,
    api_events.ROUTES,
)


@functools.cache
def build_map() -> tuple[Map, dict[str, Handler]]:
    """The werkzeug Map of every route (built once per process)."""
    return compose(ROUTE_LISTS)
