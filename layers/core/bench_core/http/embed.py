"""`GET /embed/{login}/{slug}?size=sm|md|lg&theme=light|dark|auto`: a mini dashboard for an
`<iframe>` on someone else's site.

Framable from anywhere (`frame-ancestors *`), self-contained (its CSS and script are inlined
and allowed by hash, so it loads nothing from anyone, us included), and it refreshes itself by
fetching its own URL and swapping the panel, without reloading the frame. Always the anonymous
view: it is cached publicly and shown to strangers.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response

from ..domain.errors import BadRequest, NotFound
from ..domain.privacy import ANONYMOUS
from ..reads import agents
from ..render import charts
from ..render.http_caching import Reply, cacheable
from ..runtime.adapters import Services
from . import services_of
from .api import agent_ref
from .pages import EMBED_SIZES
from .templating import SECURITY_HEADERS, PageRoute, inline_hash, render, reply_response

router = APIRouter(route_class=PageRoute)

THEMES = ("auto", "light", "dark")
REFRESH_SECONDS = 60
EMBED_CSP = (f"default-src 'none'; style-src {inline_hash('embed.css')}; "
             f"script-src {inline_hash('embed.js')}; img-src data:; connect-src 'self'; "
             "base-uri 'none'; form-action 'none'; frame-ancestors *")


def embed_params(size: str | None, theme: str | None) -> tuple[str, str]:
    size, theme = size or "md", theme or "auto"
    if size not in EMBED_SIZES:
        raise BadRequest(f"unknown size {size!r}: use one of {', '.join(EMBED_SIZES)}",
                         [{"loc": ["query", "size"], "msg": "unknown size"}])
    if theme not in THEMES:
        raise BadRequest(f"unknown theme {theme!r}: use one of {', '.join(THEMES)}",
                         [{"loc": ["query", "theme"], "msg": "unknown theme"}])
    return size, theme


@router.get("/embed/{login}/{slug}")
def embed(request: Request, login: str, slug: str, size: str | None = None,
          theme: str | None = None, services: Services = Depends(services_of)) -> Response:
    size, theme = embed_params(size, theme)
    agent = agents.public_agent(services.store, agent_ref(login, slug))
    if agent is None:
        raise NotFound("agent not found")
    window, daily = agents.daily_series(services.store, agent)
    runs_by_day = {row["day"]: row["runs"] for row in daily}
    summary = agents.agent_summary(agent, ANONYMOUS)
    html = render("embed.html", s=summary, size=size, theme=theme, refresh=REFRESH_SECONDS,
                  dims=EMBED_SIZES[size], profile_url=f"/u/{agent.login}/{agent.slug}",
                  spark=charts.sparkline([runs_by_day.get(d, 0) for d in window],
                                         f"Runs per day, {window[0]} to {window[-1]}"),
                  daily_chart=charts.daily_runs(window, daily) if size == "lg" else None)
    reply = cacheable(Reply(200, html.encode(), "text/html; charset=utf-8",
                            {"Content-Security-Policy": EMBED_CSP, **SECURITY_HEADERS}),
                      request.headers.get("if-none-match"))
    return reply_response(reply)
