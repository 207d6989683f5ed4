"""``POST /graphql``: authenticate, validate against GitHub's schema, price, rate-limit, execute."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Mapping
from typing import Any

from graphql import (
    FragmentDefinitionNode,
    GraphQLError,
    OperationDefinitionNode,
    OperationType,
    execute_sync,
    parse,
    validate,
)
from graphql.execution.values import get_variable_values
from werkzeug.wrappers import Request, Response

from ..auth import ANONYMOUS, Identity, identify
from ..core import Backend
from ..errors import SandboxApiError
from ..fidelity import secondary_refusal, settings
from ..http import Counters, error_body, json_response, rate_headers, request_id
from .cost import plan_query
from .resolvers import GqlContext, served, served_schema, type_of

GRAPHQL_PATHS = ("/graphql", "/api/graphql")
GRAPHQL_LIMIT = 5000  # points per hour, GitHub's budget for users and installations
AUTH_DOC = (
    "https://docs.github.com/graphql/guides/forming-calls-with-graphql#authenticating-with-graphql"
)
RATE_DOC = (
    "https://docs.github.com/graphql/overview/rate-limits-and-node-limits-for-the-graphql-api"
)


_OPERATION = re.compile(r"\b(?:query|mutation|subscription)\s+([_A-Za-z][_0-9A-Za-z]*)")


def fault_path(req: Request, path: str) -> str:
    """What scripted faults match for a GraphQL request: ``/graphql#OperationName`` (the
    operation named in the body, else the first named in the query; ``/graphql#`` when none),
    so a fault can target one query (``graphql#CapdaemonComments$``) or all (``^/graphql``)."""
    try:
        body = json.loads(req.get_data(cache=True) or b"null")
    except ValueError:
        body = None
    name = ""
    if isinstance(body, dict):
        if isinstance(body.get("operationName"), str):
            name = body["operationName"]
        elif isinstance(body.get("query"), str):
            m = _OPERATION.search(body["query"])
            name = m.group(1) if m else ""
    return f"{path}#{name}"


def _format(err: GraphQLError) -> dict[str, Any]:
    """GitHub's error shape: ``type`` at the top level beside message, locations and path."""
    out: dict[str, Any] = dict(err.formatted)
    ext = dict(out.pop("extensions", None) or {})
    if "type" in ext:
        out = {"type": ext.pop("type"), **out}
    if ext:
        out["extensions"] = ext
    return out


class GraphqlEndpoint:
    """Answers GraphQL requests from the same backend state the REST handlers use.

    The budget is GitHub's: 5,000 points an hour per token identity, kept apart from the
    REST budget; each query costs what GitHub's formula says (see ``cost``). Requests are
    recorded in the shared counters as ``POST /graphql <operation name>`` (never "counted": that
    column is the REST budget); ``points`` adds up the cost per identity.
    """

    def __init__(self, backend: Backend, counters: Counters) -> None:
        self.b = backend
        self.counters = counters
        self._lock = threading.Lock()
        self.points: dict[str, int] = {}

    def total_points(self) -> int:
        """GraphQL points spent since the last :meth:`reset`."""
        with self._lock:
            return sum(self.points.values())

    def reset(self) -> None:
        """Forget the points tally (the rate-limit windows are the limiter's)."""
        with self._lock:
            self.points.clear()

    def __call__(self, req: Request, delay: float = 0.0) -> Response:
        """Serve one request (the app has applied any scripted fault already, but for a
        `delay`: slowness while the request is in flight)."""
        ident: Identity = ANONYMOUS
        rid = request_id()
        op_name: list[str] = []  # set by _serve once the operation is known
        headers: dict[str, str] = {}
        entered: str | None = None
        cfg = settings(self.b.data)
        try:
            ident = identify(self.b, req.headers.get("Authorization"))
            refusal = self.b.secondary.enter(ident.rate_key, cfg)
            if refusal is not None:
                raise secondary_refusal(refusal, headers, cfg, rid)
            entered = ident.rate_key
            if delay > 0:
                time.sleep(delay)
            resp = self._serve(req, ident, rid, op_name, cfg)
        except SandboxApiError as err:
            doc = err.extra.get("doc")
            body = error_body(err.status, err.message, err.errors, doc)
            resp = json_response(err.status, body, headers)
        finally:
            if entered is not None:
                self.b.secondary.exit(entered)
        resp.headers["X-GitHub-Request-Id"] = rid
        resp.headers["X-GitHub-Media-Type"] = "github.v4; format=json"
        # "counted" in the shared counters means the REST budget; GraphQL's points are apart
        status = resp.status_code
        label = " ".join(["POST /graphql", *op_name])
        self.counters.record(label, ident.rate_key, counted=False, status=status)
        return resp

    def _serve(
        self, req: Request, ident: Identity, rid: str, op_name: list[str], cfg: dict[str, float]
    ) -> Response:
        if req.method != "POST":
            return json_response(404, error_body(404, "Not Found"))
        if ident.kind == "anonymous":
            return json_response(
                401,
                error_body(401, "This endpoint requires you to be authenticated.", doc=AUTH_DOC),
            )
        try:
            body = json.loads(req.get_data() or b"null")
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("query"), str):
            return json_response(400, error_body(400, "Problems parsing JSON"))
        variables = body.get("variables") or {}
        wanted = body.get("operationName")
        if not isinstance(variables, dict) or not isinstance(wanted, str | None):
            return json_response(400, error_body(400, "Problems parsing JSON"))
        schema = served_schema()
        try:
            doc = parse(body["query"])
        except GraphQLError as err:
            return self._errors([err])
        errors = validate(schema, doc)
        if errors:
            return self._errors(errors)
        ops = [d for d in doc.definitions if isinstance(d, OperationDefinitionNode)]
        chosen = [o for o in ops if wanted is None or (o.name and o.name.value == wanted)]
        if len(chosen) != 1:
            what = f"operation named '{wanted}'" if wanted else "operationName for several"
            return self._errors([GraphQLError(f"Must provide an {what} operations.")])
        op = chosen[0]
        if op.name:
            op_name.append(op.name.value)
        coerced = get_variable_values(schema, op.variable_definitions or (), variables)
        if isinstance(coerced, list):
            return self._errors(coerced)
        fragments: Mapping[str, FragmentDefinitionNode] = {
            d.name.value: d for d in doc.definitions if isinstance(d, FragmentDefinitionNode)
        }
        plan = plan_query(schema, op, fragments, coerced, served)
        if plan.errors:
            return self._errors(plan.errors)
        if ident.kind != "anonymous":  # GitHub's secondary limit: points a minute, apart from REST
            mutation = op.operation is OperationType.MUTATION
            now = self.b.clock.window_time()
            refusal = self.b.secondary.charge_graphql(ident.rate_key, mutation, now, cfg)
            if refusal is not None:
                refused: dict[str, str] = {}
                over = secondary_refusal(refusal, refused, cfg, rid)
                body = error_body(over.status, over.message, doc=over.extra.get("doc"))
                return json_response(over.status, body, refused)
        bucket = self.b.limiter.bucket(f"{ident.rate_key}:graphql", GRAPHQL_LIMIT)
        headers = rate_headers(bucket, "graphql")
        if bucket.used + plan.cost > bucket.limit:
            who = (
                f"installation ID {ident.installation_id}"
                if ident.kind == "installation"
                else f"user {ident.login}"
            )
            body_out = {
                "errors": [
                    {
                        "type": "RATE_LIMITED",
                        "message": f"API rate limit exceeded for {who}. If you reach out to "
                        f"GitHub Support for help, please include the request ID {rid}.",
                    }
                ],
                "documentation_url": RATE_DOC,
            }
            return json_response(403, body_out, headers)
        with self._lock:
            bucket.used += plan.cost
            self.points[ident.rate_key] = self.points.get(ident.rate_key, 0) + plan.cost
        ctx = GqlContext(self.b, ident, bucket, plan.cost, plan.nodes)
        with self.b.lock:
            result = execute_sync(
                schema,
                doc,
                context_value=ctx,
                variable_values=variables,
                operation_name=wanted,
                type_resolver=type_of,
            )
        out: dict[str, Any] = {"data": result.data}
        if result.errors:
            out["errors"] = [_format(e) for e in result.errors]
        return json_response(200, out, rate_headers(bucket, "graphql"))

    def _errors(self, errors: list[GraphQLError]) -> Response:
        """A query GitHub refuses before running it: 200 with ``errors`` and no ``data``."""
        return json_response(200, {"errors": [_format(e) for e in errors]})
