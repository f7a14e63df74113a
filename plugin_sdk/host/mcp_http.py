"""The MCP server over streamable HTTP, for a team: bearer tokens bound to projects.

``memsdk mcp --http 127.0.0.1:8765`` serves one store to the hosts of several
machines. Every request carries ``Authorization: Bearer TOKEN``; the token
file (:func:`tokens_path`, mode 0600, refused when others can read it) holds
each token's name, the SHA-256 of its secret and the projects it may use.
Secrets are compared in constant time (``hmac.compare_digest`` over every
entry), and only their digests are kept: ``memsdk mcp token add NAME
--project P`` prints a new secret once.

The project is chosen per request, within the token's: the header
``X-Memsdk-Project`` or the query parameter ``?project=``; a token bound to
one project may leave it out. A request for a project the token is not bound
to is refused with 403 before the MCP layer sees it; a bad or missing token
with 401. Nothing the server says names a project the token may not use.

The pieces are the ``mcp`` SDK's own: its bearer authentication backend and
middleware, its streamable HTTP session manager (which also binds each
session to the token that opened it), served by uvicorn. Each request is
logged in one line, without a memory's text (``request_log.py``). Store calls run on
an :class:`~plugin_sdk.host.aio.AsyncStore`'s worker threads.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import attrs

from plugin_sdk.errors import AccessRefused, HostError
from plugin_sdk.host.mcp_server import GUIDE, build_server
from plugin_sdk.host.mcp_tools import tool_specs
from plugin_sdk.host.request_log import RequestLog
from plugin_sdk.stages.inject import DEFAULT_BUDGET
from plugin_sdk.store.paths import user_dir

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from plugin_sdk.host.aio import AsyncStore

TOKENS_ENV = "MEMSDK_MCP_TOKENS"
TOKENS_FILENAME = "mcp-tokens.json"
PROJECT_HEADER = "x-memsdk-project"
ENDPOINT = "/mcp"
INSTRUCTIONS = (
    "Long-term memory shared by a team; each request is for one project, named by the "
    "host's X-Memsdk-Project header (or ?project=) among those its token may use. " + GUIDE
)


@attrs.frozen
class Grant:
    """One token: its name, the digest of its secret, the projects it may use."""

    name: str
    sha256: str
    projects: tuple[str, ...] = attrs.field(converter=lambda value: tuple(value))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "sha256": self.sha256, "projects": list(self.projects)}


def tokens_path() -> Path:
    """The token file: ``MEMSDK_MCP_TOKENS``, else ``mcp-tokens.json`` in the user dir."""
    override = os.environ.get(TOKENS_ENV)
    return Path(override).expanduser() if override else user_dir() / TOKENS_FILENAME


def load_grants(path: Path) -> list[Grant]:
    """The grants in the token file; refused when the file is missing or others can read it."""
    if not path.exists():
        raise AccessRefused(f"no token file at {path}: add a token (memsdk mcp token add NAME)")
    mode = stat.S_IMODE(path.stat().st_mode)
    if os.name == "posix" and mode & 0o077:
        raise AccessRefused(
            f"token file {path} can be read by others (mode {mode:o}); run: chmod 600 {path}"
        )
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        return [Grant(**entry) for entry in document["tokens"]]
    except (ValueError, KeyError, TypeError) as error:
        raise HostError(f"token file {path} is not a memsdk token file: {error}") from error


def add_token(path: Path, name: str, projects: list[str]) -> str:
    """Add a token bound to ``projects``; returns its secret (shown once, kept as a digest)."""
    if not projects:
        raise HostError("a token needs at least one project (--project NAME)")
    grants = load_grants(path) if path.exists() else []
    if any(grant.name == name for grant in grants):
        raise HostError(f"a token named {name!r} exists; revoke it first")
    secret = secrets.token_urlsafe(32)
    _save(path, [*grants, Grant(name, _digest(secret), projects)])
    return secret


def revoke_token(path: Path, name: str) -> None:
    """Remove the token named ``name``."""
    grants = load_grants(path)
    kept = [grant for grant in grants if grant.name != name]
    if len(kept) == len(grants):
        raise HostError(f"no token named {name!r} in {path}")
    _save(path, kept)


class TokenVerifier:
    """The SDK's token verifier protocol over the token file (read once, at start)."""

    def __init__(self, grants: list[Grant]) -> None:
        self.grants = grants

    def grant_for(self, token: str) -> Grant | None:
        digest = _digest(token)
        found = None
        for grant in self.grants:  # every entry, so the time says nothing about which matched
            if hmac.compare_digest(grant.sha256, digest):
                found = grant
        return found

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        grant = self.grant_for(token)
        if grant is None:
            return None
        return AccessToken(
            token=token,
            client_id=grant.name,
            scopes=[],
            claims={"projects": list(grant.projects)},
        )


