"""JSON shapes of the read API, built from stored records through the privacy gate."""

from __future__ import annotations

from typing import Any

from . import stats
from .models import Agent
from .privacy import Viewer, task_view
from .store import Store

RECENT_TASKS = 10


def agent_summary(agent: Agent, viewer: Viewer) -> dict[str, Any]:
    """Headline numbers, from counters only (no scan of tasks or events)."""
    s = agent.stats
    interval = stats.wilson_interval(s.successes, s.runs)
    return {
        "login": agent.login,
        "slug": agent.slug,
        "display_name": agent.display_name or agent.slug,
        "model": agent.model,
        "framework": agent.framework,
        "architecture": agent.architecture,
        "tools": agent.tools,
        "visibility": agent.visibility,
        "hide_inputs": agent.hide_inputs,
        "hide_outputs": agent.hide_outputs,
        "runs": s.runs,
        "successes": s.successes,
        "failures": s.failures,
        "success_rate": stats.rate(s.successes, s.runs),
        "success_rate_ci95": list(interval) if interval else None,
        "avg_eval_score": (s.eval_score_sum / s.eval_count) if s.eval_count else None,
        "eval_count": s.eval_count,
        "cost_usd_total": round(s.cost_usd_total, 10),
        "cost_usd_per_run": round(s.cost_usd_total / s.runs, 10) if s.runs else None,
        "latency_ms": stats.latency_summary(s.latency_hist),
        "first_event_at": s.first_event_at,
        "last_event_at": s.last_event_at,
        "dropped_events": s.dropped_events if viewer.owns(agent) else None,
        "created_at": agent.created_at,
    }


def agent_detail(store: Store, agent: Agent, viewer: Viewer) -> dict[str, Any]:
    tasks, _ = store.list_tasks(agent.ref, limit=RECENT_TASKS)
    return {**agent_summary(agent, viewer),
            "recent_tasks": [task_view(t, agent, viewer) for t in tasks]}
