"""`GET /badge/{login}/{slug}.svg`: one request-to-response function for the local server and
the badge Lambda, and the Lambda's handler around it.

The badge is the hottest public path (GitHub's image proxy fetches it for every README view),
so its Lambda takes API Gateway's event itself: no FastAPI, Starlette or Mangum, and a cold
start of this module, the renderer and Powertools. The store, the pydantic models and boto3
load on the first request. The local server mounts `badge_answer` as a FastAPI route
(`http/badge.py`), so both answer every request with the same status, headers and body.

Badges are always the anonymous view: they are cached publicly (GitHub's image proxy, CDNs), so
an owner's key must never put private numbers into one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote

from ..domain.errors import BenchError
from ..log import logger
from ..ports.services import WithAgents
from ..render.badge import badge_params, badge_reply
from ..render.http_caching import Reply

if TYPE_CHECKING:
        from ..runtime.adapters import Services

PATH = "/badge/{login}/{slug}.svg"
ROUTES = (("GET", PATH), ("HEAD", PATH))
"""What the badge Lambda serves, as (method, path template) pairs (it has no ASGI app to ask)."""

# PATH as Starlette matches it: each `{name}` is one non-empty segment.
_PATH_PATTERN = re.compile(re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(PATH)))


def badge_answer(store: WithAgents, login: str, slug: str, query: Mapping[str, str],
                 if_none_match: str | None) -> Reply:
    """The whole answer to one badge request: the SVG (200, 404 "not found", or 304 when the
    client's copy is current) or a JSON error (400 for an unknown metric, style or a version
    that breaks `VERSION_RULE`). With `?version=`, that version's numbers."""
    try:
        metric, style, version = badge_params(query.get("metric"), query.get("style"),
                                              query.get("version"))
        from ..domain.models import AgentRef
        from ..reads.agents import public_summary

        summary = public_summary(store, AgentRef(login.lower(), slug.lower()), version)
    except BenchError as exc:
        return error_reply(exc.status, exc.message, exc.detail, exc.headers)
    return badge_reply(summary, metric, style, if_none_match)


def error_reply(status: int, message: str, detail: list[Any] | None = None,
                headers: dict[str, str] | None = None) -> Reply:
    """An error as the JSON body every Bench API answers with (`http.error_response`)."""
    body = json.dumps({"error": message, "detail": detail or []}, ensure_ascii=False,
                      separators=(",", ":"))
    return Reply(status, body.encode(), "application/json", headers or {})


def lambda_handler() -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The badge Lambda's handler for API Gateway HTTP API events (payload format 2.0), with its
    own services, built from the environment on the first request."""
    services: Services | None = None

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        nonlocal services
        match = _PATH_PATTERN.fullmatch(unquote(event["requestContext"]["http"]["path"]))
        if match is None:  # the route is /badge/{login}/{file}: anything but `.svg`
            return _response(error_reply(404, "not found"))
        headers = {name.lower(): value for name, value in (event.get("headers") or {}).items()}
        # The raw query, as Starlette reads it: a repeated name means its last value.
        query = dict(parse_qsl(event.get("rawQueryString", ""), keep_blank_values=True))
        try:
            if services is None:
                from ..runtime.adapters import Services
                from ..settings import Settings

                services = Services.from_settings(Settings.from_env())
            reply = badge_answer(services.store, match["login"], match["slug"], query,
                                 headers.get("if-none-match"))
        except Exception:
            logger.exception("unhandled error", extra={"path": match.group(0)})
            reply = error_reply(500, "internal error")
        return _response(reply, head=event["requestContext"]["http"].get("method") == "HEAD")

    return handler


def _response(reply: Reply, head: bool = False) -> dict[str, Any]:
    """`reply` as the result API Gateway's HTTP API expects from a Lambda (payload 2.0), header
    names in lower case as HTTP/2 sends them; no body for HEAD, and `nosniff` as every Bench
    answer carries (`http.guard`)."""
    headers = {"content-type": reply.media_type, "x-content-type-options": "nosniff"} | {
        k.lower(): v for k, v in reply.headers.items()}
    return {"statusCode": reply.status, "headers": headers,
            "body": "" if head else reply.body.decode(), "isBase64Encoded": False}
