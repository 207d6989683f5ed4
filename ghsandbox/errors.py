"""GitHub-style API errors raised by the sandbox's domain, and the list filters that raise them."""

from __future__ import annotations

from typing import Any


class SandboxApiError(Exception):
    """A GitHub-style API error raised by the domain layer (the app renders it as JSON)."""

    def __init__(
        self, status: int, message: str, errors: list[dict[str, Any]] | None = None, **extra: Any
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors
        self.extra = extra


def not_found() -> SandboxApiError:
    """GitHub's 404."""
    return SandboxApiError(404, "Not Found")


def validation(
    resource: str, field: str, code: str = "missing_field", message: str | None = None
) -> SandboxApiError:
    """GitHub's 422 Validation Failed with one error entry."""
    err: dict[str, Any] = {"resource": resource, "field": field, "code": code}
    if message:
        err["message"] = message
    return SandboxApiError(422, "Validation Failed", errors=[err])


def filter_state(items: list[dict[str, Any]], state: str, resource: str) -> list[dict[str, Any]]:
    """The `state` filter of GitHub's issue and pull lists (open, closed, all; else 422)."""
    if state not in ("open", "closed", "all"):
        raise validation(resource, "state", "invalid")
    return items if state == "all" else [i for i in items if i["state"] == state]


def sort_items(
    items: list[dict[str, Any]],
    keys: dict[str, Any],
    sort: str,
    reverse: bool,
    resource: str,
) -> None:
    """Sort a list in place by one of GitHub's named sort keys (an unknown one is a 422)."""
    if sort not in keys:
        raise validation(resource, "sort", "invalid")
    items.sort(key=keys[sort], reverse=reverse)
