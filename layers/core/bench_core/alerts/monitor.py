"""Run an agent's regression monitors and keep its alerts (`domain.monitors`, `domain.alerts`).

Three things are watched at each look: each agent's newest version against the one before
it, from the version counters (`watch_versions`), the agent's own counters over time
(`watch_counters`): its hourly buckets (`domain.timeseries`, read from `store.timeseries`) as
a `domain.monitors.Series` of completed hours handed to `watch_series`, and over the same
hours each of its failure clusters' share of runs (`watch_clusters`: new or growing clusters,
`domain.cluster_series`). Hours, not days: the
monitors' windows (a day, three days, a week, against four weeks before) and their false-alarm
budget are counted in hourly looks (`domain.monitors.PERIOD_HOURS`), and "since" is told to the
hour; days would let a look change its answer once a day only, and spend the budget wrongly.
A look reads `HOURS_READ` hours (five weeks: one Query of the agent's hour partition on
DynamoDB, eventually consistent), more only while an alert opened longer ago is open (its
baseline is the four weeks before it began), at most `MAX_HOURS_READ`.

A look is claimed per agent and hour in the store (`AlertStore.claim_look`) before it is
taken: the monitors' false-alarm budget counts looks (`domain.monitors.LOOK_ALPHA`), so
however many runners ask (the local worker after each agent's evals, the hourly round, the
sweep Lambda run twice) an agent is looked at once an hour, and a second run of the same hour
changes nothing.
"""

from __future__ import annotations

import uuid
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal, Protocol

from ..domain import timeseries
from ..domain.alerts import ALERTS_SHOWN, Alert, alert_key, from_finding
from ..domain.cluster_series import MAX_CLUSTERS
from ..domain.models import AgentRef, iso
from ..domain.monitors import (
    BASELINE,
    LOOK_ALPHA,
    PERIOD_HOURS,
    WINDOWS,
    Finding,
    Metric,
    Period,
    Rule,
    Series,
    period_of,
    period_of_bucket,
    versus,
    watch,
)
from ..ports.services import WithAgents, WithAlerts, WithClusters, WithEvals, WithTimeSeries

Event = Literal["opened", "resolved"]


class CounterConcerns(WithAlerts, WithTimeSeries, WithEvals, WithClusters, Protocol):
    """The hourly counters, the failure clusters' (and the insights naming them), and the
    alerts."""


class MonitorConcerns(WithAgents, CounterConcerns, Protocol):
    """The version counters and the hourly counters the monitors read, and the alerts they
    keep."""


HOURS_READ = (BASELINE + WINDOWS[-1]) * PERIOD_HOURS
"""The longest window and the baseline before it: what a look needs with no alert open."""
MAX_HOURS_READ = 90 * 24
"""The most a look reads, however long ago an open alert began: past it, the baseline before
such an alert is partly unread, and its recovery is judged against what is."""


@dataclass(frozen=True)
class Sighting:
    """A monitor's finding at one look, with what its alert would say: the version it is
    about (None for the agent as a whole) and when the worse stretch began."""

    finding: Finding
    since: str
    version: str | None = None
    against: str | None = None
    cluster: str | None = None
    label: str | None = None


@dataclass(frozen=True)
class Change:
    """An alert that opened or resolved at this look: what the owner is told."""

    alert: Alert
    event: Event


def keep(store: WithAlerts, ref: AgentRef, sightings: Iterable[Sighting], now: str
         ) -> list[Change]:
    """Open (or update) an alert for each firing finding, resolve the alert of each metric
    found recovered; "unknown" (too few runs) leaves an alert as it is. The alerts that opened
    or resolved now."""
    changes = []
    for sighting in sightings:
        finding = sighting.finding
        if finding.state == "firing":
            fresh = from_finding(finding, alert_id=uuid.uuid4().hex, since=sighting.since,
                                 now=now, version=sighting.version, against=sighting.against,
                                 cluster=sighting.cluster, cluster_label=sighting.label)
            alert, opened = store.alerts.raise_alert(ref, fresh)
            if opened:
                changes.append(Change(alert, "opened"))
        elif finding.state == "ok":
            done = store.alerts.resolve_alert(
                ref, alert_key(finding.metric, sighting.version, sighting.cluster), now,
                "recovery")
            if done is not None:
                changes.append(Change(done, "resolved"))
    return changes


