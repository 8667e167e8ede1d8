"""`GET /leaderboard` (HTML) and its JSON twin `GET /api/leaderboard`, same parameters."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse

from ..domain import ranking
from ..reads import agents as views
from ..render.http_caching import PUBLIC_60
from ..runtime.adapters import Services
from . import services_of, templating
from .templating import PageRoute

router = APIRouter(route_class=PageRoute)
api_router = APIRouter()


def board(services: Services, sort: str | None, q: str | None, page: str | None
          ) -> dict[str, Any]:
    sort, query, number = ranking.leaderboard_params(sort, q, page)
    return views.leaderboard_page(services.store, sort, query, number, services.settings.ranking)


@router.get("/leaderboard")
def leaderboard_html(request: Request, sort: str | None = None, q: str | None = None,
                     page: str | None = None, services: Services = Depends(services_of)
                     ) -> Response:
    return templating.page(request, "leaderboard.html", board=board(services, sort, q, page),
                       sorts=ranking.SORTS)


@api_router.get("/api/leaderboard")
def leaderboard_json(sort: str | None = None, q: str | None = None, page: str | None = None,
                     services: Services = Depends(services_of)) -> JSONResponse:
    """Public agents only and the same for everyone, so shared caches may keep it a minute."""
    return JSONResponse(board(services, sort, q, page), headers={"Cache-Control": PUBLIC_60})
