"""One Streamable HTTP request to the MCP server, served as a self-contained ASGI call.

Stateless with JSON responses: a POST in, one JSON answer out, no session and no SSE stream,
which is what API Gateway and Lambda can carry. The SDK's session manager may be run only once
per instance, and Mangum would run an app's lifespan on every invocation, so each request gets
its own light transport and session manager (`streamable_http_app`, entered and left around
the request) while the tools stay registered once on the module's server.

Host and Origin checks (the SDK's DNS-rebinding protection) stay on, with the hosts this
deployment really answers to: loopback (the local server), the configured public URL, and
under API Gateway the domain the request reached, which API Gateway reports as
`requestContext.domainName` and routes by (it sends a request for any other host nowhere near
this function). A page on another site that resolves its own name to us is refused by the Host
check; a browser page of another origin calling us is refused by the Origin check.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from ..ports.store import Store
from .server import server, serving

PATH = "/mcp"
MAX_REQUEST_BYTES = 64 * 1024
"""A tool call is a few hundred bytes; the SDK answers a larger body 413 before parsing it."""
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")

# The per-request session manager announces its start and stop at INFO: noise, twice a request.
logging.getLogger("mcp.server.streamable_http_manager").setLevel(logging.WARNING)


def transport_security(scope: Scope, public_url: str | None) -> TransportSecuritySettings:
    """The Host and Origin values this request may carry (see the module docstring)."""
    hosts = [h for name in LOOPBACK for h in (name, f"{name}:*")]
    origins = [f"{scheme}://{h}" for scheme in ("http", "https") for h in hosts]
    sites = [urlsplit(public_url)] if public_url else []
    domain = (scope.get("aws.event") or {}).get("requestContext", {}).get("domainName")
    if domain:
        sites.append(urlsplit(f"https://{domain}"))
    for site in sites:
        hosts.append(site.netloc)
        origins.append(f"{site.scheme}://{site.netloc}")
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


async def serve(scope: Scope, receive: Receive, send: Send, store: Store,
                public_url: str | None) -> None:
    """Answer one POST to the MCP endpoint with the tools reading `store`."""
    app = server.streamable_http_app(
        streamable_http_path=PATH, stateless_http=True, json_response=True,
        transport_security=transport_security(scope, public_url),
        max_request_body_size=MAX_REQUEST_BYTES)
    with serving(store):
        async with app.router.lifespan_context(app):
            await app(dict(scope), receive, send)