class ProjectGate:
    """ASGI: pick the request's project within the token's, or refuse it (400, 403)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
        from starlette.requests import Request
        from starlette.responses import JSONResponse

        user = scope.get("user")
        if not isinstance(user, AuthenticatedUser):  # the SDK's middleware answers 401
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        allowed = list((user.access_token.claims or {}).get("projects", []))
        asked = request.headers.get(PROJECT_HEADER) or request.query_params.get("project")
        if not asked and len(allowed) == 1:
            asked = allowed[0]
        if not asked:
            response = JSONResponse(
                {
                    "error": "invalid_request",
                    "error_description": "name the project: header X-Memsdk-Project "
                    "or ?project=NAME",
                },
                status_code=400,
            )
        elif asked not in allowed:
            response = JSONResponse(
                {
                    "error": "forbidden",
                    "error_description": f"this token may not use project {asked!r}",
                },
                status_code=403,
            )
        else:
            scope.setdefault("state", {})["memsdk_project"] = asked
            await self.app(scope, receive, send)
            return
        await response(scope, receive, send)


def project_of(ctx: Any) -> str:
    """The project the gate chose for this request."""
    return str(ctx.request.state.memsdk_project)


def build_app(
    pool: AsyncStore,
    grants: list[Grant],
    *,
    budget: int = DEFAULT_BUDGET,
    allowed_hosts: list[str] | None = None,
    log: TextIO | None = None,
) -> Starlette:
    """The ASGI app: ``/mcp`` behind bearer auth and the project gate; closes ``pool`` at exit.

    ``allowed_hosts`` (``host:port`` patterns) switches on the SDK's DNS
    rebinding protection, for a server on the loopback interface. ``log``
    gets one line per request (``request_log.py``; none when ``None``).
    """
    from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
    from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
    from mcp.server.streamable_http_manager import (
        StreamableHTTPASGIApp,
        StreamableHTTPSessionManager,
    )
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.authentication import AuthenticationMiddleware
    from starlette.routing import Route

    specs = _specs(pool, grants)
    server = build_server(
        pool, specs, instructions=INSTRUCTIONS, budget=budget, project_of=project_of
    )
    security = (
        TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=allowed_hosts)
        if allowed_hosts
        else TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )
    manager = StreamableHTTPSessionManager(app=server, security_settings=security)
    endpoint: Any = RequireAuthMiddleware(ProjectGate(StreamableHTTPASGIApp(manager)), [])
    if log is not None:
        endpoint = RequestLog(endpoint, log)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            async with manager.run():
                yield
        finally:
            await pool.aclose()

    return Starlette(
        routes=[Route(ENDPOINT, endpoint=endpoint)],
        middleware=[
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(TokenVerifier(grants))),
            Middleware(AuthContextMiddleware),
        ],
        lifespan=lifespan,
    )


def serve_http(
    db: str | Path,
    address: str,
    *,
    tokens: Path,
    budget: int = DEFAULT_BUDGET,
    log: TextIO | None = None,
) -> None:
    """Serve the store at ``db`` on ``address`` (``HOST:PORT``) until interrupted.

    One line per request goes to ``log`` (default: standard error).
    """
    import uvicorn

    from plugin_sdk.host.aio import AsyncStore

    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--http wants HOST:PORT (127.0.0.1:8765), got {address!r}")
    grants = load_grants(tokens)
    if not grants:
        raise AccessRefused(f"token file {tokens} holds no token: memsdk mcp token add NAME")
    host = host.strip("[]")
    loopback = host in ("127.0.0.1", "localhost", "::1")
    allowed = [f"{name}:*" for name in ("127.0.0.1", "localhost", "[::1]")] if loopback else None
    pool = AsyncStore(db, project=grants[0].projects[0])
    app = build_app(pool, grants, budget=budget, allowed_hosts=allowed, log=log or sys.stderr)
    uvicorn.run(app, host=host, port=int(port), log_level="warning")


def _specs(pool: AsyncStore, grants: list[Grant]) -> Any:
    """The tool specs, read now from the store (categories are store-wide)."""
    from plugin_sdk.store.connection import Store

    with Store(pool.path, project=grants[0].projects[0], plugins=pool.plugins) as store:
        return tool_specs(store)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _save(path: Path, grants: list[Grant]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump({"tokens": [grant.to_dict() for grant in grants]}, handle, indent=2)
        handle.write("\n")
    os.chmod(partial, 0o600)
    partial.replace(path)
