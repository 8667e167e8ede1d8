"""`GET /badge/{login}/{slug}.svg` in a FastAPI app: `bench_core.lambdas.badge.badge_answer`, the
same function the badge Lambda answers with."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ..lambdas.badge import PATH, badge_answer
from . import get_services
from .templating import reply_response

router = APIRouter()


@router.get(PATH, include_in_schema=False)
def badge(login: str, slug: str, request: Request) -> Response:
    return reply_response(badge_answer(get_services(request).store, login, slug,
                                       request.query_params, request.headers.get("if-none-match")))
