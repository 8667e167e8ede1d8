"""The analytics section of the profile and of the owner's agent page (`_analytics.html`): the
charts of `reads.analytics` for the range, version and tag the page's query string asks for (a
bad one is a 400 naming it, as the JSON twin's)."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from markupsafe import Markup

from ..domain.models import AgentRef
from ..domain.privacy import Viewer
from ..reads.agents import visible
from ..reads.analytics import analytics_section, selection
from ..runtime.adapters import Services


def analytics_context(services: Services, ref: AgentRef, viewer: Viewer, request: Request,
                      path: str) -> dict[str, Any]:
    """The section's context; `path` is the page's own, which its links and form go to."""
    agent = visible(services.store, ref, viewer)
    q = request.query_params
    chosen = selection(agent, viewer, q.get("range"), q.get("version"), q.get("tag"))
    section = analytics_section(services.store, agent, viewer, chosen)
    charts = {name: Markup(svg) if svg else None for name, svg in section["charts"].items()}
    return {**section, "charts": charts, "path": path,
            "json": f"/api/agents/{ref.login}/{ref.slug}/analytics"}
