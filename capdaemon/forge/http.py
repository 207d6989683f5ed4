"""The Forge's one HTTP choke point: PyGithub Requesters over our Transport, errors translated."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import requests
from github import Auth, Github, GithubException
from github.Requester import Requester

from capdaemon.forge.convert import _next_link, log
from capdaemon.forge.errors import (
    ForgeError,
    Incomplete,
    Transient,
    kind_for_status,
)
from capdaemon.forge.scrub import Scrubber
from capdaemon.forge.transport import Transport

Json = Any  # a decoded GitHub JSON answer: an object or a list, shaped by the endpoint
Params = dict[str, Any]  # query parameters (str, int or bool values)


class Http:
    """GitHub REST calls through PyGithub's Requester, our Transport underneath.

    PyGithub's Requester is not safe for concurrent requests (its one connection object keeps
    the verb/url/headers of the request being built between two calls), so each concurrent
    request borrows a Requester of its own; all share the Transport (ETag cache, retries, rate
    limits, counters) and the auth, so a 304 is a 304 whichever thread asks.
    """

    def __init__(
        self,
        gh: Github,
        transport: Transport,
        scrubber: Scrubber,
    ) -> None:
        self.gh = gh
        self.transport = transport
        self.scrubber = scrubber
        self._first: Requester = gh.requester
        self._free: list[Requester] = [self._first]
        self._all: list[Requester] = [self._first]
        self._lock = threading.Lock()

    @property
    def auth(self) -> Auth.Auth | None:
        """The auth every Requester of this client sends."""
        return self._first.auth

    def close(self) -> None:
        """Close HTTP connections."""
        self.gh.close()
        for rq in self._all[1:]:
            rq.close()

    @contextmanager
    def requester(self) -> Iterator[Requester]:
        """A Requester for this one request (reads may run in several threads at once)."""
        with self._lock:
            rq = self._free.pop() if self._free else None
        if rq is None:
            rq = self._first.withAuth(self._first.auth)
            mount(rq, self.transport)
            with self._lock:
                self._all.append(rq)
        try:
            yield rq
        finally:
            with self._lock:
                self._free.append(rq)

    @contextmanager
    def errors(self, what: str) -> Iterator[None]:
        """Turn PyGithub and requests failures inside into ForgeErrors (secrets scrubbed)."""
        try:
            yield
        except ForgeError:
            raise
        except GithubException as exc:
            raise self.translate(exc, what) from None
        except requests.RequestException as exc:
            raise Transient(self.scrubber.scrub(f"GitHub {what}: {type(exc).__name__}")) from None

    def translate(self, exc: GithubException, what: str) -> ForgeError:
        """The ForgeError for a GitHub error answer (a 401's token is dropped by the Transport)."""
        status: int | None = exc.status
        message = ""
        if isinstance(exc.data, dict):
            message = str(exc.data.get("message", ""))
        text = self.scrubber.scrub(f"GitHub {what}: {status} {message}".strip())
        return kind_for_status(status)(text, status=status)

    def req(
        self, verb: str, url: str, *, params: Params | None = None, body: Json = None
    ) -> tuple[dict[str, Any], Json]:
        """(headers, decoded body) of one request; any failure raises ForgeError."""
        with self.errors(f"{verb} {url.split('?')[0]}"), self.requester() as rq:
            return rq.requestJsonAndCheck(verb, url, parameters=params, input=body)

    def get(self, url: str, params: Params | None = None) -> Json:
        """The decoded body of a GET."""
        return self.req("GET", url, params=params)[1]

    def pages(
        self, url: str, params: Params | None = None, *, key: str | None = None
    ) -> list[Json]:
        """Every item of a paginated list (per_page=100); any failed page raises (ForgeError)."""
        items, _ = self.pages_partial(url, params, key=key, strict=True)
        return items

    def pages_partial(
        self,
        url: str,
        params: Params | None = None,
        *,
        key: str | None = None,
        strict: bool = False,
    ) -> tuple[list[Json], bool]:
        """(items, all read). A failed later page ends the walk with False (raises if strict)."""
        headers, data = self.req("GET", url, params={"per_page": 100, **(params or {})})
        items = list(data[key] if key else data)
        nxt = _next_link(headers.get("link"))
        while nxt:
            try:
                headers, data = self.req("GET", nxt)
            except ForgeError as exc:
                if strict:
                    raise Incomplete(f"{exc} (a later page of {url})", status=exc.status) from None
                log.warning("forge.page_failed", url=url, error=str(exc))
                return items, False
            items.extend(data[key] if key else data)
            nxt = _next_link(headers.get("link"))
        return items, True


def mount(requester: Requester, transport: Transport) -> None:
    """Mount our Transport on every requests.Session this PyGithub Requester creates.

    PyGithub 2.x builds its session inside a connection class chosen per Requester; there is no
    public hook, so we wrap that (name-mangled) attribute of this one Requester only — no global
    injection, no change for other Requesters in the process.
    """
    attr = "_Requester__connectionClass"
    base_cls: Callable[..., Any] | None = getattr(requester, attr, None)
    if base_cls is None:
        raise ForgeError("unsupported PyGithub: Requester has no connection class to wrap")

    def factory(*args: Any, **kwargs: Any) -> Any:
        cnx = base_cls(*args, **kwargs)
        cnx.session.mount("http://", transport)
        cnx.session.mount("https://", transport)
        return cnx

    setattr(requester, attr, factory)
