"""Alerts from the version monitors through the real ingest path (on SQLite and DynamoDB), the
local worker's look after an agent's evals, and their delivery: a signed webhook to a receiver
on loopback that checks the signature and fails once (the retry is seen, and the delivery log
has both tries), a Slack message with the fields of Slack's incoming webhook format, and a
refused URL tried once."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench_core.accounts.secrets import Secrets
from bench_core.alerts.delivery import deliver, slack_body, webhook_secret
from bench_core.alerts.monitor import Change, watch_versions
from bench_core.clock import FixedClock
from bench_core.domain.alerts import Alert, AlertSettings
from bench_core.domain.models import AgentRef
from bench_core.domain.monitors import Metric
from bench_core.settings import ReuseSettings
from bench_core.store.memory.store import MemoryStore

from tests.conftest import RunningServer, serving
from tests.http.alerts_support import hold_looks, quiet_monitors, receiver
from tests.http.surfaces_data import new_login, seed_agent

LOOPBACK = ReuseSettings(allow_loopback=True, timeout_s=5.0)
CLOCK = FixedClock(datetime(2026, 12, 3, 10, 30, tzinfo=UTC))
SECRET = webhook_secret(b"k" * 32, AgentRef("owner", "helper"))


def an_alert(**fields: object) -> Alert:
    base: dict[str, object] = {
        "alert_id": "a1", "key": "success_rate@2.0", "metric": Metric.SUCCESS,
        "version": "2.0", "against": "1.0", "baseline": 0.95, "current": 0.5,
        "p_value": 1e-6, "level": 4.6e-4, "runs": 30, "baseline_runs": 60,
        "since": "2026-12-03T09:00:00.000Z", "opened_at": "2026-12-03T10:30:00.000Z",
        "updated_at": "2026-12-03T10:30:00.000Z"}
    return Alert.model_validate({**base, **fields})


def test_a_worse_release_opens_one_alert_and_a_newer_one_supersedes_it(
        server_on_each_store: RunningServer) -> None:
    bench_server = server_on_each_store
    login = new_login()
    key = bench_server.create_key(login)
    store, ref = bench_server.store, AgentRef(login, "agent")
    hold_looks(bench_server, ref)
    seed_agent(bench_server, login=login, key=key, runs=60, failures=0, version="1.0")
    seed_agent(bench_server, login=login, key=key, runs=30, failures=15, version="2.0")
    judged = quiet_monitors(bench_server, ref, 90)
    opened = {change.alert.key: change for change in
              watch_versions(store, ref, "2026-12-03T10:30:00.000Z")}
    expected = {"success_rate@2.0"} | ({"judge_score@2.0"} if judged else set())
    assert set(opened) == expected, "where judged, half the runs failed: the judge says so too"
    success = opened["success_rate@2.0"]
    assert success.event == "opened"
    assert (success.alert.baseline, success.alert.current, success.alert.against) == (
        1.0, 0.5, "1.0")
    assert success.alert.p_value is not None and success.alert.p_value < 1e-6
    assert watch_versions(store, ref, "2026-12-03T11:00:00.000Z") == [], \
        "still worse: no second alert"
    assert {a.key for a in store.alerts.agent_alerts(ref)} == expected
    seed_agent(bench_server, login=login, key=key, runs=30, failures=0, version="2.1")
    quiet_monitors(bench_server, ref, 120)
    superseded = watch_versions(store, ref, "2026-12-03T12:00:00.000Z")
    assert {(c.event, c.alert.resolved_by) for c in superseded} == {("resolved", "superseded")}
    assert {c.alert.key for c in superseded} == expected
    assert store.alerts.agent_alerts(ref, unresolved=True) == []


def test_a_signed_webhook_is_retried_after_a_500_and_every_try_is_logged() -> None:
    store, ref = MemoryStore.open(), AgentRef("owner", "helper")
    waits: list[float] = []
    with receiver(SECRET, statuses=[500]) as hook:
        tries = deliver(store, ref, [Change(an_alert(), "opened")],
                        settings=AlertSettings(webhook_url=hook.url), outbound_settings=LOOPBACK,
                        secret=SECRET, base_url="https://bench.example", clock=CLOCK,
                        sleep=waits.append, backoff_s=0.5)
    assert [g["verified"] for g in hook.got] == [True, True], "each try signed afresh"
    first, second = hook.got
    assert first["headers"]["X-Bench-Delivery"] == second["headers"]["X-Bench-Delivery"] == \
        "a1.opened"
    body = second["json"]
    assert body["event"] == "alert.opened" and body["agent"] == "owner/helper"
    assert body["alert"]["says"].startswith("Success rate of version 2.0 went from 95.0% "
                                            "(version 1.0) to 50.0% (-45.0 points)")
    assert body["links"]["versions"] == ("https://bench.example/api/agents/owner/helper/"
                                         "versions/check?version=2.0&against=1.0")
    assert waits == [0.5]
    logged = store.alerts.alert_deliveries(ref, "a1")
    assert logged == tries
    assert [(d.attempt, d.status, d.delivered) for d in logged] == [(1, 500, False),
                                                                    (2, 200, True)]
    assert logged[0].next_try_at == "2026-12-03T10:30:00.500Z" and logged[1].next_try_at is None
    assert logged[0].url_host == "127.0.0.1"


def test_a_wrong_secret_does_not_verify() -> None:
    with receiver("another secret") as hook:
        deliver(MemoryStore.open(), AgentRef("owner", "helper"), [Change(an_alert(), "opened")],
                settings=AlertSettings(webhook_url=hook.url), outbound_settings=LOOPBACK,
                secret=SECRET, base_url="https://bench.example", clock=CLOCK)
    assert [g["verified"] for g in hook.got] == [False]


def test_the_slack_message_has_slacks_documented_fields() -> None:
    alert = an_alert(version="<!channel> & co", key="success_rate@x")
    with receiver() as slack:
        tries = deliver(MemoryStore.open(), AgentRef("owner", "helper"),
                        [Change(alert, "opened")],
                        settings=AlertSettings(slack_webhook_url=slack.url),
                        outbound_settings=LOOPBACK, secret=SECRET,
                        base_url="https://bench.example", clock=CLOCK)
    assert [t.delivered for t in tries] == [True]
    (got,) = slack.got
    assert "X-Bench-Signature" not in got["headers"], "a Slack URL is its own secret"
    message = got["json"]
    assert set(message) == {"text", "blocks"}
    assert isinstance(message["text"], str) and "<!channel>" not in message["text"]
    header, section, context = message["blocks"]
    assert header["type"] == "header" and header["text"]["type"] == "plain_text"
    assert 0 < len(header["text"]["text"]) <= 150
    assert section["type"] == "section" and section["text"]["type"] == "mrkdwn"
    assert "&lt;!channel&gt; &amp; co" in section["text"]["text"]
    assert len(section["text"]["text"]) <= 3000
    assert context["type"] == "context"
    assert all(e["type"] == "mrkdwn" for e in context["elements"])
    assert "<https://bench.example/u/owner/helper|agent>" in context["elements"][0]["text"]
    resolved = slack_body(Change(alert.model_copy(update={"resolved_by": "recovery"}),
                                 "resolved"), AgentRef("owner", "helper"), "https://b.example")
    assert "recovered" in resolved["blocks"][0]["text"]["text"]


def test_a_private_address_is_refused_once_and_logged() -> None:
    store, ref = MemoryStore.open(), AgentRef("owner", "helper")
    tries = deliver(store, ref, [Change(an_alert(), "opened")],
                    settings=AlertSettings(webhook_url="https://10.0.0.1/hook"),
                    outbound_settings=ReuseSettings(), secret=SECRET,
                    base_url="https://bench.example", clock=CLOCK, sleep=lambda s: None)
    assert [(t.attempt, t.status, t.delivered) for t in tries] == [(1, None, False)]
    assert tries[0].error is not None and tries[0].error.startswith("refused")
    assert store.alerts.alert_deliveries(ref, "a1") == tries


def test_a_client_error_is_not_retried() -> None:
    with receiver(SECRET, statuses=[410]) as hook:
        tries = deliver(MemoryStore.open(), AgentRef("owner", "helper"),
                        [Change(an_alert(), "resolved")],
                        settings=AlertSettings(webhook_url=hook.url), outbound_settings=LOOPBACK,
                        secret=SECRET, base_url="https://bench.example", clock=CLOCK,
                        sleep=lambda s: None)
    assert [(t.status, t.next_try_at) for t in tries] == [(410, None)]
    assert hook.got[0]["json"]["event"] == "alert.resolved"


def test_the_local_worker_looks_after_an_agents_evals_and_the_webhook_hears_of_it(
        tmp_path: Path) -> None:
    clock = FixedClock(datetime(2026, 12, 3, 10, 5, tzinfo=UTC))
    with serving(tmp_path, MemoryStore.open(clock=clock), reuse=LOOPBACK) as server:
        login = new_login()
        key = server.create_key(login)
        ref = AgentRef(login, "agent")
        secret = webhook_secret(Secrets(server.services.settings).session_key(), ref)
        with receiver(secret) as hook:
            server.store.alerts.set_alert_settings(ref, AlertSettings(webhook_url=hook.url))
            seed_agent(server, login=login, key=key, runs=60, failures=0, version="1.0")
            seed_agent(server, login=login, key=key, runs=30, failures=15, version="2.0")
            wait_for(lambda: agent_evals(server, ref) == 90, "the judge")
            # The looks of this hour may have come before every run was judged: the next
            # hour's, after the next run's eval, sees them all.
            clock.advance(timedelta(hours=1))
            seed_agent(server, login=login, key=key, runs=1, failures=1, version="2.0")
            wait_for(lambda: {got["json"]["alert"]["key"] for got in hook.got} == {
                "success_rate@2.0", "judge_score@2.0"}, "the webhook")
        for got in hook.got:
            assert got["verified"] and got["json"]["event"] == "alert.opened"
            assert got["json"]["links"]["agent"].endswith(f"/u/{login}/agent")
        assert len(hook.got) == 2, "one message an alert"
        for alert in server.store.alerts.agent_alerts(ref):
            (logged,) = server.store.alerts.alert_deliveries(ref, alert.alert_id)
            assert logged.delivered and logged.at in ("2026-12-03T10:05:00.000Z",
                                                      "2026-12-03T11:05:00.000Z")


def agent_evals(server: RunningServer, ref: AgentRef) -> int:
    agent = server.store.agents.get_agent(ref)
    return 0 if agent is None else agent.stats.eval_count


def wait_for(done: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"{what} did not happen in {timeout_s:g} s"
        time.sleep(0.05)
