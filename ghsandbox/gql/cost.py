"""A static pass over a validated query: unserved fields, pagination limits, GitHub's cost formula.

GitHub's formula (docs: "Rate limits and node limits for the GraphQL API"): add up the
number of requests needed to fulfil each connection in the query, assuming every
``first``/``last`` is reached (a connection nested in a ``first: 100`` connection is
fetched 100 times), divide by 100 and round to the nearest whole number; the minimum is 1.
The node count multiplies the page sizes down each path and may not exceed 500,000.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLInterfaceType,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    get_named_type,
)
from graphql.execution.values import get_argument_values

MAX_PAGE = 100
MAX_NODES = 500_000

Served = Callable[[str, str], bool]


@dataclass
class Plan:
    """What the static pass found: the cost in points, the node count, and any errors."""

    cost: int = 1
    nodes: int = 0
    requests: int = 0
    errors: list[GraphQLError] = field(default_factory=list)


def _is_connection(parent: GraphQLObjectType | GraphQLInterfaceType, name: str) -> bool:
    fdef = parent.fields[name]
    target = get_named_type(fdef.type)
    return target.name.endswith("Connection") and ("first" in fdef.args or "last" in fdef.args)


def plan_query(
    schema: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: Mapping[str, FragmentDefinitionNode],
    variables: Mapping[str, Any],
    served: Served,
) -> Plan:
    """Walk ``operation`` (already validated against ``schema``) and price it."""
    plan = Plan()
    root = schema.get_root_type(operation.operation)
    if root is None:  # validation has rejected this already
        return plan

    def walk(
        sel: SelectionSetNode,
        parent: GraphQLObjectType | GraphQLInterfaceType,
        mult: int,
        path: tuple[str, ...],
        seen: frozenset[str],
    ) -> None:
        for node in sel.selections:
            if isinstance(node, FieldNode):
                name = node.name.value
                if name.startswith("__"):
                    continue
                key = node.alias.value if node.alias else name
                here = (*path, key)
                if not served(parent.name, name):
                    plan.errors.append(
                        GraphQLError(
                            f"Field '{name}' on type '{parent.name}' is not served by the "
                            "sandbox (it serves the part of GitHub's schema capdaemon uses)",
                            node,
                            path=list(here),
                            extensions={"type": "SANDBOX_UNSERVED_FIELD"},
                        )
                    )
                    continue
                fdef = parent.fields[name]
                child_mult = mult
                if _is_connection(parent, name):
                    args = get_argument_values(fdef, node, dict(variables))
                    size = args.get("first") if args.get("first") is not None else args.get("last")
                    if size is None:
                        plan.errors.append(
                            GraphQLError(
                                f"You must provide a `first` or `last` value to properly "
                                f"paginate the `{name}` connection.",
                                node,
                                path=list(here),
                                extensions={"type": "MISSING_PAGINATION_BOUNDARIES"},
                            )
                        )
                        continue
                    if not 0 <= int(size) <= MAX_PAGE:
                        which = "first" if args.get("first") is not None else "last"
                        plan.errors.append(
                            GraphQLError(
                                f"Requesting {size} records on the `{name}` connection exceeds "
                                f"the `{which}` limit of {MAX_PAGE} records.",
                                node,
                                path=list(here),
                                extensions={"type": "EXCESSIVE_PAGINATION"},
                            )
                        )
                        continue
                    plan.requests += mult
                    child_mult = mult * int(size)
                    plan.nodes += child_mult
                if node.selection_set is not None:
                    target = get_named_type(fdef.type)
                    if isinstance(target, GraphQLObjectType | GraphQLInterfaceType):
                        walk(node.selection_set, target, child_mult, here, seen)
                    else:  # a union: only fragments (and __typename) select from it
                        walk_union(node.selection_set, child_mult, here, seen)
            else:
                walk_fragment(node, parent, mult, path, seen)

    def walk_union(
        sel: SelectionSetNode, mult: int, path: tuple[str, ...], seen: frozenset[str]
    ) -> None:
        for node in sel.selections:
            if not isinstance(node, FieldNode):
                walk_fragment(node, None, mult, path, seen)

    def walk_fragment(
        node: Any,
        parent: GraphQLObjectType | GraphQLInterfaceType | None,
        mult: int,
        path: tuple[str, ...],
        seen: frozenset[str],
    ) -> None:
        if isinstance(node, InlineFragmentNode):
            cond = node.type_condition
            sel = node.selection_set
        elif isinstance(node, FragmentSpreadNode):
            name = node.name.value
            if name in seen or name not in fragments:
                return
            seen = seen | {name}
            cond = fragments[name].type_condition
            sel = fragments[name].selection_set
        else:
            return
        target = schema.get_type(cond.name.value) if cond is not None else parent
        if isinstance(target, GraphQLObjectType | GraphQLInterfaceType):
            walk(sel, target, mult, path, seen)
        elif target is not None:
            walk_union(sel, mult, path, seen)

    walk(operation.selection_set, root, 1, (), frozenset())
    if plan.nodes > MAX_NODES:
        plan.errors.append(
            GraphQLError(
                f"This query requests up to {plan.nodes:,} possible nodes which exceeds the "
                f"maximum limit of {MAX_NODES:,}.",
                operation,
                extensions={"type": "MAX_NODE_LIMIT_EXCEEDED"},
            )
        )
    plan.cost = max(1, (plan.requests + 50) // 100)
    return plan
