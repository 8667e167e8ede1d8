"""`GET /badge/{login}/{slug}.svg`: one endpoint for the local server and the badge Lambda.

The endpoint is plain Starlette, so the Lambda can serve it from a bare Starlette app without
importing FastAPI (and `bench_core.http`, which does): its cold start is this module, the
badge renderer and Starlette. The store and the agent views (boto3, pydantic) load on the first
request. The local server mounts the same function as a FastAPI route (`http/badge.py`).

Badges are always the anonymous view: they are cached publicly (GitHub's image proxy, CDNs), so
an owner's key must never put private numbers into one.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .badge import badge_params, badge_reply
from .errors import BenchError

PATH = "/badge/{login}/{slug}.svg"


def _services(request: Request) -> Any:
    """The app's services, built from the environment on first use (as `http.get_services`
    does for FastAPI apps; that module cannot be imported here without FastAPI)."""
    services = getattr(request.app.state, "services", None)
    if services is None:
        from .config import Settings
        from .services import Services

        services = request.app.state.services = Services.from_settings(Settings.from_env())
    return services


def badge(request: Request) -> Response:
    from .models import AgentRef
    from .views import public_summary

    metric, style = badge_params(request.query_params.get("metric"),
                                 request.query_params.get("style"))
    ref = AgentRef(request.path_params["login"].lower(), request.path_params["slug"].lower())
    reply = badge_reply(public_summary(_services(request).store, ref), metric, style,
                        request.headers.get("if-none-match"))
    return Response(reply.body, status_code=reply.status, media_type=reply.media_type,
                    headers=reply.headers)


async def _error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, BenchError)
    return JSONResponse({"error": exc.message, "detail": exc.detail}, status_code=exc.status,
                        headers=exc.headers)


def create_badge_app() -> Starlette:
    """The badge Lambda's whole app (functions/badge/app.py)."""
    app = Starlette(routes=[Route(PATH, badge, methods=["GET"])],
                    exception_handlers={BenchError: _error})
    app.state.services = None
    return app
