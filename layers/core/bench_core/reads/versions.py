"""An agent's versions side by side: each release's numbers from its counters (`domain.versions`,
kept on write: no run is read), and the newest against the one before it with the tests the
compare page uses (`reads.compare`), so "did the last release make things better" gets the same
honest "within noise" / "better, p = …" answer as two agents do.

A version is public like the agent's model (it names the code, not what the code was given):
whoever may see the agent sees its versions (`domain.privacy`).
"""

from __future__ import annotations

from typing import Any

from ..domain import stats
from ..domain.models import Agent, AgentRef
from ..domain.pricing import cost_rule
from ..domain.versions import VersionStats
from ..ports.services import WithAgents
from ..render import formatting as fmt
from .compare import Line, compare

SHOWN = 10
"""Versions a profile lists (the newest); the API lists every one."""


def version_summary(v: VersionStats) -> dict[str, Any]:
    """One version's headline numbers, in the shape `compare.compare` reads of an agent."""
    interval = stats.wilson_interval(v.successes, v.runs)
    cost, source = cost_rule(v.cost_usd_total, v.evidence_cost_usd_total)
    return {
        "version": v.version,
        "runs": v.runs, "successes": v.successes, "failures": v.failures,
        "success_rate": stats.rate(v.successes, v.runs),
        "success_rate_ci95": list(interval) if interval else None,
        "avg_eval_score": v.eval_score_sum / v.eval_count if v.eval_count else None,
        "eval_count": v.eval_count,
        "headline_cost_usd_per_run": round(cost / v.runs, 10) if v.runs else None,
        "headline_cost_usd_per_success": round(cost / v.successes, 10) if v.successes else None,
        "headline_cost_source": source if v.runs else None,
        "latency_ms": stats.latency_summary(v.latency_hist),
        "first_run_at": v.first_run_at,
        "last_run_at": v.last_run_at,
    }


def _said(line: Line) -> str:
    """A line's verdict for the newer version: "better, p = 0.01", "worse, p < 0.001", or the
    compare page's own words ("within noise", "too few runs", ...)."""
    if line.verdict != "beyond noise" or line.better is None:
        return line.verdict
    return f"{'better' if line.better == 'a' else 'worse'}, {fmt.p_value(line.p_value)}"


def newest_against_previous(versions: list[VersionStats]) -> dict[str, Any] | None:
    """The newest version (first) against the one before it, line by line; None with fewer
    than two."""
    if len(versions) < 2:
        return None
    newer, older = versions[0], versions[1]
    lines = compare(version_summary(newer), version_summary(older), newer.latency_hist,
                    older.latency_hist)
    return {"newer": newer.version, "older": older.version, "lines": [
        {"key": line.key, "title": line.title, "newer": line.a, "older": line.b,
         "better": {"a": "newer", "b": "older"}.get(line.better or ""),
         "verdict": line.verdict, "p_value": line.p_value, "says": _said(line),
         "method": line.method} for line in lines]}


def agent_versions(store: WithAgents, agent: Agent, limit: int | None = None
                   ) -> dict[str, Any]:
    """`GET /api/agents/{login}/{slug}/versions` and the profile's versions section: each
    version's numbers, the newest first (at most `limit`), and the newest against the one
    before it. `agent` is one the viewer may see (`reads.agents.visible`)."""
    versions = store.agents.agent_versions(agent.ref)
    return {"versions": [version_summary(v) for v in versions[:limit]],
            "version_count": len(versions),
            "comparison": newest_against_previous(versions)}


def version_stats(store: WithAgents, ref: AgentRef, version: str) -> dict[str, Any]:
    """One version's numbers (the badge's `?version=`): none yet for a version with no run."""
    found = next((v for v in store.agents.agent_versions(ref) if v.version == version), None)
    return version_summary(found or VersionStats(version))
