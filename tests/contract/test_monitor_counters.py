"""The regression monitors over an agent's own hourly counters (`alerts/monitor.py`
`watch_counters`, taken by each `look`), on SQLite, DynamoDB (moto) and the in-memory store:
simulated streams go in hour by hour through the store's real ingest path, the store's clock
moves with them, and a look follows each completed hour. A drop in success rate opens one
alert after the change and never before, keeps it while the drop lasts, and resolves it after
recovery; a steady stream opens none. The hourly round (the Lambda's `watch_active` step on
AWS, the local runner's timer on one machine) does the same for an agent no judge ever takes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from bench_core.alerts.monitor import Change, look
from bench_core.alerts.watch import ACTIVE_WITHIN, watch_active
from bench_core.clock import FixedClock
from bench_core.domain.alerts import AlertSettings, RuleSetting, says
from bench_core.domain.models import AgentMeta, AgentRef, iso
from bench_core.domain.monitors import Metric
from bench_core.ingest.pipeline import accept
from bench_core.ports.store import Store
from bench_core.runtime.adapters import Services
from bench_core.runtime.jobs import LocalJobs
from bench_core.settings import Settings
from bench_core.store.memory.store import MemoryStore
from bench_core.store.sqlite.store import SqliteStore
from bench_core.workflows.local import LocalRunner

from tests.aws.cfn import REPO
from tests.aws.lambda_runtime import LambdaContext, fresh_function_module
from tests.conftest import HANG_GUARD_S
from tests.factories import clean, task_events

REF = AgentRef("alice", "watched")
T0 = datetime(2026, 11, 2, tzinfo=UTC)
RUNS_PER_HOUR = 6
CHANGE_AT = 48
"""The first bad hour: two days of a steady 11 in 12 succeeding before it."""
RECOVERED_AT = 72
HOURS = 132


@pytest.fixture(params=["sqlite", "dynamodb", "memory"])
def clocked(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, FixedClock]]:
    clock = FixedClock(T0)
    if request.param == "memory":
        yield MemoryStore.open(clock=clock), clock
    elif request.param == "sqlite":
        sqlite = SqliteStore.open(tmp_path / "bench.db", clock=clock)
        yield sqlite, clock
        sqlite.close()
    else:
        from tests.aws.moto_table import dynamo_store

        with dynamo_store(clock=clock) as store:
            yield store, clock


def failures_in(hour: int, regressed: bool) -> int:
    """3 of 6 failing while regressed; else one every other hour."""
    if regressed:
        return 3
    return 1 if hour % 2 == 0 else 0


def hour_events(hour: int, failures: int, cost: float | None = None
                ) -> list[dict[str, Any]]:
    """The hour's runs, `failures` of them failing, all ending within it."""
    start = T0 + timedelta(hours=hour)
    events = []
    for i in range(RUNS_PER_HOUR):
        status = "failed" if i < failures else "success"
        for j, event in enumerate(task_events(f"h{hour}-r{i}", status=status, duration_ms=800,
                                              cost=cost)):
            events.append({**event, "ts": iso(start + timedelta(minutes=5 * i, seconds=j))})
    return events


def ingest_hour(store: Store, clock: FixedClock, hour: int, failures: int,
                cost: float | None = None) -> None:
    """The hour's runs, a batch ending within it, sent as the hour ends."""
    clock.set(T0 + timedelta(hours=hour, minutes=59))
    store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug),
                        clean(hour_events(hour, failures, cost)))


def run_stream(store: Store, clock: FixedClock, regressed: range) -> list[tuple[int, Change]]:
    """Each hour ingested, then a look just after it completes; (hour, change) of each alert
    that opened or resolved, the hour being the last completed one at that look."""
    seen = []
    for hour in range(HOURS):
        ingest_hour(store, clock, hour, failures_in(hour, hour in regressed))
        clock.set(T0 + timedelta(hours=hour + 1, minutes=2))
        seen += [(hour, change) for change in look(store, REF, iso(clock.now()))]
    return seen


