"""A small REST client for the sandbox as one user: JSON over plain HTTP, following Link pages."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlencode

_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')


class RestError(RuntimeError):
    """A non-2xx answer: the status and GitHub's ``message``."""

    def __init__(self, method: str, url: str, status: int, message: str) -> None:
        super().__init__(f"{method} {url}: {status} {message}")
        self.status = status


class RestClient:
    """Calls the sandbox's REST API with one user's token (``Authorization: token ...``)."""

    def __init__(self, base_url: str, token: str, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _send(
        self, method: str, url: str, body: Mapping[str, Any] | None
    ) -> tuple[Any, dict[str, str]]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", f"token {self.token}")
        req.add_header("Accept", "application/vnd.github+json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
                headers = {k.lower(): v for k, v in resp.headers.items()}
        except urllib.error.HTTPError as exc:
            text = exc.read().decode("utf-8", "replace")
            try:
                message = str(json.loads(text).get("message", text))
            except (ValueError, AttributeError):
                message = text[:200]
            raise RestError(method, url, exc.code, message) from exc
        return (json.loads(raw) if raw.strip() else None), headers

    def call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """One request to ``path`` (relative to the base URL); the decoded JSON answer."""
        answer, _headers = self._send(method, f"{self.base_url}{path}", body)
        return answer

    def get(self, path: str, **params: str | int) -> Any:
        """GET ``path`` with query parameters."""
        query = f"?{urlencode(params)}" if params else ""
        return self.call("GET", f"{path}{query}")

    def post(self, path: str, body: Mapping[str, Any]) -> Any:
        """POST a JSON body to ``path``."""
        return self.call("POST", path, body)

    def pages(self, path: str, **params: str | int) -> Iterator[dict[str, Any]]:
        """Every item of a list endpoint, following ``Link: rel="next"`` across pages."""
        query = urlencode({"per_page": 100, **params})
        url: str | None = f"{self.base_url}{path}?{query}"
        while url is not None:
            items, headers = self._send("GET", url, None)
            yield from items
            found = _NEXT.search(headers.get("link", ""))
            url = found.group(1) if found else None
