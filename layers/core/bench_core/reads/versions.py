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
from ..domain.errors import Invalid, NotFound
from ..domain.models import Agent, AgentRef
from ..domain.pricing import cost_rule
from ..domain.versions import VersionStats
from ..ports.services import WithAgents
from ..render import formatting as fmt
from .compare import ALPHA, Line, compare

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
    return versus(versions[0], versions[1])


def versus(newer: VersionStats, older: VersionStats) -> dict[str, Any]:
    """One version against another, line by line (`reads.compare`)."""
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


def _predecessor(versions: list[VersionStats], version: str) -> VersionStats:
    """The version seen before `version` (newest first; a version with no run yet is newer
    than every one), or NotFound when there is none to compare with."""
    names = [v.version for v in versions]
    start = names.index(version) + 1 if version in names else 0
    if start >= len(versions):
        raise NotFound(f"no version before {version} to compare it with: pass against")
    return versions[start]


def check_version(store: WithAgents, agent: Agent, version: str, against: str | None,
                  min_runs: int) -> dict[str, Any]:
    """`GET /api/agents/{login}/{slug}/versions/check`, what `bench check` gates a CI job on:
    `version` against `against` (default: the version before it) with the compare page's
    tests, and one status:
    - "insufficient" while either side has fewer than `min_runs` runs (a new version's runs
      are still coming in);
    - "worse" when a line is worse for the newer version with p under `ALPHA` divided by the
      lines tested (Bonferroni: the gate asks one question of several tests, and without the
      division a release that changed nothing would fail one CI job in seven);
    - "pass" otherwise (better, or within noise).
    `against` must be a version with runs (a typo would otherwise wait forever); `version`
    may have none yet."""
    versions = store.agents.agent_versions(agent.ref)
    by_name = {v.version: v for v in versions}
    if against is not None and against not in by_name:
        raise NotFound(f"version {against} has no runs")
    newer = by_name.get(version) or VersionStats(version)
    older = by_name[against] if against is not None else _predecessor(versions, version)
    if older.version == newer.version:
        raise Invalid("a version compared with itself")
    lines = versus(newer, older)
    tested = [line for line in lines["lines"] if line["p_value"] is not None]
    threshold = ALPHA / max(len(tested), 1)
    worse = [line for line in tested
             if line["better"] == "older" and line["p_value"] < threshold]
    status = ("insufficient" if min(newer.runs, older.runs) < min_runs
              else "worse" if worse else "pass")
    return {"agent": f"{agent.login}/{agent.slug}", "status": status, "min_runs": min_runs,
            "alpha": ALPHA, "threshold": threshold,
            "newer": version_summary(newer), "older": version_summary(older),
            "worse": [line["key"] for line in worse] if status == "worse" else [],
            "lines": lines["lines"]}
