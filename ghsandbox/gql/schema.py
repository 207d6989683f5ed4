"""GitHub's published GraphQL schema, built once per process (it takes seconds) on first use."""

from __future__ import annotations

import threading
from pathlib import Path

from graphql import GraphQLSchema, build_ast_schema, parse

SCHEMA_PATH = Path(__file__).with_name("schema.graphql")

_lock = threading.Lock()
_built: GraphQLSchema | None = None


def github_schema() -> GraphQLSchema:
    """The schema from ``schema.graphql`` (no resolvers; see ``resolvers.served_schema``).

    The published SDL repeats two field definitions, which graphql-core's SDL validation
    rejects, hence ``assume_valid_sdl``; the built schema itself validates.
    """
    global _built
    with _lock:
        if _built is None:
            doc = parse(SCHEMA_PATH.read_text(encoding="utf-8"), no_location=True)
            _built = build_ast_schema(doc, assume_valid_sdl=True)
        return _built


def warm_in_background() -> None:
    """Start building the schema in a daemon thread, so the first query does not wait long."""
    if _built is None:
        threading.Thread(target=github_schema, name="graphql-schema", daemon=True).start()
