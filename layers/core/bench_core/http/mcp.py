"""`/mcp`: the public, read-only MCP server (bench_core.mcp) as a route of the app.

Only POST is served. A GET would ask for a server-sent-event stream this stateless server never
sends; held open, it would hang until API Gateway's 30 s timeout, so it (and any other method)
is answered 405 at once, naming the one allowed method.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.types import Receive, Scope, Send

from ..mcp import transport
from . import error_response, get_services


class McpEndpoint:
    """The ASGI endpoint: the request's method checked here, the rest by the MCP transport."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            response = error_response(405, "method not allowed: the MCP server takes POST only "
                                           "(stateless, JSON responses, no event stream)",
                                      headers={"Allow": "POST"})
            await response(scope, receive, send)
            return
        services = get_services(Request(scope))
        await transport.serve(scope, receive, send, services.store, services.settings.public_url)


router = APIRouter()
# An ASGI app as the endpoint: starlette's Route serves a non-function endpoint as one.
router.add_route(transport.PATH, McpEndpoint(), include_in_schema=False)  # type: ignore[arg-type]