def states(store: Store) -> dict[str, str]:
    return {a.alert_id: a.state for a in store.alerts.agent_alerts(REF)}


def run_rounds(store: Store, clock: FixedClock, regressed: range, round_: Callable[[], None],
               send: Callable[[int, int], None] | None = None) -> list[tuple[int, str]]:
    """Like `run_stream`, an hourly round instead of a look: (hour, "opened" or "resolved")
    as the agent's alerts change. `send(hour, failures)` sends each hour's runs
    (`ingest_hour` unless given)."""
    seen, before = [], states(store)
    for hour in range(HOURS):
        failures = failures_in(hour, hour in regressed)
        if send is None:
            ingest_hour(store, clock, hour, failures)
        else:
            send(hour, failures)
        clock.set(T0 + timedelta(hours=hour + 1, minutes=2))
        round_()
        after = states(store)
        seen += [(hour, "opened") for a in after if a not in before]
        seen += [(hour, "resolved") for a, state in after.items()
                 if state == "resolved" and before.get(a) not in (None, "resolved")]
        before = after
    return seen


def assert_one_episode(seen: list[tuple[int, str]]) -> None:
    (opened_at, opened), (resolved_at, resolved) = seen
    assert (opened, resolved) == ("opened", "resolved")
    assert CHANGE_AT <= opened_at < CHANGE_AT + 12
    assert RECOVERED_AT <= resolved_at < RECOVERED_AT + 60


@pytest.mark.slow  # on DynamoDB (moto): 132 hours of batches and looks
def test_a_drop_opens_one_alert_after_the_change_and_resolves_after_recovery(
        clocked: tuple[Store, FixedClock]) -> None:
    store, clock = clocked
    seen = run_stream(store, clock, range(CHANGE_AT, RECOVERED_AT))
    assert [(c.event, c.alert.metric) for _, c in seen] == [
        ("opened", Metric.SUCCESS), ("resolved", Metric.SUCCESS)], "one alert, one episode"
    (opened_at, opened), (resolved_at, resolved) = seen
    assert CHANGE_AT <= opened_at < CHANGE_AT + 12, "after the change, within half a day"
    assert opened.alert.version is None and opened.alert.current is not None
    assert opened.alert.baseline is not None and opened.alert.current < opened.alert.baseline
    assert opened.alert.since <= iso(T0 + timedelta(hours=CHANGE_AT)) < opened.alert.opened_at
    assert RECOVERED_AT <= resolved_at < RECOVERED_AT + 60, "after recovery, within 2.5 days"
    assert says(opened.alert).startswith("Success rate went from 91.7% (the four weeks before)")
    assert resolved.alert.resolved_by == "recovery"
    assert resolved.alert.alert_id == opened.alert.alert_id
    assert store.alerts.agent_alerts(REF, unresolved=True) == []


@pytest.mark.slow  # on DynamoDB (moto): 132 hours of batches and looks
def test_a_steady_stream_opens_no_alert(clocked: tuple[Store, FixedClock]) -> None:
    store, clock = clocked
    assert run_stream(store, clock, range(0)) == []
    assert store.alerts.agent_alerts(REF) == []


def test_a_look_reads_completed_hours_only(clocked: tuple[Store, FixedClock]) -> None:
    """The hour under way is no period: the drop within it is not seen until it completes."""
    store, clock = clocked
    for hour in range(CHANGE_AT):
        ingest_hour(store, clock, hour, failures_in(hour, False))
    for hour in range(CHANGE_AT, CHANGE_AT + 24):
        ingest_hour(store, clock, hour, RUNS_PER_HOUR)
    clock.set(T0 + timedelta(hours=CHANGE_AT + 23, minutes=59, seconds=30))
    opened = look(store, REF, iso(clock.now()))
    assert [c.alert.metric for c in opened] == [Metric.SUCCESS]
    assert opened[0].alert.runs == 24 * RUNS_PER_HOUR
    assert opened[0].alert.current == pytest.approx(1 / 24), \
        "the day of completed hours: hour 47's six successes in, the hour under way out"


