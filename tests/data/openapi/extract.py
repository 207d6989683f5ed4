"""Extract response schemas of chosen operations from @octokit/openapi (arg: SPEC.json)."""

import json
import re
import sys
from pathlib import Path

SRC = Path(sys.argv[1] if len(sys.argv) > 1 else "package/generated/api.github.com.json")
OUT = Path(__file__).resolve().parent
OPS = [
    "users/get-authenticated",
    "users/get-by-username",
    "apps/get-authenticated",
    "apps/list-installations",
    "apps/create-installation-access-token",
    "apps/get-repo-installation",
    "repos/get",
    "repos/create-for-authenticated-user",
    "repos/create-in-org",
    "pulls/list",
    "pulls/get",
    "pulls/create",
    "pulls/update",
    "pulls/list-files",
    "pulls/list-commits",
    "pulls/merge",
    "issues/list-for-repo",
    "issues/get",
    "issues/create",
    "issues/update",
    "issues/list-comments",
    "issues/create-comment",
    "issues/update-comment",
    "issues/get-comment",
    "reactions/list-for-issue",
    "reactions/create-for-issue",
    "reactions/list-for-issue-comment",
    "reactions/create-for-issue-comment",
    "issues/add-labels",
    "issues/remove-label",
    "issues/list-labels-on-issue",
    "issues/create-label",
    "issues/get-label",
    "issues/list-labels-for-repo",
    "issues/list-events",
    "checks/create",
    "checks/update",
    "checks/get",
    "checks/list-for-ref",
    "repos/create-commit-status",
    "repos/get-combined-status-for-ref",
    "repos/list-commit-statuses-for-ref",
    "repos/compare-commits",
    "repos/get-content",
    "git/get-ref",
    "git/create-ref",
    "git/update-ref",
    "git/list-matching-refs",
    "git/get-commit",
    "git/create-commit",
    "git/get-tree",
    "git/create-tree",
    "git/get-blob",
    "git/create-blob",
    "repos/get-commit",
    "repos/get-branch",
    "repos/get-branch-protection",
    "repos/update-branch-protection",
    "repos/get-collaborator-permission-level",
    "rate-limit/get",
    "repos/list-branches",
    "repos/list-collaborators",
    "repos/get-branch-rules",
    "repos/get-repo-rulesets",
    "repos/get-repo-ruleset",
    "repos/create-repo-ruleset",
    "activity/list-repo-events",
]
# Error documents (components/schemas) every 4xx body is checked against.
ERRORS = ["basic-error", "validation-error"]


def resolve_local(spec: dict, ref: str) -> dict:
    """Follow a local ``#/...`` reference."""
    node = spec
    for part in ref.lstrip("#/").split("/"):
        node = node[part]
    return node


def convert(spec: dict, node: object, defs: dict) -> object:
    """OpenAPI 3.0 -> JSON Schema 2020-12: nullable, $ref to components/schemas -> $defs."""
    if isinstance(node, list):
        return [convert(spec, x, defs) for x in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        ref = node["$ref"]
        m = re.match(r"#/components/schemas/(.+)$", ref)
        if m:
            name = m.group(1)
            if name not in defs:
                defs[name] = None
                defs[name] = convert(spec, resolve_local(spec, ref), defs)
            return {"$ref": f"#/$defs/{name}"}
        return convert(spec, resolve_local(spec, ref), defs)
    out: dict = {}
    for k, v in node.items():
        if k in ("example", "examples", "x-github", "discriminator", "xml", "externalDocs"):
            continue
        if k == "properties":
            out[k] = {pk: convert(spec, pv, defs) for pk, pv in v.items()}
        else:
            out[k] = convert(spec, v, defs)
    titles = {x.get("title") for x in node.get("allOf", []) if isinstance(x, dict)}
    if "allOf" in out and titles == {"Simple User", "Enterprise"}:
        # Known quirk of the published description (inline copy in apps/list-installations): an
        # account is a user OR an enterprise; the components/schemas/installation copy says anyOf.
        out["anyOf"] = out.pop("allOf")
    payload = out.get("properties", {}).get("payload") if node.get("title") == "Event" else None
    if isinstance(payload, dict) and "oneOf" in payload:
        # Known quirk: the Event payload is oneOf open object schemas whose required fields
        # nest (an IssueCommentEvent payload also satisfies IssuesEvent's), so no real
        # IssueCommentEvent can match exactly one; it is turned into anyOf.
        payload["anyOf"] = payload.pop("oneOf")
    if out.pop("nullable", False):
        if "type" in out:
            t = out["type"]
            out["type"] = [*(t if isinstance(t, list) else [t]), "null"]
            if "enum" in out and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def main() -> None:
    """Write one schema file per operation plus index.json."""
    spec = json.loads(SRC.read_text())
    ops = {}
    for p, item in spec["paths"].items():
        for m, o in item.items():
            if isinstance(o, dict) and "operationId" in o:
                ops[o["operationId"]] = (m, p, o)
    index = {}
    for op in OPS:
        m, p, o = ops[op]
        resp = o["responses"]
        code = next(c for c in ("200", "201") if c in resp)
        r = resp[code]
        if "$ref" in r:
            r = resolve_local(spec, r["$ref"])
        schema = r["content"]["application/json"]["schema"]
        defs: dict = {}
        top = convert(spec, schema, defs)
        doc = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "x-operation": {"operationId": op, "method": m.upper(), "path": p, "status": int(code)},
            **top,
            "$defs": defs,
        }
        fn = op.replace("/", "__") + ".json"
        (OUT / fn).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        headers = sorted(r.get("headers") or {})  # documented response headers, e.g. Link
        index[op] = {
            "file": fn,
            "method": m.upper(),
            "path": p,
            "status": int(code),
            "headers": headers,
        }
    (OUT / "index.json").write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    for name in ERRORS:
        defs = {}
        top = convert(spec, {"$ref": f"#/components/schemas/{name}"}, defs)
        doc = {"$schema": "https://json-schema.org/draft/2020-12/schema", **top, "$defs": defs}
        (OUT / f"errors__{name}.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(len(index), "operations,", len(ERRORS), "error documents")


if __name__ == "__main__":
    main()
