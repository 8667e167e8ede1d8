"""`GET /og/{login}/{slug}.png`: the preview card social sites show for a profile link.

Always the anonymous view (crawlers have no key, and the card is cached publicly)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response

from ..domain.errors import NotFound
from ..reads import agents
from ..render.http_caching import Reply, cacheable
from ..render.og_card import render_og
from ..runtime.adapters import Services
from . import services_of
from .api import agent_ref
from .templating import PageRoute, reply_response

router = APIRouter(route_class=PageRoute)


@router.get("/og/{login}/{slug}.png")
def og_image(request: Request, login: str, slug: str,
             services: Services = Depends(services_of)) -> Response:
    summary = agents.public_summary(services.store, agent_ref(login, slug))
    if summary is None:
        raise NotFound("agent not found")
    png = render_og(summary)
    return reply_response(cacheable(Reply(200, png, "image/png"),
                                    request.headers.get("if-none-match")))