@pytest.mark.slow  # on DynamoDB (moto): 132 hours of batches and looks
def test_the_hourly_round_watches_a_private_agent_whose_runs_the_judge_skips(
        clocked: tuple[Store, FixedClock], tmp_path: Path) -> None:
    """Sent through the ingest pipeline, every run skipped by its judge budget (sample rate
    0), the agent private from its first hour: no eval ever looks, no listing names it, and
    the hourly round opens its alert after the change and resolves it after recovery, from
    the first round on; another agent whose last run is older than `ACTIVE_WITHIN` is not
    looked at."""
    store, clock = clocked
    services = Services(settings=Settings(data_dir=tmp_path), store=store)
    idle = AgentRef(REF.login, "idle")
    clock.set(T0 - ACTIVE_WITHIN - timedelta(minutes=1))
    store.ingest.ingest(idle.login, AgentMeta(slug=idle.slug), clean(
        [{**e, "ts": iso(clock.now())} for e in task_events("old", status="failed")]))
    looked: list[list[AgentRef]] = []

    def send(hour: int, failures: int) -> None:
        clock.set(T0 + timedelta(hours=hour, minutes=59))
        if hour == 0:
            store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), [])
            store.agents.update_agent(REF, {"visibility": "private", "judge_sample_rate": 0.0})
        accept(services, REF.login, AgentMeta(slug=REF.slug),
               clean(hour_events(hour, failures)), later=lambda *_: None)  # no live watcher

    def round_() -> None:
        looked.append(watch_active(services))

    assert_one_episode(run_rounds(store, clock, range(CHANGE_AT, RECOVERED_AT), round_, send))
    assert looked == [[REF]] * HOURS, "every round, and never the idle agent"
    agent = store.agents.get_agent(REF)
    assert agent is not None and agent.visibility == "private"
    assert (agent.stats.eval_count, agent.stats.eval_skipped) == (0, HOURS * RUNS_PER_HOUR)
    assert REF not in [a.ref for a in store.leaderboard.leaderboard("runs", limit=50)]
    clock.advance(ACTIVE_WITHIN + timedelta(hours=1))
    assert watch_active(services) == [], "no runs lately: not looked at"


