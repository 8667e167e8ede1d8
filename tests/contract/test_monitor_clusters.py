"""New or growing failure clusters (`alerts/monitor.py` `watch_clusters`, taken by each `look`)
on SQLite, DynamoDB (moto) and the in-memory store: a simulated stream goes in hour by hour
through the store's real ingest path, the real cluster step runs every six hours (as the
hourly state machine would for an agent with new failures, less often to keep the test
short), and a look follows each completed hour. A new kind of failure from a known hour opens
one alert about its cluster, after the change and never before, says which cluster, by how
much and since when, links it, and resolves after the failures stop; a steady stream of the
same two kinds of failure opens none."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from bench_core.alerts.delivery import slack_body
from bench_core.alerts.monitor import Change, look
from bench_core.clock import FixedClock
from bench_core.clustering.workflow import cluster_agent
from bench_core.domain.alerts import links, says
from bench_core.domain.models import AgentMeta, iso
from bench_core.domain.monitors import Metric
from bench_core.domain.privacy import alert_view
from bench_core.ports.store import Store
from bench_core.runtime.adapters import Services
from bench_core.settings import Settings

from tests.contract.test_monitor_counters import REF, RUNS_PER_HOUR, T0, clocked
from tests.factories import clean, task_events

__all__ = ["clocked"]  # the fixture, on each store

TIMEOUT = "TimeoutError: request to the search API timed out after 30s"
RATE = "HTTP 429 Too Many Requests from openai: rate limit exceeded"
PARSE = "JSONDecodeError: Expecting value while parsing the crm reply"
CHANGE_AT = 48
RECOVERED_AT = 72
HOURS = 144
CLUSTER_EVERY = 6


def failures_in(hour: int, regressed: bool, steady: bool = True) -> list[str]:
    """A timeout every other hour and a rate limit every third, steadily (unless not
    `steady`); while regressed, two runs an hour failing in a new way too."""
    out = [TIMEOUT] * (hour % 2 == 0) + [RATE] * (hour % 3 == 0) if steady else []
    return out + [PARSE] * 2 * regressed


def ingest_hour(store: Store, clock: FixedClock, hour: int, failures: list[str]) -> None:
    start = T0 + timedelta(hours=hour)
    clock.set(start + timedelta(minutes=59))
    events = []
    for i in range(RUNS_PER_HOUR):
        failed = i < len(failures)
        for j, event in enumerate(task_events(
                f"h{hour}-r{i}", status="failed" if failed else "success", duration_ms=800,
                output=failures[i] if failed else "done")):
            events.append({**event, "ts": iso(start + timedelta(minutes=5 * i, seconds=j))})
    store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), clean(events))


def run_stream(store: Store, clock: FixedClock, tmp_path: Path, regressed: range,
               steady: bool = True) -> list[tuple[int, Change]]:
    """Each hour ingested; every `CLUSTER_EVERY` hours the clusters recomputed if anything
    failed since (as an agent is due for them); then a look just after the hour completes:
    (hour, change) of each cluster alert that opened or resolved."""
    services = Services(settings=Settings(data_dir=tmp_path), store=store)
    seen, due = [], False
    for hour in range(HOURS):
        failures = failures_in(hour, hour in regressed, steady)
        ingest_hour(store, clock, hour, failures)
        due = due or bool(failures)
        clock.set(T0 + timedelta(hours=hour + 1, minutes=2))
        if (hour + 1) % CLUSTER_EVERY == 0 and due:
            cluster_agent(services, {"agent": REF.path})
            due = False
        seen += [(hour, change) for change in look(store, REF, iso(clock.now()))
                 if change.alert.metric is Metric.CLUSTER]
    return seen


def cluster_of(store: Store, word: str) -> str:
    insights = store.evals.get_insights(REF)
    assert insights is not None
    (found,) = [c["id"] for c in insights["clusters"] if word in " ".join(c["terms"])]
    return str(found)


@pytest.mark.slow  # 144 hours of batches and looks, 24 recomputations of the clusters
def test_a_new_failure_cluster_opens_one_alert_after_the_change_and_resolves_after_it_stops(
        clocked: tuple[Store, FixedClock], tmp_path: Path) -> None:
    store, clock = clocked
    seen = run_stream(store, clock, tmp_path, range(CHANGE_AT, RECOVERED_AT))
    assert [c.event for _, c in seen] == ["opened", "resolved"], "one alert, one episode"
    (opened_at, opened), (resolved_at, resolved) = seen
    parse = cluster_of(store, "jsondecodeerror")
    assert {cluster_of(store, "timeouterror"), cluster_of(store, "429")} == {"c1", "c2"}, \
        "the steady clusters kept the ids they were first given"
    alert = opened.alert
    assert (alert.cluster, alert.key) == (parse, f"failure_cluster#{parse}")
    assert CHANGE_AT <= opened_at < CHANGE_AT + 2 * CLUSTER_EVERY, \
        "after the change, within two recomputations"
    assert alert.baseline == 0 and alert.current is not None and alert.current >= 0.05
    assert alert.since <= iso(T0 + timedelta(hours=CHANGE_AT)) < alert.opened_at
    told = says(alert)
    assert told.startswith(f"New failure cluster {parse} (") and "jsondecodeerror" in told
    assert "points" in told and "since " + alert.since in told
    assert links(alert, "https://b.example", REF.login, REF.slug)["failure_clusters"] == (
        f"https://b.example/u/{REF.login}/{REF.slug}#cluster-{parse}")
    assert "cluster_label" not in alert_view(alert) and alert_view(alert)["cluster"] == parse
    slack = slack_body(opened, REF, "https://b.example")
    assert slack["blocks"][0]["text"]["text"] == f"{REF.path}: Failure cluster {parse} worse"
    assert f"#cluster-{parse}|failure clusters>" in slack["blocks"][2]["elements"][0]["text"]
    assert RECOVERED_AT <= resolved_at < RECOVERED_AT + 60, "after the failures stop"
    assert resolved.alert.alert_id == alert.alert_id
    assert resolved.alert.resolved_by == "recovery"


@pytest.mark.slow  # 144 hours of batches and looks, 24 recomputations of the clusters
def test_steady_failure_clusters_open_no_alert(clocked: tuple[Store, FixedClock],
                                               tmp_path: Path) -> None:
    store, clock = clocked
    assert run_stream(store, clock, tmp_path, range(0)) == []
    assert not [a for a in store.alerts.agent_alerts(REF) if a.metric is Metric.CLUSTER]


@pytest.mark.slow  # 144 hours of batches and looks
def test_a_cluster_that_stops_failing_resolves_though_nothing_is_recomputed(
        clocked: tuple[Store, FixedClock], tmp_path: Path) -> None:
    """The agent's only failures are the new cluster's: once they stop, nothing is due for
    clustering, and the hours without failures still count as the cluster's recovery."""
    store, clock = clocked
    seen = run_stream(store, clock, tmp_path, range(CHANGE_AT, RECOVERED_AT), steady=False)
    assert [c.event for _, c in seen] == ["opened", "resolved"]
    assert CHANGE_AT <= seen[0][0] < CHANGE_AT + 2 * CLUSTER_EVERY
    assert RECOVERED_AT <= seen[1][0] < RECOVERED_AT + 60
