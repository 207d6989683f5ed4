"""Git smart HTTP through ``git http-backend`` (CGI over subprocess), authenticated by token."""

from __future__ import annotations

import re
import subprocess
from typing import Any

from werkzeug.wrappers import Request, Response

from .auth import Identity, identify, repo_permission
from .backend.accounts import PERMISSION_RANK
from .core import Backend
from .errors import SandboxApiError
from .gittypes import git_env

GIT_PATH = re.compile(r"^/(?P<owner>[^/]+)/(?P<repo>[^/]+?)\.git(?P<rest>/.*)?$")


def _unauthorized(message: str = "Authentication required") -> Response:
    resp = Response(f"{message}\n", status=401, mimetype="text/plain")
    resp.headers["WWW-Authenticate"] = 'Basic realm="GitHub"'
    return resp


def is_git_request(path: str) -> bool:
    """Does this path address a repository over git's HTTP protocol?"""
    return GIT_PATH.match(path) is not None


def handle(b: Backend, req: Request, path: str) -> tuple[Response, Identity, str]:
    """Serve one git HTTP request; returns (response, caller, endpoint label for counters)."""
    m = GIT_PATH.match(path)
    assert m is not None
    rest = m.group("rest") or "/"
    service = req.args.get("service") or rest.rsplit("/", 1)[-1]
    push = service == "git-receive-pack"
    label = f"GIT {'push' if push else 'fetch'}"
    try:
        ident = identify(b, req.headers.get("Authorization"))
    except SandboxApiError:
        return (
            _unauthorized("Invalid username or token. Password authentication is not supported."),
            Identity(kind="anonymous"),
            label,
        )
    try:
        full = b.repo(f"{m.group('owner')}/{m.group('repo')}")["full_name"]
    except SandboxApiError:
        return Response("Repository not found.\n", status=404, mimetype="text/plain"), ident, label
    role = repo_permission(b, ident, full)
    if PERMISSION_RANK[role] < PERMISSION_RANK["read"]:
        if ident.kind == "anonymous":
            return _unauthorized(), ident, label
        return Response("Repository not found.\n", status=404, mimetype="text/plain"), ident, label
    if push:
        if ident.kind == "anonymous":
            return _unauthorized(), ident, label
        if PERMISSION_RANK[role] < PERMISSION_RANK["write"]:
            who = ident.login or "anonymous"
            return (
                Response(
                    f"Permission to {full}.git denied to {who}.\n",
                    status=403,
                    mimetype="text/plain",
                ),
                ident,
                label,
            )
    body = req.get_data(cache=False)
    if push:
        b.store.flush()  # the pre-receive hook reads protection and checks from state.json
    env: dict[str, Any] = git_env()
    env.update(
        {
            "GIT_PROJECT_ROOT": str(b.root / "git"),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_HTTP_MAX_REQUEST_BUFFER": "1000M",
            "PATH_INFO": f"/{full}.git{rest}",
            "REQUEST_METHOD": req.method,
            "QUERY_STRING": req.query_string.decode("latin-1"),
            "CONTENT_TYPE": req.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": ident.login or "",
            "REMOTE_ADDR": req.remote_addr or "127.0.0.1",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "SANDBOX_PUSHER_ADMIN": "1" if role == "admin" and ident.kind == "user" else "0",
        }
    )
    if not ident.login:
        env.pop("REMOTE_USER")
    if req.headers.get("Content-Encoding"):
        env["HTTP_CONTENT_ENCODING"] = req.headers["Content-Encoding"]
    if req.headers.get("Git-Protocol"):
        env["HTTP_GIT_PROTOCOL"] = req.headers["Git-Protocol"]
    proc = subprocess.run(
        ["git", "http-backend"], input=body, capture_output=True, env=env, check=False
    )
    raw = proc.stdout
    sep = raw.find(b"\r\n\r\n")
    sep_len = 4
    if sep < 0:
        sep = raw.find(b"\n\n")
        sep_len = 2
    if sep < 0:
        msg = proc.stderr.decode("utf-8", "replace")
        return (
            Response(f"git http-backend failed: {msg}\n", status=500, mimetype="text/plain"),
            ident,
            label,
        )
    head, payload = raw[:sep].decode("latin-1"), raw[sep + sep_len :]
    status = 200
    headers: list[tuple[str, str]] = []
    for line in head.splitlines():
        key, _, value = line.partition(":")
        if key.lower() == "status":
            status = int(value.strip().split()[0])
        elif key:
            headers.append((key.strip(), value.strip()))
    resp = Response(payload, status=status)
    for k, v in headers:
        resp.headers[k] = v
    if push and req.method == "POST":
        b.git(full).invalidate_refs()  # http-backend moved refs behind GitRepo's back
        b.after_push(full)
    return resp, ident, label