@pytest.mark.parametrize("clocked", ["dynamodb"], indirect=True)
@pytest.mark.slow  # on DynamoDB (moto): 132 hours of batches and looks
def test_the_hourly_lambda_step_watches_an_agent_no_judge_takes(
        clocked: tuple[Store, FixedClock], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    """AWS's hourly state machine runs ClusterFunction's `watch_active` step: the real handler,
    over the agents active in the last two hours (no eval ever ran for this one)."""
    from bench_core.lambdas import workflow_steps

    store, clock = clocked
    services = Services(settings=Settings(data_dir=tmp_path), store=store)
    monkeypatch.setattr(workflow_steps, "_services", services)
    handler = fresh_function_module(REPO / "functions" / "cluster").handler
    watched: list[int] = []

    def round_() -> None:
        watched.append(handler({"step": "watch_active", "state": {}}, LambdaContext())["watched"])

    assert_one_episode(run_rounds(store, clock, range(CHANGE_AT, RECOVERED_AT), round_))
    assert watched == [1] * HOURS, "from its first hour on, listed or not"
    clock.advance(ACTIVE_WITHIN + timedelta(minutes=1))
    assert handler({"step": "watch_active", "state": {}}, LambdaContext())["watched"] == 0, \
        "no runs lately: not looked at"


@pytest.mark.parametrize("clocked", ["sqlite"], indirect=True)
def test_the_local_runners_hourly_round_watches_an_agent_no_judge_takes(
        clocked: tuple[Store, FixedClock], tmp_path: Path) -> None:
    store, clock = clocked
    jobs = LocalJobs(Services(settings=Settings(data_dir=tmp_path), store=store))
    runner = LocalRunner(jobs, workers=1, clock=clock)

    def round_() -> None:
        runner.scheduled_round()  # the looks run in a thread of their own: wait for it
        for thread in threading.enumerate():
            if thread.name == "bench-alerts-hourly":
                thread.join(HANG_GUARD_S)

    seen = run_rounds(store, clock, range(CHANGE_AT, RECOVERED_AT), round_)
    assert_one_episode(seen)


def test_the_hourly_round_starts_a_look_only_while_one_fits(tmp_path: Path) -> None:
    clock = FixedClock(T0)
    store = MemoryStore.open(clock=clock)
    services = Services(settings=Settings(data_dir=tmp_path), store=store)
    ingest_hour(store, clock, 0, 0)
    assert watch_active(services, time_left=lambda: timedelta(seconds=30)) == [], \
        "a look and its deliveries take longer than is left"
    assert watch_active(services, time_left=lambda: timedelta(minutes=5)) == [REF]
    assert watch_active(services) == [REF]


def test_cost_per_successful_run_is_told_by_its_threshold(clocked: tuple[Store, FixedClock]
                                                          ) -> None:
    """An owner who wants a line instead: with a threshold it opens when the last day's cost
    per successful run is past it."""
    store, clock = clocked
    store.alerts.set_alert_settings(REF, AlertSettings(rules=(
        RuleSetting(metric=Metric.COST, mode="threshold", threshold=0.05),)))
    for hour in range(30):
        ingest_hour(store, clock, hour, 0, cost=0.01 if hour < 12 else 0.08)
        clock.set(T0 + timedelta(hours=hour + 1, minutes=2))
        opened = [c.alert.metric for c in look(store, REF, iso(clock.now()))]
        # the day's cost per success, (cheap hours x 0.01 + dear ones x 0.08) / 24, passes 0.05
        # when the day ending at hour 25 holds 14 dear hours
        assert opened == ([Metric.COST] if hour == 25 else []), hour
    (alert,) = store.alerts.agent_alerts(REF, unresolved=True)
    assert (alert.metric, alert.mode, alert.baseline) == (Metric.COST, "threshold", 0.05)
    assert alert.current == pytest.approx((6 * 0.01 + 18 * 0.08) / 24)


def test_cost_per_successful_run_is_found_significant_from_the_hourly_squares(
        clocked: tuple[Store, FixedClock]) -> None:
    """The hourly counters keep each run's cost squared, so a rise in cost per successful run
    is tested for significance like the rest: dearer runs from hour 48 open a significant
    alert after the change, never before, on each store."""
    store, clock = clocked
    store.alerts.set_alert_settings(REF, AlertSettings(rules=tuple(
        RuleSetting(metric=m, mode="off") for m in Metric if m is not Metric.COST)))
    seen = []
    for hour in range(CHANGE_AT + 24):
        start = T0 + timedelta(hours=hour)
        clock.set(start + timedelta(minutes=59))
        dear = 2.0 if hour >= CHANGE_AT else 1.0
        events = []
        for i in range(RUNS_PER_HOUR):
            cost = 0.01 * dear * (0.7 + 0.15 * ((hour + i) % 5))
            for j, event in enumerate(task_events(f"h{hour}-r{i}", status="success",
                                                  duration_ms=800, cost=cost)):
                events.append({**event, "ts": iso(start + timedelta(minutes=5 * i, seconds=j))})
        store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), clean(events))
        clock.set(T0 + timedelta(hours=hour + 1, minutes=2))
        seen += [(hour, c) for c in look(store, REF, iso(clock.now()))]
    ((hour, opened),) = seen
    assert CHANGE_AT <= hour < CHANGE_AT + 12, "after the change, within half a day"
    alert = opened.alert
    assert (opened.event, alert.metric, alert.mode) == ("opened", Metric.COST, "significant")
    assert alert.p_value is not None and alert.level is not None
    assert alert.p_value < alert.level
    assert alert.baseline == pytest.approx(0.01, rel=0.01) and alert.current is not None
    assert alert.current > 0.012
