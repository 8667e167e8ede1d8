"""An agent's alerts for its owner over real HTTP: the dashboard's list with acknowledge and
resolve (CSRF-checked, owner only), the settings form (where alerts go, each metric's rule),
and the JSON twin with an owner key (401 without, 404 for another's agent, 403 for an agent
key)."""

from __future__ import annotations

import httpx
from bench_core.alerts.monitor import watch_versions
from bench_core.domain.models import AgentRef
from bench_core.domain.monitors import Metric

from tests.conftest import RunningServer
from tests.http.accounts_support import Browser
from tests.http.alerts_support import hold_looks, quiet_monitors
from tests.http.surfaces_data import new_login, seed_agent


def regressed(server: RunningServer) -> tuple[str, str]:
    """A new owner's agent whose newest release is worse (its alerts raised); login, key."""
    login = new_login()
    key = server.create_key(login)
    hold_looks(server, AgentRef(login, "agent"))
    seed_agent(server, login=login, key=key, runs=60, failures=0, version="1.0")
    seed_agent(server, login=login, key=key, runs=30, failures=15, version="2.0")
    quiet_monitors(server, AgentRef(login, "agent"), 90)
    watch_versions(server.store, AgentRef(login, "agent"), "2026-12-03T10:30:00.000Z")
    return login, key


def test_the_owner_sees_acknowledges_and_resolves_an_alert(bench_server: RunningServer) -> None:
    login, _ = regressed(bench_server)
    owner = Browser(bench_server)
    owner.sign_in(login)
    page_path = "/dashboard/agents/agent/alerts"
    page = owner.get(page_path)
    assert page.status_code == 200 and "no-store" in page.headers["cache-control"]
    assert "Success rate of version 2.0" in page.text
    assert "went from 100.0% (version 1.0) to 50.0% (-50.0 points) over 30 runs" in page.text
    ref = AgentRef(login, "agent")
    forged = owner.post(page_path + "/resolve", {"key": "success_rate@2.0", "csrf": "forged"})
    assert forged.status_code == 403
    sent = owner.post(page_path + "/acknowledge", {"key": "success_rate@2.0"},
                      token_from=page_path)
    assert (sent.status_code, sent.headers["location"]) == (303, page_path)
    states = {a.key: a.state for a in bench_server.store.alerts.agent_alerts(ref)}
    assert states["success_rate@2.0"] == "acknowledged"
    assert owner.post(page_path + "/resolve", {"key": "success_rate@2.0"},
                      token_from=page_path).status_code == 303
    (done,) = [a for a in bench_server.store.alerts.agent_alerts(ref)
               if a.key == "success_rate@2.0"]
    assert (done.state, done.resolved_by) == ("resolved", "owner")
    gone = owner.post(page_path + "/resolve", {"key": "success_rate@2.0"}, token_from=page_path)
    assert gone.status_code == 404


def test_nobody_else_sees_or_touches_the_alerts(bench_server: RunningServer) -> None:
    login, key = regressed(bench_server)
    stranger = Browser(bench_server)
    stranger.sign_in()
    assert stranger.get("/dashboard/agents/agent/alerts").status_code == 404
    token = stranger.csrf("/dashboard")
    refused = stranger.post("/dashboard/agents/agent/alerts/resolve",
                            {"key": "success_rate@2.0", "csrf": token})
    assert refused.status_code == 404
    anonymous = httpx.get(f"{bench_server.url}/api/agents/{login}/agent/alerts", timeout=10)
    assert anonymous.status_code == 401
    other = bench_server.create_key(new_login())
    assert httpx.get(f"{bench_server.url}/api/agents/{login}/agent/alerts",
                     headers={"X-Bench-Key": other}, timeout=10).status_code == 404


def test_the_json_twin_lists_the_alerts_and_the_webhook_secret(bench_server: RunningServer
                                                              ) -> None:
    login, key = regressed(bench_server)
    answer = httpx.get(f"{bench_server.url}/api/agents/{login}/agent/alerts",
                       headers={"X-Bench-Key": key}, timeout=10)
    assert answer.status_code == 200
    body = answer.json()
    assert {a["key"] for a in body["alerts"]} == {"success_rate@2.0", "judge_score@2.0"}
    success = next(a for a in body["alerts"] if a["key"] == "success_rate@2.0")
    assert (success["state"], success["baseline"], success["current"]) == ("open", 1.0, 0.5)
    assert success["links"]["versions"].endswith(
        f"/api/agents/{login}/agent/versions/check?version=2.0&against=1.0")
    assert body["webhook"]["header"] == "X-Bench-Signature"
    assert len(body["webhook"]["secret"]) == 64


def test_the_settings_form_keeps_where_alerts_go_and_each_rule(bench_server: RunningServer
                                                                ) -> None:
    login, _ = regressed(bench_server)
    owner = Browser(bench_server)
    owner.sign_in(login)
    page_path = "/dashboard/agents/agent/alerts"
    saved = owner.post("/dashboard/agents/agent/alert-settings", {
        "webhook_url": "https://hooks.example.com/bench", "slack_webhook_url": "",
        "mode_success_rate": "significant", "min_effect_success_rate": "0.1",
        "mode_cost_per_success": "off", "mode_p95_latency": "threshold",
        "threshold_p95_latency": "5000"}, token_from=page_path)
    assert (saved.status_code, saved.headers["location"]) == (303, page_path + "?saved=1")
    kept = bench_server.store.alerts.alert_settings(AgentRef(login, "agent"))
    assert kept.webhook_url == "https://hooks.example.com/bench"
    rules = {rule.metric: rule for rule in kept.rules_for()}
    assert Metric.COST not in rules and rules[Metric.SUCCESS].effect == 0.1
    assert (rules[Metric.P95].mode, rules[Metric.P95].threshold) == ("threshold", 5000.0)
    assert 'value="https://hooks.example.com/bench"' in owner.get(page_path).text
    plain = owner.post("/dashboard/agents/agent/alert-settings",
                       {"webhook_url": "http://hooks.example.com/bench"}, token_from=page_path)
    assert plain.status_code in (400, 422) and "https://" in plain.text
    odd = owner.post("/dashboard/agents/agent/alert-settings",
                     {"mode_success_rate": "sometimes"}, token_from=page_path)
    assert odd.status_code in (400, 422)
    assert bench_server.store.alerts.alert_settings(AgentRef(login, "agent")) == kept
