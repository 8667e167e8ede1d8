"""Alerts from the regression monitors in the store: at most one unresolved per agent and
monitor key (an ongoing regression updates it), acknowledged and resolved by key, listed
unresolved first and newest first, and each delivery attempt kept. The same suite runs on
SQLite, DynamoDB (moto) and the in-memory store."""

from __future__ import annotations

from typing import Any

from bench_core.domain.alerts import Alert, AlertSettings, Delivery, RuleSetting
from bench_core.domain.models import AgentRef
from bench_core.domain.monitors import Metric
from bench_core.ports.store import Store

REF = AgentRef("owner", "helper")
OTHER = AgentRef("owner", "other")


def alert(alert_id: str, metric: Metric = Metric.SUCCESS, at: str = "2026-12-03T10:00:00Z",
          **fields: Any) -> Alert:
    base: dict[str, Any] = {"alert_id": alert_id, "key": metric.value, "metric": metric,
                            "baseline": 0.9, "current": 0.8, "p_value": 1e-5, "level": 4.6e-4,
                            "runs": 300, "baseline_runs": 2800, "since": at, "opened_at": at,
                            "updated_at": at}
    return Alert(**{**base, **fields})


def test_an_ongoing_regression_keeps_one_alert_with_its_newest_numbers(store: Store) -> None:
    first = alert("a1")
    assert store.alerts.raise_alert(REF, first) == (first, True)
    again = alert("a2", current=0.75, updated_at="2026-12-03T11:00:00Z",
                  opened_at="2026-12-03T11:00:00Z")
    kept, opened = store.alerts.raise_alert(REF, again)
    assert not opened
    assert (kept.alert_id, kept.opened_at, kept.current, kept.updated_at) == (
        "a1", "2026-12-03T10:00:00Z", 0.75, "2026-12-03T11:00:00Z")
    assert store.alerts.agent_alerts(REF) == [kept]
    assert store.alerts.agent_alerts(OTHER) == [], "each agent its own"


def test_acknowledged_stays_unresolved_and_resolved_lets_a_new_one_open(store: Store) -> None:
    store.alerts.raise_alert(REF, alert("a1"))
    assert store.alerts.acknowledge_alert(REF, "judge_score", "2026-12-03T12:00:00Z") is None
    seen = store.alerts.acknowledge_alert(REF, "success_rate", "2026-12-03T12:00:00Z")
    assert seen is not None and seen.state == "acknowledged"
    kept, opened = store.alerts.raise_alert(REF, alert("a2"))
    assert not opened and kept.state == "acknowledged", "still the one alert"
    done = store.alerts.resolve_alert(REF, "success_rate", "2026-12-04T00:00:00Z", "recovery")
    assert done is not None and (done.state, done.resolved_by) == ("resolved", "recovery")
    assert store.alerts.resolve_alert(REF, "success_rate", "2026-12-04T00:00:00Z", "owner") is None
    assert store.alerts.agent_alerts(REF, unresolved=True) == []
    later = alert("a3", at="2026-12-05T00:00:00Z")
    assert store.alerts.raise_alert(REF, later) == (later, True)
    assert [a.alert_id for a in store.alerts.agent_alerts(REF)] == ["a3", "a1"]


def test_alerts_are_listed_unresolved_first_then_newest_first(store: Store) -> None:
    for i, metric in enumerate([Metric.SUCCESS, Metric.SCORE, Metric.COST]):
        store.alerts.raise_alert(REF, alert(f"a{i}", metric, f"2026-12-0{i + 1}T00:00:00Z"))
    store.alerts.resolve_alert(REF, "judge_score", "2026-12-05T00:00:00Z", "owner")
    store.alerts.raise_alert(REF, alert("v1", key="p95_latency@2.0", metric=Metric.P95,
                                        version="2.0", at="2026-12-04T00:00:00Z"))
    listed = store.alerts.agent_alerts(REF)
    assert [a.alert_id for a in listed] == ["v1", "a2", "a0", "a1"]
    assert [a.alert_id for a in store.alerts.agent_alerts(REF, unresolved=True)] == [
        "v1", "a2", "a0"]
    assert [a.alert_id for a in store.alerts.agent_alerts(REF, limit=2)] == ["v1", "a2"]


def test_each_delivery_attempt_is_kept(store: Store) -> None:
    def attempt(n: int, **fields: Any) -> Delivery:
        return Delivery(alert_id="a1", attempt=n, event="opened", target="webhook",
                        url_host="hooks.example.com", at=f"2026-12-03T10:00:0{n}Z", **fields)

    tries = [attempt(1, status=500, next_try_at="2026-12-03T10:00:02Z"),
             attempt(2, status=200, delivered=True)]
    for one in reversed(tries):
        store.alerts.record_delivery(REF, one)
    store.alerts.record_delivery(OTHER, attempt(1, status=200, delivered=True))
    assert store.alerts.alert_deliveries(REF, "a1") == tries
    assert store.alerts.alert_deliveries(REF, "a2") == []


def test_an_agents_alert_settings_are_kept_and_default_to_every_metric(store: Store) -> None:
    assert store.alerts.alert_settings(REF) == AlertSettings()
    assert len(AlertSettings().rules_for()) == len(Metric)
    chosen = AlertSettings(webhook_url="https://hooks.example.com/bench",
                           rules=(RuleSetting(metric=Metric.COST, mode="off"),
                                  RuleSetting(metric=Metric.SUCCESS, min_effect=0.1)))
    store.alerts.set_alert_settings(REF, chosen)
    assert store.alerts.alert_settings(REF) == chosen
    assert store.alerts.alert_settings(OTHER) == AlertSettings()
    rules = {rule.metric: rule for rule in chosen.rules_for()}
    assert Metric.COST not in rules and rules[Metric.SUCCESS].effect == 0.1


def test_one_look_an_hour_whoever_asks(store: Store) -> None:
    assert store.alerts.claim_look(REF, "2026-12-03T10")
    assert not store.alerts.claim_look(REF, "2026-12-03T10"), "the same hour again"
    assert store.alerts.claim_look(OTHER, "2026-12-03T10"), "each agent its own"
    assert not store.alerts.claim_look(REF, "2026-12-03T09"), "an hour before"
    store.alerts.set_alert_settings(REF, AlertSettings(webhook_url="https://x.example/h"))
    assert store.alerts.claim_look(REF, "2026-12-03T11")
    assert store.alerts.alert_settings(REF).webhook_url == "https://x.example/h", \
        "a look keeps the settings"
