"""The analytics section of the profile and of the owner's agent page (`_analytics.html`): the
charts of `reads.analytics` for the range, version and tag the page's query string asks for (a
bad one is a 400 naming it, as the JSON twin's)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from ..domain.models import AgentRef
from ..domain.privacy import Viewer
from ..reads.agents import visible
from ..reads.analytics import AnalyticsPageReads, analytics_section, selection


def analytics_context(store: AnalyticsPageReads, ref: AgentRef, viewer: Viewer,
                      query: Mapping[str, str], path: str) -> dict[str, Any]:
    """The section's context for the page's `query`; `path` is the page's own, which its links
    and form go to (tests/perf/surfaces.py times it with the profile)."""
    agent = visible(store, ref, viewer)
    chosen = selection(agent, viewer, query.get("range"), query.get("version"), query.get("tag"))
    section = analytics_section(store, agent, viewer, chosen)
    charts = {name: Markup(svg) if svg else None for name, svg in section["charts"].items()}
    return {**section, "charts": charts, "path": path,
            "json": f"/api/agents/{ref.login}/{ref.slug}/analytics"}
