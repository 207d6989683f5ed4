"""A GitHub-compatible REST server on loopback backed by real git repositories (tests, demo)."""

from __future__ import annotations

from .cli import cli_main
from .client import SandboxAdmin
from .errors import SandboxApiError
from .gittypes import CommitSpec, Person
from .seed import SeedError, load_seed
from .server import Sandbox
from .store import StoreError

__all__ = [
    "CommitSpec",
    "Person",
    "Sandbox",
    "SandboxAdmin",
    "SandboxApiError",
    "SeedError",
    "StoreError",
    "cli_main",
    "load_seed",
]