def watch_versions(store: MonitorConcerns, ref: AgentRef, now: str) -> list[Change]:
    """The newest version against the one before it, for each metric the owner watches; an
    unresolved alert of an older version is resolved as superseded (no look can end it)."""
    versions = store.agents.agent_versions(ref)
    changes = []
    for alert in store.alerts.agent_alerts(ref, unresolved=True):
        if alert.version is not None and (not versions or alert.version != versions[0].version):
            done = store.alerts.resolve_alert(ref, alert.key, now, "superseded")
            if done is not None:
                changes.append(Change(done, "resolved"))
    if len(versions) < 2:
        return changes
    newer, older = versions[0], versions[1]
    since = newer.first_run_at or now
    rules = store.alerts.alert_settings(ref).rules_for()
    return changes + keep(store, ref, [
        Sighting(versus(period_of(newer), period_of(older), rule), since, newer.version,
                 older.version)
        for rule in rules if rule.metric is not Metric.CLUSTER], now)


def watch_series(store: WithAlerts, ref: AgentRef, series: Series, starts: Sequence[str],
                 now: str, kept: Sequence[Alert] | None = None,
                 rules: Sequence[Rule] | None = None) -> list[Change]:
    """The agent's own monitors over its counters' completed periods (`series`, oldest first;
    `starts[i]` when period `i` began, ISO text like the alerts' times): each metric's open
    alert is judged against the baseline before it began, and a metric whose alert resolved
    is looked at only after that (`domain.monitors.watch`). Called once per completed period
    (`watch_counters`); `kept` and `rules`, the agent's alerts and rules if already read."""
    if kept is None:
        kept = store.alerts.agent_alerts(ref, limit=ALERTS_SHOWN)
    if rules is None:
        rules = store.alerts.alert_settings(ref).rules_for()
    return keep(store, ref, [sighting(series, rule, starts, now, kept) for rule in rules
                             if rule.metric is not Metric.CLUSTER], now)


def sighting(series: Series, rule: Rule, starts: Sequence[str], now: str, kept: Sequence[Alert],
             cluster: str | None = None, label: str | None = None,
             level: float = LOOK_ALPHA) -> Sighting:
    """One look at `rule` over `series` (a cluster's, with `cluster`), its alert's state
    taken from `kept`: the open one's start, the last one's resolution."""
    key = alert_key(rule.metric, cluster=cluster)
    mine = [a for a in kept if a.key == key]
    open_ = next((a for a in mine if a.state != "resolved"), None)
    resolved_at = next((a.resolved_at for a in mine if a.resolved_at is not None), None)
    finding = watch(series, rule,
                    None if open_ is None else bisect_left(starts, open_.since),
                    None if resolved_at is None else bisect_right(starts, resolved_at), level)
    since = open_.since if open_ is not None else (
        starts[finding.since] if finding.since is not None and finding.since < len(starts)
        else now)
    return Sighting(finding, since, cluster=cluster, label=label)


CLUSTER_LEVEL = LOOK_ALPHA / MAX_CLUSTERS
"""Each cluster's level at each look: the failure-cluster metric's budget shared by as many
clusters as a recomputation finds (`domain.monitors` says why)."""


