"""The public HTML pages: landing `/`, profile `/u/{login}/{slug}`, compare `/vs/@a/x/@b/y`,
and the 404 page for any unknown address a browser asks for."""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from markupsafe import Markup
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..benchmarks import read_models
from ..domain.errors import BadRequest, NotFound
from ..domain.privacy import Viewer
from ..reads import agents as views
from ..reads import compare as comparison
from ..reads import runs as run_reads
from ..render import charts
from ..render import formatting as fmt
from ..runtime.adapters import Services
from . import error_response, public_base, services_of
from .analytics_section import analytics_context
from .api import agent_ref, load_visible
from .deps import current_viewer
from .templating import PageRoute, error_page, page

router = APIRouter(route_class=PageRoute)

EMBED_SIZES = {"sm": (320, 100), "md": (420, 180), "lg": (560, 360)}
"""Width and height of the iframe each embed size is designed for (also in the snippets)."""


@router.get("/")
def landing(request: Request, services: Services = Depends(services_of)) -> Response:
    top = views.leaderboard_page(services.store, "runs", None, 1,
                                 services.settings.ranking)["agents"][:5]
    return page(request, "landing.html", top=top, base=public_base(request, services))


def description(s: dict[str, Any]) -> str:
    """One line of headline numbers, for search results and link previews."""
    if not s["runs"]:
        return f"{s['display_name']} on Bench: no runs yet."
    return (f"{fmt.pct(s['success_rate'])} success over {fmt.count(s['runs'])} runs · "
            f"p50 {fmt.ms(s['latency_ms']['p50'])} · {fmt.usd(s['headline_cost_usd_per_run'])} per run")


def snippets(base: str, s: dict[str, Any]) -> dict[str, str]:
    """What an owner pastes into a README or a web page (shown as text, so escaped there too)."""
    path = f"{s['login']}/{s['slug']}"
    width, height = EMBED_SIZES["md"]
    title = escape(f"{s['display_name']} on Bench")
    return {"badge": f"[![Bench]({base}/badge/{path}.svg)]({base}/u/{path})",
            "embed": f'<iframe src="{base}/embed/{path}?size=md" width="{width}" height="{height}" '
                     f'style="border:0" loading="lazy" title="{title}"></iframe>'}


@router.get("/u/{login}/{slug}")
def profile(request: Request, login: str, slug: str, viewer: Viewer = Depends(current_viewer),
            services: Services = Depends(services_of)) -> Response:
    agent = load_visible(services, login, slug, viewer)
    return page(request, "profile.html", viewer=viewer, analytics=analytics_context(
                    services.store, agent.ref, viewer, request.query_params,
                    f"/u/{agent.login}/{agent.slug}"),
                **profile_context(views.profile_page(services.store, agent, viewer),
                                  public_base(request, services)))


def profile_context(read: dict[str, Any], base: str) -> dict[str, Any]:
    """What profile.html renders from what the page reads (`reads.agents.profile_page`); also
    what tests/perf/surfaces.py times."""
    p = read["p"]
    return {**read, "base": base, "description": description(p), "snippets": snippets(base, p),
            "embed_sizes": EMBED_SIZES,
            "daily_chart": Markup(charts.daily_runs(p["window"], p["daily"]) or ""),
            "latency_chart": Markup(charts.latency_histogram(p["latency_hist"]) or "")}


@router.get("/vs")
def compare_form(a: str = "", b: str = "") -> Response:
    """The profile's "compare with" form (works without JavaScript) → the compare page."""
    paths = [value.strip().lstrip("@").split("/") for value in (a, b)]
    if not all(len(parts) == 2 and all(parts) for parts in paths):
        raise BadRequest("name both agents as login/slug, for example alice/research-agent")
    (login_a, slug_a), (login_b, slug_b) = paths
    return RedirectResponse(f"/vs/@{quote(login_a)}/{quote(slug_a)}/@{quote(login_b)}/"
                            f"{quote(slug_b)}", status_code=303)


@router.get("/vs/@{a}/{agent1}/@{b}/{agent2}")
def compare(request: Request, a: str, agent1: str, b: str, agent2: str,
            viewer: Viewer = Depends(current_viewer),
            services: Services = Depends(services_of)) -> Response:
    sides = []
    for login, slug in ((a, agent1), (b, agent2)):
        try:
            sides.append(views.visible(services.store, agent_ref(login, slug), viewer))
        except NotFound as exc:
            raise NotFound(f"@{login}/{slug} not found") from exc
    left, right = sides
    summaries = [views.agent_summary(agent, viewer) for agent in sides]
    lines = comparison.compare(summaries[0], summaries[1], left.stats.latency_hist,
                               right.stats.latency_hist)
    benchmarks = [read_models.visible_runs(services.store, agent, viewer) for agent in sides]
    examples = [run_reads.example_runs(services.store, agent, viewer) for agent in sides]
    return page(request, "compare.html", viewer=viewer, a=summaries[0], b=summaries[1],
                lines=lines, alpha=comparison.ALPHA, min_sample=comparison.MIN_SAMPLE,
                benchmarks=benchmarks, examples=examples)


def install_error_pages(app: FastAPI) -> None:
    """Unknown addresses answer a browser (Accept: text/html) with the HTML 404 page and any
    other client with the usual JSON error, so API clients see no change."""

    async def not_found(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 404 and "text/html" in request.headers.get("accept", ""):
            return error_page(request, 404, "There is nothing at this address.")
        message = "not found" if exc.status_code == 404 else str(exc.detail)
        return error_response(exc.status_code, message, headers=exc.headers)

    app.add_exception_handler(StarletteHTTPException, not_found)
