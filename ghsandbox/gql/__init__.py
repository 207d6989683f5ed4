"""The sandbox's GraphQL endpoint (``POST /graphql``, ``/api/graphql``) on GitHub's own schema."""

from __future__ import annotations

from .endpoint import GRAPHQL_LIMIT, GRAPHQL_PATHS, GraphqlEndpoint, fault_path
from .schema import SCHEMA_PATH, github_schema

__all__ = [
    "GRAPHQL_LIMIT",
    "GRAPHQL_PATHS",
    "SCHEMA_PATH",
    "GraphqlEndpoint",
    "fault_path",
    "github_schema",
]