def watch_clusters(store: CounterConcerns, ref: AgentRef, hours: Sequence[timeseries.Bucket],
                   starts: Sequence[str], now: str, kept: Sequence[Alert],
                   rules: Sequence[Rule]) -> list[Change]:
    """New or growing failure clusters: each of the agent's clusters (those its insights
    name, and any whose alert is open) as the share of the agent's runs that failed in it,
    hour by hour (`hours`, the agent's, begun at `starts`), held to `CLUSTER_LEVEL`. Only the
    hours before the one the clusters were last computed in, and those after it in which no
    run failed: a run is counted in its cluster when clustering first assigns it, so a later
    hour with failures is not counted yet (read as none, it would look like recovery), while
    an agent that stopped failing is not recomputed (nothing is due) and must still be seen
    to recover."""
    rule = next((r for r in rules if r.metric is Metric.CLUSTER), None)
    insights = store.evals.get_insights(ref) if rule is not None else None
    if rule is None or insights is None or not insights.get("computed_at"):
        return []
    labels = {c["id"]: c.get("label") for c in insights.get("clusters", []) if "id" in c}
    opened = [a.cluster for a in kept if a.metric is Metric.CLUSTER and a.cluster is not None
              and a.state != "resolved"]
    watched = list(dict.fromkeys([*opened, *labels]))
    counted = bisect_right(starts, iso(_at(insights["computed_at"]).replace(
        minute=0, second=0, microsecond=0) - timedelta(hours=1)))
    while counted < len(hours) and not hours[counted].failures:
        counted += 1  # nothing failed since: nothing to count (and no recomputation is due)
    if not watched or not counted:
        return []
    failed = dict(store.clusters.read_clusters(ref, timeseries.HOUR, starts[0][:13],
                                               starts[counted - 1][:13]))
    sightings = []
    for cluster in watched:
        series = Series([Period(runs=b.runs, successes=max(0, b.runs - failed.get(
            start[:13], {}).get(cluster, 0))) for b, start in zip(hours, starts[:counted],
                                                                   strict=False)])
        sightings.append(sighting(series, rule, starts[:counted], now, kept, cluster,
                                  labels.get(cluster), CLUSTER_LEVEL))
    return keep(store, ref, sightings, now)


def _hour(start: datetime) -> str:
    return timeseries.period_of(iso(start), timeseries.HOUR)


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def hourly_buckets(store: WithTimeSeries, ref: AgentRef, first: datetime, end: datetime
                   ) -> tuple[list[timeseries.Bucket], list[str]] | None:
    """The agent's hours from `first` up to `end` (excluded; both on the hour), every hour
    listed (an hour without runs is empty), and when each began; None when none of them
    counted anything."""
    hours = int((end - first) / timedelta(hours=1))
    starts = [first + timedelta(hours=i) for i in range(hours)]
    if not starts:
        return None
    kept = dict(store.timeseries.read_buckets(ref, timeseries.ALL, timeseries.HOUR, _hour(starts[0]),
                                              _hour(starts[-1])))
    if not kept:
        return None
    empty = timeseries.Bucket()
    return [kept.get(_hour(s), empty) for s in starts], [iso(s) for s in starts]


def watch_counters(store: CounterConcerns, ref: AgentRef, now: str) -> list[Change]:
    """The agent's own monitors over its hourly counters, and its failure clusters', up to
    the last completed hour (the one under way is not a period yet: a look within it would
    count it twice)."""
    end = _at(now).replace(minute=0, second=0, microsecond=0)
    kept = store.alerts.agent_alerts(ref, limit=ALERTS_SHOWN)
    first = end - timedelta(hours=HOURS_READ)
    for alert in kept:
        if alert.version is None and alert.state != "resolved":
            began = _at(alert.since) - timedelta(hours=BASELINE * PERIOD_HOURS)
            first = min(first, began.replace(minute=0, second=0, microsecond=0))
    first = max(first, end - timedelta(hours=MAX_HOURS_READ))
    read = hourly_buckets(store, ref, first, end)
    if read is None:
        return []
    hours, starts = read
    series = Series([period_of_bucket(hour) for hour in hours])
    rules = store.alerts.alert_settings(ref).rules_for()
    return (watch_series(store, ref, series, starts, now, kept, rules)
            + watch_clusters(store, ref, hours, starts, now, kept, rules))


def look(store: MonitorConcerns, ref: AgentRef, now: str) -> list[Change]:
    """One look at the agent's monitors, if this hour's has not been taken (see the module's
    docstring): its newest version against the one before, and its hourly counters; the alerts
    that opened or resolved."""
    if not store.alerts.claim_look(ref, now[:13]):
        return []
    return watch_versions(store, ref, now) + watch_counters(store, ref, now)
