"""Route lists, the per-request context handed to handlers, and body validation helpers."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request

from .auth import Identity, require
from .core import Backend
from .errors import SandboxApiError, validation
from .http import Fragments
from .render import RepoCache, Urls

Handler = Callable[..., Any]


@dataclass(frozen=True)
class Route:
    """One REST route: ``METHOD rule`` (werkzeug rule syntax) answered by ``handler``."""

    method: str
    rule: str
    handler: Handler


class RouteList:
    """One handler module's routes, in declaration order; the app composes the lists."""

    def __init__(self) -> None:
        self.routes: list[Route] = []

    def route(self, method: str, rule: str) -> Callable[[Handler], Handler]:
        """A decorator adding the handler to this list for ``METHOD rule``."""

        def deco(fn: Handler) -> Handler:
            self.routes.append(Route(method, rule, fn))
            return fn

        return deco

    def __iter__(self) -> Iterator[Route]:
        return iter(self.routes)


def template(rule: str) -> str:
    """``/repos/<owner>/<path:ref>`` -> ``/repos/{owner}/{ref}`` (counter keys)."""
    return re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule)


def compose(lists: Iterable[RouteList]) -> tuple[Map, dict[str, Handler]]:
    """A werkzeug Map of the given route lists (``METHOD template`` endpoint ids)."""
    rules = []
    handlers: dict[str, Handler] = {}
    for one in lists:
        for r in one:
            endpoint = f"{r.method} {template(r.rule)}"
            handlers[endpoint] = r.handler
            rules.append(Rule(r.rule, methods=[r.method], endpoint=endpoint, strict_slashes=False))
    return Map(rules, strict_slashes=False, merge_slashes=False), handlers


@dataclass
class Result:
    """A plain response from a handler."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Paged:
    """A list response to be paginated; ``wrap`` wraps as ``{"total_count", wrap: [...]}``."""

    items: list[Any]
    render: Callable[[Any], Any] | None = None
    wrap: str | None = None
    max_per_page: int = 100
    extra: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)


class Ctx:
    """Everything a handler needs about the current request."""

    def __init__(self, req: Request, b: Backend, ident: Identity, urls: Urls) -> None:
        self.req = req
        self.b = b
        self.ident = ident
        self.urls = urls
        self._body: Any = None
        self._cache: RepoCache | None = None
        self.fragments = Fragments()  # spliced into the response body by the app

    @property
    def cache(self) -> RepoCache:
        """Per-request rendering cache (repository and user objects encoded once)."""
        if self._cache is None:
            self._cache = RepoCache(self.b, self.urls, self.fragments)
        return self._cache

    @property
    def actor(self) -> str:
        """The login acting (``<slug>[bot]`` for installations); 401 if anonymous."""
        if self.ident.login is None:
            raise SandboxApiError(401, "Requires authentication")
        return self.ident.login

    def require(
        self,
        full: str,
        level: str = "read",
        category: str | None = None,
        app_level: str | None = None,
    ) -> str:
        """Check the caller's access to a repo (see auth.require)."""
        if level != "read" and self.ident.kind == "anonymous":
            self.b.repo(full)
            raise SandboxApiError(401, "Requires authentication")
        return require(self.b, self.ident, full, level, category, app_level)

    def json(self) -> Any:
        """The parsed JSON request body of any shape (None when empty; 400 if malformed)."""
        if self._body is None:
            raw = self.req.get_data(cache=True)
            if not raw.strip():
                return None
            try:
                self._body = json.loads(raw)
            except ValueError as exc:
                raise SandboxApiError(400, "Problems parsing JSON") from exc
        return self._body

    def body(self) -> dict[str, Any]:
        """The JSON request body as an object (400 Problems parsing JSON otherwise)."""
        data = self.json()
        if data is None:
            return {}
        if not isinstance(data, dict):
            raise SandboxApiError(400, "Problems parsing JSON")
        return dict(data)


_MISSING = object()


def field_of(
    body: dict[str, Any],
    name: str,
    typ: type | tuple[type, ...],
    resource: str,
    required: bool = False,
    default: Any = None,
    choices: tuple[Any, ...] | None = None,
) -> Any:
    """A typed body field; 422 Validation Failed (missing_field / invalid) when wrong."""
    value = body.get(name, _MISSING)
    if value is _MISSING or (value is None and required):
        if required:
            raise validation(resource, name, "missing_field")
        return default
    if value is None:
        return None
    if isinstance(value, bool) and typ in (int, str):
        raise validation(resource, name, "invalid")
    if not isinstance(value, typ):
        raise validation(resource, name, "invalid")
    if choices is not None and value not in choices:
        raise validation(resource, name, "invalid")
    return value
