"""Server-side HTML: one Jinja2 environment (autoescape on), our static files, page headers.

Templates hold loops and conditionals only; numbers go through the `formatting` filters. The
static files are read once and served with a content hash in their URL, so browsers cache them
for a year and a deploy still takes effect at once.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute

from ..domain.errors import BenchError
from ..domain.messages import Message, conversation
from ..domain.privacy import Viewer
from ..reads.sdk_index import install_command
from ..render import formatting
from ..render.http_caching import PRIVATE, PUBLIC_60, Reply

if TYPE_CHECKING:
    from jinja2 import Environment

HERE = Path(__file__).parent
STATIC = {path.name: path.read_bytes() for path in (HERE / "static").iterdir() if path.is_file()}
STATIC_VERSION = {name: hashlib.sha256(body).hexdigest()[:12] for name, body in STATIC.items()}
SHOWN_VALUE_BYTES = 4096
"""How much of one task input or output a page prints; the API has the whole value."""

PAGE_CSP = ("default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
            "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff",
                    "Referrer-Policy": "strict-origin-when-cross-origin"}
VARY = "X-Bench-Key, Authorization, Cookie"
"""Pages differ for an owner (their private agents); shared caches must key on who asks."""


def static_url(name: str) -> str:
    return f"/static/{name}?v={STATIC_VERSION[name]}"


def inline_hash(name: str) -> str:
    """The CSP source (`'sha256-...'`) allowing a static file's text inlined in a page."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(STATIC[name]).digest()).decode() + "'"


def shown_json(value: Any) -> str:
    """A task value as readable JSON, cut at SHOWN_VALUE_BYTES (escaped later by Jinja)."""
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False,
                                                           default=str)
    if len(text) > SHOWN_VALUE_BYTES:
        return text[:SHOWN_VALUE_BYTES] + "\n… (cut here; the API returns the whole value)"
    return text


LOG_VALUE_CHARS = 2000


def log_value(data: Any) -> str:
    """A log entry's value on one line: its `value` alone when that is all it holds besides
    the label, else the entry as compact JSON, cut at LOG_VALUE_CHARS."""
    if isinstance(data, dict):
        rest = {k: v for k, v in data.items() if k != "label"}
        data = rest.get("value") if set(rest) == {"value"} else rest or ""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
    return text if len(text) <= LOG_VALUE_CHARS else text[:LOG_VALUE_CHARS] + "…"


def chat(span: dict[str, Any]) -> list[Message] | None:
    """A span's conversation (`domain.messages`) from what the privacy gate let its viewer
    see of it (`reads.runs.span_view`): a hidden side, an error or an unfinished answer is no
    part of it."""
    shown_output = not span["outputs_hidden"] and span["status"] == "success"
    return conversation(None if span["inputs_hidden"] else span["input"],
                        span["output"] if shown_output else None)


@functools.cache
def environment() -> Environment:
    """Built by the first page rendered: functions that mount a page router but answer JSON
    (the API's benchmark routes share a module with the pages) never import Jinja2 (~30 ms)."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(
        default=True, default_for_string=True), trim_blocks=True, lstrip_blocks=True,
        auto_reload=False)
    env.filters.update(formatting.FILTERS)
    env.filters["shown_json"] = shown_json
    env.filters["log_value"] = log_value
    env.filters["chat"] = chat
    env.globals.update(static_url=static_url, static_text=lambda name: STATIC[name].decode(),
                       sdk_install=install_command)
    return env


def render(name: str, **context: Any) -> str:
    return environment().get_template(name).render(**context)


def page(request: Request, name: str, viewer: Viewer | None = None, status: int = 200,
         headers: dict[str, str] | None = None, **context: Any) -> HTMLResponse:
    """A full page: public and cacheable for a minute when anonymous, private otherwise."""
    signed_in = viewer is not None and viewer.login is not None
    html = render(name, request=request, viewer=viewer, **context)
    return HTMLResponse(html, status_code=status, headers={
        "Content-Security-Policy": PAGE_CSP, **SECURITY_HEADERS, "Vary": VARY,
        "Cache-Control": PRIVATE if signed_in or status >= 400 else PUBLIC_60,
        **(headers or {})})


def reply_response(reply: Reply) -> Response:
    """A framework-free `Reply` (badges, embeds, OG images) as a Starlette response."""
    return Response(reply.body, status_code=reply.status, media_type=reply.media_type,
                    headers=reply.headers)


def error_page(request: Request, status: int, message: str,
               headers: dict[str, str] | None = None) -> HTMLResponse:
    return page(request, "error.html", status=status, headers=headers, status_code=status,
                message=message)


class PageRoute(APIRoute):
    """A route whose errors answer as an HTML page with the same status (400 for a bad query
    value, 404 for an agent the viewer may not see), instead of the API's JSON."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def run(request: Request) -> Response:
            try:
                return await handler(request)
            except BenchError as exc:  # its headers too (a 503's Retry-After)
                return error_page(request, exc.status, exc.message, exc.headers)
            except RequestValidationError as exc:
                return error_page(request, 400, "; ".join(str(e["msg"]) for e in exc.errors()))

        return run
