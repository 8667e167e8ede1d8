"""`GET /static/{name}`: our own CSS and JavaScript (pages make no third-party requests)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from ..domain.errors import NotFound
from .templating import STATIC, STATIC_VERSION

router = APIRouter()

TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}
IMMUTABLE = "public, max-age=31536000, immutable"


@router.get("/static/{name}")
def static_file(name: str, v: str | None = None) -> Response:
    """A versioned URL (`?v=<hash>`, as `static_url` writes it) never changes: cache it for a
    year. Any other URL may, so it is cached briefly."""
    body = STATIC.get(name)
    suffix = name[name.rfind("."):] if "." in name else ""
    if body is None or suffix not in TYPES:
        raise NotFound("no such static file")
    cache = IMMUTABLE if v == STATIC_VERSION[name] else "public, max-age=300"
    return Response(body, media_type=TYPES[suffix],
                    headers={"Cache-Control": cache, "X-Content-Type-Options": "nosniff"})
