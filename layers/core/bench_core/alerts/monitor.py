"""Run an agent's regression monitors and keep its alerts (`domain.monitors`, `domain.alerts`).

What is watched today is each agent's newest version against the one before it, from the
version counters (`watch_versions`); the time series of an agent's own counters is
`watch_series`, ready for its hourly counters to be handed in as a `domain.monitors.Series`.

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
from typing import Literal, Protocol

from ..domain.alerts import ALERTS_SHOWN, Alert, alert_key, from_finding
from ..domain.models import AgentRef
from ..domain.monitors import Finding, Series, period_of, versus, watch
from ..ports.services import WithAgents, WithAlerts

Event = Literal["opened", "resolved"]


class MonitorConcerns(WithAgents, WithAlerts, Protocol):
    """The version counters the monitors read and the alerts they keep."""


@dataclass(frozen=True)
class Sighting:
    """A monitor's finding at one look, with what its alert would say: the version it is
    about (None for the agent as a whole) and when the worse stretch began."""

    finding: Finding
    since: str
    version: str | None = None
    against: str | None = None


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
                                 now=now, version=sighting.version, against=sighting.against)
            alert, opened = store.alerts.raise_alert(ref, fresh)
            if opened:
                changes.append(Change(alert, "opened"))
        elif finding.state == "ok":
            done = store.alerts.resolve_alert(ref, alert_key(finding.metric, sighting.version),
                                              now, "recovery")
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
        for rule in rules], now)


def watch_series(store: WithAlerts, ref: AgentRef, series: Series, starts: Sequence[str],
                 now: str) -> list[Change]:
    """The agent's own monitors over its counters' completed periods (`series`, oldest first;
    `starts[i]` when period `i` began, ISO text like the alerts' times): each metric's open
    alert is judged against the baseline before it began, and a metric whose alert resolved
    is looked at only after that (`domain.monitors.watch`). The seam for the hourly counters:
    call it once per completed period."""
    kept = store.alerts.agent_alerts(ref, limit=ALERTS_SHOWN)
    sightings = []
    for rule in store.alerts.alert_settings(ref).rules_for():
        key = alert_key(rule.metric)
        mine = [a for a in kept if a.key == key]
        open_ = next((a for a in mine if a.state != "resolved"), None)
        resolved_at = next((a.resolved_at for a in mine if a.resolved_at is not None), None)
        finding = watch(series, rule,
                        None if open_ is None else bisect_left(starts, open_.since),
                        None if resolved_at is None else bisect_right(starts, resolved_at))
        since = open_.since if open_ is not None else (
            starts[finding.since] if finding.since is not None and finding.since < len(starts)
            else now)
        sightings.append(Sighting(finding, since))
    return keep(store, ref, sightings, now)


def look(store: MonitorConcerns, ref: AgentRef, now: str) -> list[Change]:
    """One look at the agent's monitors, if this hour's has not been taken (see the module's
    docstring); the alerts that opened or resolved."""
    if not store.alerts.claim_look(ref, now[:13]):
        return []
    return watch_versions(store, ref, now)
