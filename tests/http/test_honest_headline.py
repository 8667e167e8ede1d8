"""Honest headline numbers for an agent that reports no cost of its own (an OpenTelemetry-only
agent): its cost per run is the provider-evidence cost, labelled so, on the profile, badge,
embed, leaderboard (and its cost sort), compare page and MCP; the model its spans name is shown;
a run whose content was not captured is unscored, and an average over no scored runs is the
missing mark (`formatting.MISSING`), not a number.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from bench_core.render import formatting as fmt

from tests.conftest import RunningServer, poll
from tests.factories import batch, day_old, ev
from tests.http.test_ingest_http import post
from tests.http.test_mcp import call

RUNS = 10
PER_RUN = (2000 * 0.4 + 150 * 1.6) / 1e6
"""gpt-4.1-mini: 2,000 input and 150 output tokens a run."""


def chat_spans(runs: int) -> dict[str, Any]:
    spans = [{"traceId": uuid.uuid4().hex, "spanId": uuid.uuid4().hex[:16], "name": "chat",
              "startTimeUnixNano": str(1_764_000_000_000_000_000 + i * 10**9),
              "endTimeUnixNano": str(1_764_000_000_400_000_000 + i * 10**9),
              "attributes": [{"key": k, "value": v} for k, v in (
                  ("gen_ai.operation.name", {"stringValue": "chat"}),
                  ("gen_ai.request.model", {"stringValue": "gpt-4.1-mini"}),
                  ("gen_ai.usage.input_tokens", {"intValue": "2000"}),
                  ("gen_ai.usage.output_tokens", {"intValue": "150"}))]}
             for i in range(runs)]
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


@pytest.fixture(scope="module")
def otel_agent(bench_server: RunningServer) -> tuple[str, str]:
    """An agent whose runs only spans describe: tokens and model, no cost, no content."""
    login = "h" + uuid.uuid4().hex[:10]
    slug = "otel-only-" + uuid.uuid4().hex[:6]
    key = bench_server.create_key(login)
    # content shown from the start (a first span would hide it): the public sees why a run is
    # unscored, which a judgement made while content was hidden never shows; made two days
    # ago, so its runs rank it
    bench_server.store.agents.create_agent(day_old(login, slug, hide_inputs=False, hide_outputs=False))
    response = httpx.post(f"{bench_server.url}/v1/traces", json=chat_spans(RUNS), timeout=30,
                          headers={"X-Bench-Key": key, "X-Bench-Agent": slug})
    assert response.status_code == 200 and response.json() == {}
    poll(lambda: bench_server.get(f"/api/agents/{login}/{slug}")["evals"]["unscored"],
         lambda unscored: unscored == RUNS)
    return login, slug


def test_the_headline_cost_is_the_evidence_cost_labelled(bench_server: RunningServer,
                                                         otel_agent: tuple[str, str]) -> None:
    login, slug = otel_agent
    summary = bench_server.get(f"/api/agents/{login}/{slug}")
    assert summary["cost_usd_per_run"] == 0.0
    assert summary["headline_cost_usd_per_run"] == pytest.approx(PER_RUN)
    assert summary["headline_cost_source"] == "provider evidence"
    assert summary["model"] == "gpt-4.1-mini"
    shown = fmt.usd(summary["headline_cost_usd_per_run"])
    profile = httpx.get(f"{bench_server.url}/u/{login}/{slug}").text
    assert shown in profile and "provider evidence" in profile and "gpt-4.1-mini" in profile
    badge = httpx.get(f"{bench_server.url}/badge/{login}/{slug}.svg", params={"metric": "cost"})
    assert shown in badge.text
    embed = httpx.get(f"{bench_server.url}/embed/{login}/{slug}").text
    assert shown in embed and "provider evidence" in embed


def test_no_content_is_unscored_and_the_average_is_a_dash(bench_server: RunningServer,
                                                          otel_agent: tuple[str, str]) -> None:
    login, slug = otel_agent
    summary = bench_server.get(f"/api/agents/{login}/{slug}")
    assert (summary["avg_eval_score"], summary["eval_count"]) == (None, 0)
    task = bench_server.get(f"/api/agents/{login}/{slug}/tasks")["tasks"][0]
    assert (task["eval"]["status"], task["eval"]["reason"]) == ("unscored", "no content captured")
    profile = httpx.get(f"{bench_server.url}/u/{login}/{slug}").text
    assert f'data-metric="avg_eval_score" data-value="">{fmt.MISSING}<' in profile
    assert "no content captured" in profile and "10 unscored" in profile
    badge = httpx.get(f"{bench_server.url}/badge/{login}/{slug}.svg", params={"metric": "score"})
    assert "not scored" in badge.text


def test_leaderboard_compare_and_mcp_use_the_headline(bench_server: RunningServer,
                                                      otel_agent: tuple[str, str]) -> None:
    login, slug = otel_agent
    page = httpx.get(f"{bench_server.url}/leaderboard", params={"sort": "cost", "q": slug}).text
    assert slug in page and fmt.usd(PER_RUN) in page
    other_login = "r" + uuid.uuid4().hex[:10]
    owner = bench_server.create_key(other_login)
    reporter = "reporter-" + uuid.uuid4().hex[:6]
    events = []
    for i in range(RUNS):
        task = f"r{i}"
        events += [ev("task.start", task, name="q", input={"q": i}),
                   ev("task.end", task, name="q", status="success", output="a", cost_usd=0.01)]
    assert post(bench_server, batch(reporter, events), owner).status_code == 200
    compare = httpx.get(f"{bench_server.url}/vs/@{login}/{slug}/@{other_login}/{reporter}").text
    assert f"{fmt.usd(PER_RUN)} (provider evidence)" in compare
    assert f"{fmt.usd(0.01)} (owner-reported)" in compare
    report = call(bench_server, "get_agent", {"login": login, "slug": slug}).structured_content
    telemetry = report["owner_telemetry"]
    assert telemetry["headline_cost_usd_per_run"] == pytest.approx(PER_RUN)
    assert telemetry["headline_cost_source"] == "provider evidence"
    assert report["agent"]["model"] == "gpt-4.1-mini"
    found = call(bench_server, "search_agents", {"query": slug, "sort": "cost"}).structured_content
    assert [a["slug"] for a in found["agents"]] == [slug]
    assert found["agents"][0]["headline_cost_source"] == "provider evidence"

