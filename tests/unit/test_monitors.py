"""The regression monitors on simulated streams with a known change point and without one:
they fire after the change, never before, resolve after the recovery, and stay quiet at
steady state; each metric, both modes, and a version against its predecessor."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from bench_core.alerts.monitor import watch_series
from bench_core.domain import stats
from bench_core.domain.alerts import AlertSettings, RuleSetting
from bench_core.domain.models import AgentRef, iso
from bench_core.domain.monitors import (
    LOOK_ALPHA,
    Metric,
    Period,
    Rule,
    Series,
    period_of,
    period_of_bucket,
    versus,
    watch,
)
from bench_core.domain.timeseries import Bucket
from bench_core.domain.versions import VersionStats
from bench_core.store.memory.store import MemoryStore

from tests.monitor_support import Regime, alert_events, stream

DAY = 24
STEADY = Regime()
CHANGE = 35 * DAY
"""Where a stream changes: after a full baseline and a week."""


def changed(worse: Regime, recover_at: int | None = None):  # noqa: ANN201 - a regime schedule
    def regime_at(h: int) -> Regime:
        return worse if CHANGE <= h < (recover_at or 10 ** 9) else STEADY
    return regime_at


@pytest.mark.parametrize(("metric", "worse"), [
    (Metric.SUCCESS, replace(STEADY, success=0.8)),
    (Metric.SCORE, replace(STEADY, score=0.65)),
    (Metric.COST, replace(STEADY, cost=0.014)),
    (Metric.P95, replace(STEADY, latency_ms=1400.0)),
])
def test_a_change_fires_after_it_never_before_and_resolves_after_the_recovery(
        metric: Metric, worse: Regime) -> None:
    recover = CHANGE + 10 * DAY
    periods = stream(7, recover + 10 * DAY, 100, changed(worse, recover))
    events = list(alert_events(periods, Rule(metric)))
    assert [e.kind for e in events] == ["open", "resolve"], events
    opened, resolved = events
    assert CHANGE <= opened.hour < CHANGE + 7 * DAY, "after the change, within a week"
    assert opened.finding.since is not None and opened.finding.since >= CHANGE - 7 * DAY
    test = opened.finding.test
    assert test is not None and test.p_value is not None and test.p_value < LOOK_ALPHA
    assert recover <= resolved.hour < recover + 3 * DAY, "after the recovery, within days"


def test_a_steady_stream_never_fires() -> None:
    periods = stream(11, 120 * DAY, 100, lambda h: STEADY)
    for rule in [Rule(metric) for metric in Metric]:
        assert list(alert_events(periods, rule)) == [], rule


def test_a_change_smaller_than_the_minimum_effect_does_not_fire() -> None:
    periods = stream(3, CHANGE + 14 * DAY, 1000, changed(replace(STEADY, success=0.87)))
    assert [e.kind for e in alert_events(periods, Rule(Metric.SUCCESS, min_effect=0.01))] == [
        "open"], "3 points at 1,000 runs a day is significant"
    assert list(alert_events(periods, Rule(Metric.SUCCESS))) == [], "the default is 5 points"


def test_an_alert_stays_open_while_the_regression_lasts() -> None:
    periods = stream(5, CHANGE + 60 * DAY, 100, changed(replace(STEADY, success=0.7)))
    events = list(alert_events(periods, Rule(Metric.SUCCESS)))
    assert [e.kind for e in events] == ["open"], "compared with the baseline before it began"


def test_the_threshold_mode_fires_on_the_line_and_resolves_back() -> None:
    rule = Rule(Metric.SUCCESS, mode="threshold", threshold=0.8)
    periods = stream(9, CHANGE + 20 * DAY, 200,
                     changed(replace(STEADY, success=0.7), CHANGE + 10 * DAY))
    events = list(alert_events(periods, rule))
    assert [e.kind for e in events] == ["open", "resolve"]
    assert CHANGE <= events[0].hour < CHANGE + DAY
    assert events[0].finding.test is not None and events[0].finding.test.current < 0.8


def test_too_few_runs_say_nothing() -> None:
    series = Series(stream(1, CHANGE, 2, lambda h: replace(STEADY, success=0.1)))
    finding = watch(series, Rule(Metric.SUCCESS))
    assert finding.state == "unknown"


def test_cost_is_not_tested_without_the_squares() -> None:
    periods = [replace(p, cost_sq_sum=None) for p in
               stream(2, CHANGE + 7 * DAY, 100, changed(replace(STEADY, cost=0.03)))]
    assert watch(Series(periods), Rule(Metric.COST)).state == "unknown"
    by_line = Rule(Metric.COST, mode="threshold", threshold=0.02)
    assert watch(Series(periods), by_line).state == "firing"


def version(name: str, runs: int, successes: int, latency_ms: float = 500.0) -> VersionStats:
    hist = stats.empty_histogram()
    hist[stats.bucket_index(latency_ms)] = runs
    return VersionStats(name, runs=runs, successes=successes, cost_usd_total=0.01 * runs,
                        latency_hist=hist, eval_count=runs, eval_score_sum=0.8 * runs)


def test_a_new_version_against_its_predecessor() -> None:
    older = period_of(version("1.0.0", 500, 450))
    assert versus(period_of(version("1.1.0", 300, 210)), older,
                  Rule(Metric.SUCCESS)).state == "firing"
    assert versus(period_of(version("1.1.0", 300, 268)), older,
                  Rule(Metric.SUCCESS)).state == "ok"
    assert versus(period_of(version("1.1.0", 5, 0)), older,
                  Rule(Metric.SUCCESS)).state == "unknown"
    slower = versus(period_of(version("1.1.0", 300, 270, 900.0)), older, Rule(Metric.P95))
    assert slower.state == "firing" and slower.test is not None
    assert slower.test.current is not None and slower.test.baseline is not None
    assert slower.test.current > slower.test.baseline


def test_a_series_totals_any_stretch() -> None:
    periods = [Period(runs=i, successes=i // 2, latency_hist=[0, i]) for i in range(10)]
    totals = Series(periods).totals(3, 6)
    assert (totals.runs, totals.successes, totals.latency_hist[1]) == (12, 5, 12)
    assert Series(periods).totals(-5, 2).runs == 1


def test_an_agents_series_keeps_one_alert_in_the_store_from_the_change_to_the_recovery() -> None:
    """The time series' seam (`alerts.monitor.watch_series`), a look per completed hour,
    through the store's alerts: one alert, opened after the change, resolved after the
    recovery, none before."""
    recover = CHANGE + 10 * DAY
    periods = stream(7, recover + 6 * DAY, 100, changed(replace(STEADY, success=0.8), recover))
    start = datetime(2026, 1, 1, tzinfo=UTC)
    starts = [iso(start + timedelta(hours=h)) for h in range(len(periods))]
    store, ref = MemoryStore.open(), AgentRef("owner", "agent")
    store.alerts.set_alert_settings(ref, AlertSettings(rules=tuple(
        RuleSetting(metric=m, mode="off") for m in Metric if m is not Metric.SUCCESS)))
    series = Series()
    events = []
    for h, period in enumerate(periods):
        series.append(period)
        now = iso(start + timedelta(hours=h + 1))
        events += [(h, change.event) for change in watch_series(store, ref, series, starts, now)]
    assert [event for _, event in events] == ["opened", "resolved"]
    (opened, _), (resolved, _) = events
    assert CHANGE <= opened < CHANGE + 7 * DAY and recover <= resolved < recover + 3 * DAY
    (alert,) = store.alerts.agent_alerts(ref)
    assert (alert.key, alert.state, alert.resolved_by) == ("success_rate", "resolved", "recovery")
    assert alert.since >= starts[CHANGE - 7 * DAY] and alert.baseline_runs > 2000


def test_an_hour_gives_its_squares_only_if_it_kept_them_for_all_its_runs() -> None:
    """Buckets written before the squares were kept hold runs without them: no cost test
    over such an hour (a zero sum of squares would invent a certainty)."""
    kept = Bucket(runs=3, successes=2, cost_usd=0.03, success_cost_usd=0.02, cost_sq_usd=0.0003,
                  evidence_cost_usd=0.05, evidence_cost_sq_usd=0.001, squared_runs=3)
    assert period_of_bucket(kept).cost_sq_sum == pytest.approx(0.0003), "the owner's, as cost"
    assert period_of_bucket(kept).success_cost_sum == pytest.approx(0.02)
    by_evidence = replace(kept, cost_usd=0.0, success_cost_usd=0.0, success_evidence_cost_usd=0.04)
    assert period_of_bucket(by_evidence).cost_sq_sum == pytest.approx(0.001)
    assert period_of_bucket(by_evidence).success_cost_sum == pytest.approx(0.04)
    assert period_of_bucket(replace(kept, squared_runs=2)).cost_sq_sum is None
