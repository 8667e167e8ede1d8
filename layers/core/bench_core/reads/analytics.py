"""An agent's analytics over time: each period's numbers for a range, from the counters kept on
write (`domain.timeseries`, `ports.store.TimeSeriesStore`), so a year reads 365 small records
and no run.

Ranges: the last 24 hours by hour, 30 or 90 days by day, a year by week (its days added up
by ISO week); a tag's by day only (`domain.timeseries`). Every period of the range is
listed, empty ones with zero runs, so a chart's x axis is time. Filters: a version (public,
like the agent's model) or a tag (metadata, which is content: the owner's alone,
`privacy.filters_by_tag`). The numbers are public: whoever may see the agent sees them
(`privacy.visible_agent`; a private agent is a 404 to anyone else).

Error rate by failure cluster: each period's failures by cluster (`domain.cluster_series`,
counted as clustering first assigns a run, where it ended; agent-wide, so not under a version
or tag filter) over the period's runs. A cluster is named by its id and its numbers, public;
its label is content, shown as the profile's insights show it (`privacy.insights_view`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol
from urllib.parse import urlencode

from ..domain import stats
from ..domain.errors import BadRequest
from ..domain.field_limits import VERSION_RULE, version_allowed
from ..domain.models import Agent
from ..domain.pricing import cost_rule
from ..domain.privacy import ANONYMOUS, Viewer, filters_by_tag, insights_view
from ..domain.timeseries import DAY, HOUR, Bucket, fold_weeks, monday_of, scope_of
from ..ports.services import WithAgents, WithClock, WithClusters, WithEvals, WithTimeSeries
from ..render.analytics_charts import analytics_charts, cluster_colours

RANGES: dict[str, tuple[str, int]] = {"24h": (HOUR, 24), "30d": (DAY, 30), "90d": (DAY, 90),
                                      "1y": (DAY, 365)}
"""Each range: the grain it reads and how many periods of it, up to now."""
DEFAULT_RANGE = "30d"
WEEK = "week"
MAX_TAG_CHARS = 200


class AnalyticsReads(WithTimeSeries, WithClusters, WithEvals, WithClock, Protocol):
    """The concerns analytics reads: the counters over time (the agent's and its failure
    clusters', and the insights naming them), and the clock for "now"."""


@dataclass(frozen=True)
class Selection:
    """What a chart shows: a range, and at most one filter."""

    range: str = DEFAULT_RANGE
    version: str | None = None
    tag: str | None = None

    def query(self, **changed: str | None) -> dict[str, str]:
        """This selection as query parameters (with `changed`), for links."""
        fields = {"range": self.range, "version": self.version, "tag": self.tag, **changed}
        return {k: v for k, v in fields.items() if v}


def _bad(parameter: str, message: str) -> BadRequest:
    return BadRequest(f"{parameter}: {message}", [{"loc": ["query", parameter], "msg": message}])


def selection(agent: Agent, viewer: Viewer, span: str | None, version: str | None,
              tag: str | None) -> Selection:
    """The selection a query string asks for (`span` is its `range`); a 400 naming the
    parameter that is wrong."""
    span = span or DEFAULT_RANGE
    if span not in RANGES:
        raise _bad("range", f"one of {', '.join(RANGES)}")
    version, tag = version or None, tag or None
    if version is not None and not version_allowed(version):
        raise _bad("version", VERSION_RULE)
    if tag is not None:
        if not filters_by_tag(agent, viewer):
            raise _bad("tag", "tags are the owner's metadata: only the owner filters by one")
        if len(tag) > MAX_TAG_CHARS:
            raise _bad("tag", f"at most {MAX_TAG_CHARS} characters")
    if version is not None and tag is not None:
        raise _bad("tag", "filter by a version or by a tag, not both")
    if tag is not None and RANGES[span][0] != DAY:
        raise _bad("range", "a tag's numbers are kept by day: choose 30d, 90d or 1y")
    return Selection(span, version, tag)


def periods(span: str, now: datetime) -> list[str]:
    """Every period of the range `span` up to now, oldest first, as the store names them."""
    grain, count = RANGES[span]
    if grain == HOUR:
        return [(now - timedelta(hours=n)).strftime("%Y-%m-%dT%H")
                for n in range(count - 1, -1, -1)]
    return [(now - timedelta(days=n)).strftime("%Y-%m-%d") for n in range(count - 1, -1, -1)]


def analytics(store: AnalyticsReads, agent: Agent, chosen: Selection,
              viewer: Viewer = ANONYMOUS) -> dict[str, Any]:
    """`GET /api/agents/{login}/{slug}/analytics` and the charts: each period's numbers for
    the selection, and the range's totals. `agent` is one `viewer` may see."""
    grain, _ = RANGES[chosen.range]
    wanted = periods(chosen.range, store.clock.now())
    kept = dict(store.timeseries.read_buckets(
        agent.ref, scope_of(chosen.version, chosen.tag), grain, wanted[0], wanted[-1]))
    series = [(period, kept.get(period) or Bucket()) for period in wanted]
    failed = (None if chosen.version or chosen.tag else
              dict(store.clusters.read_clusters(agent.ref, grain, wanted[0], wanted[-1])))
    if chosen.range == "1y":
        grain, series = WEEK, fold_weeks(series)
        failed = None if failed is None else _by_week(failed)
    total = Bucket()
    for _, bucket in series:
        total.add(bucket)
    buckets = [{"start": period, **numbers(bucket)} for period, bucket in series]
    if failed is not None:
        for b in buckets:
            b["cluster_failures"] = failed.get(b["start"], {})
    return {"range": chosen.range, "grain": grain, "version": chosen.version, "tag": chosen.tag,
            "buckets": buckets, "total": numbers(total),
            "failure_clusters": None if failed is None else failure_clusters(
                store, agent, viewer, buckets, total.runs)}


def _by_week(days: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    weeks: dict[str, dict[str, int]] = {}
    for day, counts in days.items():
        week = weeks.setdefault(monday_of(day), {})
        for cluster, n in counts.items():
            week[cluster] = week.get(cluster, 0) + n
    return weeks


def failure_clusters(store: WithEvals, agent: Agent, viewer: Viewer,
                     buckets: list[dict[str, Any]], runs: int) -> list[dict[str, Any]]:
    """The clusters with failures in the range, most first: id, label (as `viewer` may see
    it; None for a cluster the last recomputation no longer found), failures, and their share
    of the range's runs."""
    failures: dict[str, int] = {}
    for b in buckets:
        for cluster, n in b["cluster_failures"].items():
            failures[cluster] = failures.get(cluster, 0) + n
    if not failures:
        return []
    shown = insights_view(store.evals.get_insights(agent.ref), agent, viewer)
    labels = {c["id"]: c["label"] for c in shown["clusters"] if "id" in c}
    return [{"id": cluster, "label": labels.get(cluster), "current": cluster in labels,
             "failures": n, "error_rate": stats.rate(n, runs)}
            for cluster, n in sorted(failures.items(), key=lambda kv: (-kv[1], kv[0]))]


def numbers(b: Bucket) -> dict[str, Any]:
    """A bucket's public numbers: rates with their interval, cost by the headline rule (per
    success: all runs' cost over the successes, what a success costs, as `reads.versions`
    says it; per successful run: what the successful runs cost, each)."""
    interval = stats.wilson_interval(b.successes, b.runs)
    cost, source = cost_rule(b.cost_usd, b.evidence_cost_usd)
    success_cost, _ = cost_rule(b.success_cost_usd, b.success_evidence_cost_usd)
    latency = stats.latency_summary(b.latency_hist)
    return {
        "runs": b.runs, "successes": b.successes, "failures": b.failures,
        "success_rate": stats.rate(b.successes, b.runs),
        "success_rate_ci95": list(interval) if interval else None,
        "error_rate": stats.rate(b.failures, b.runs),
        "avg_eval_score": b.eval_score_sum / b.eval_count if b.eval_count else None,
        "eval_count": b.eval_count,
        "cost_usd_per_run": round(cost / b.runs, 10) if b.runs else None,
        "cost_usd_per_success": round(cost / b.successes, 10) if b.successes else None,
        "cost_usd_per_successful_run": (round(success_cost / b.successes, 10) if b.successes
                                        else None),
        "cost_source": source if b.runs else None,
        "input_tokens": b.input_tokens, "output_tokens": b.output_tokens,
        "latency_ms": {"p50": latency["p50"], "p95": latency["p95"]},
        "models": [{"provider": provider or None, "model": model or None, "calls": use.calls,
                    "input_tokens": use.input_tokens, "output_tokens": use.output_tokens,
                    "cost_usd": round(use.cost_usd, 10)}
                   for (provider, model), use in sorted(b.models.items(),
                                                        key=lambda kv: -kv[1].calls)],
    }


class AnalyticsPageReads(AnalyticsReads, WithAgents, Protocol):
    """The charts' section: the analytics, and the agent's versions for its selector."""


def analytics_section(store: AnalyticsPageReads, agent: Agent, viewer: Viewer,
                      chosen: Selection) -> dict[str, Any]:
    """What the profile's and the dashboard's analytics section draws: the read, its charts
    (SVG text), the ranges and versions to choose from, and whether a tag may be chosen."""
    read = analytics(store, agent, chosen, viewer)
    return {"read": read, "charts": analytics_charts(read), "chosen": chosen,
            "cluster_colours": cluster_colours(read["failure_clusters"] or []),
            "ranges": [(name, urlencode(chosen.query(range=name))) for name in RANGES],
            "versions": [v.version for v in store.agents.agent_versions(agent.ref)],
            "tags": filters_by_tag(agent, viewer)}
