"""One set of field limits for every source, over real HTTP: an oversized name is cut and an
oversized value capped with its marker, never a reason to lose the batch, the span or the
call it came in (`bench_core.domain.field_limits`)."""

from __future__ import annotations

import json
import os
from typing import Any

import httpx
import pytest
from bench_core.benchmarks.runs import MAX_ERROR_CHARS
from bench_core.domain.field_limits import (
    CUT,
    MAX_KIND_CHARS,
    MAX_LABEL_CHARS,
    MAX_NAME_CHARS,
    MAX_TOOLS,
    TRUNCATED,
)
from bench_core.domain.models import AgentRef
from bench_core.domain.ranking import Qualification

from tests.benchmark_support import graded_run, new_slug, run_body
from tests.conftest import RunningServer
from tests.factories import batch, day_old, ev, task_events
from tests.http.reuse_support import AgentEndpoint, published, serve_bench, serve_endpoint
from tests.http.test_ingest_http import new_login
from tests.http.test_ingest_http import post as post_batch
from tests.http.test_otlp_http import T0, attributes
from tests.http.test_otlp_http import post as post_traces
from tests.http.test_try import start as start_sandbox

MB = 1024 * 1024


def cut_to(text: str, most: int) -> bool:
    """`text` is a name cut to `most` characters."""
    return len(text) == most and text.endswith(CUT)


def capped(value: Any) -> bool:
    return isinstance(value, dict) and value.get(TRUNCATED) is True


def span(name: str, attrs: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    return {"traceId": os.urandom(16).hex(), "spanId": os.urandom(8).hex(), "kind": 1,
            "name": name, "startTimeUnixNano": str(T0), "endTimeUnixNano": str(T0 + 10**9),
            "attributes": attributes(attrs or {}), **fields}


def export(*spans: dict[str, Any], resource: dict[str, Any] | None = None) -> bytes:
    return json.dumps({"resourceSpans": [{
        "resource": {"attributes": attributes(resource or {})},
        "scopeSpans": [{"spans": list(spans)}]}]}).encode()


def task_of(s: dict[str, Any]) -> str:
    return f"{s['traceId']}-{s['spanId']}"


def test_an_otlp_span_named_4_mb_and_500_kb_attributes_are_stored_capped(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    login = new_login()
    key = server.create_key(login)
    named = span("n" * (4 * MB))
    r = post_traces(server, export(named), key, **{"X-Bench-Agent": "big"})
    assert r.status_code == 200, r.text
    assert "partialSuccess" not in r.json()
    big = "v" * 500_000
    attributed = span("", {"gen_ai.operation.name": "o" * 500_000, "gen_ai.tool.name": big,
                           "gen_ai.input.messages": big, "custom.note": big,
                           "gen_ai.request.model": big, "gen_ai.usage.input_tokens": 5},
                      status={"code": 2, "message": big})
    r = post_traces(server, export(attributed, resource={"service.name": big}), key,
                    **{"X-Bench-Agent": "big"})
    assert r.status_code == 200, r.text
    assert r.json()["partialSuccess"]["rejectedSpans"] == "0"  # only a warning: model dropped
    ref = AgentRef(login, "big")
    first, second = (server.store.ingest.get_task(ref, task_of(s)) for s in (named, attributed))
    assert cut_to(first.name, MAX_NAME_CHARS) and first.name.startswith("nnn")
    assert cut_to(second.name, MAX_NAME_CHARS) and second.name.startswith("ooo")
    assert capped(second.input) and capped(second.output) and capped(second.metadata)
    assert second.status == "failed" and second.evidence.input_tokens == 5
    runs = server.get(f"/api/agents/{login}/big/runs", key)["runs"]
    assert len(runs) == 2 and all(len(r["name"]) <= MAX_NAME_CHARS for r in runs)
    for page in (f"/u/{login}/big", f"/u/{login}/big/runs/{task_of(named)}"):
        shown = httpx.get(server.url + page, headers={"X-Bench-Key": key}, timeout=30)
        assert shown.status_code == 200 and len(shown.content) < 300_000, page


def test_an_ingest_batch_with_oversized_names_is_stored_cut(bench_server: RunningServer) -> None:
    login = new_login()
    key = bench_server.create_key(login)
    huge = "h" * 100_000
    events = task_events("t1", name=huge) + [
        ev("task.log", "t1", name=huge, data={"label": huge, "value": 1}),
        ev("k" * 1000, data={"tool": "x"})]
    r = post_batch(bench_server, batch("cut", events, display_name=huge, model=huge,
                                       framework=huge, architecture=huge,
                                       tools=["t" * 1000] * (MAX_TOOLS + 50)), key)
    assert r.status_code == 200, r.text
    assert r.json()["accepted"] == len(events)
    agent = bench_server.store.agents.get_agent(AgentRef(login, "cut"))
    for name in (agent.display_name, agent.model, agent.framework, agent.architecture):
        assert cut_to(name, MAX_LABEL_CHARS)
    assert len(agent.tools) == MAX_TOOLS and all(cut_to(t, MAX_LABEL_CHARS) for t in agent.tools)
    task = bench_server.store.ingest.get_task(AgentRef(login, "cut"), "t1")
    assert cut_to(task.name, MAX_NAME_CHARS)
    (log,) = task.logs
    assert cut_to(log["data"]["label"], MAX_LABEL_CHARS)
    kinds = [e["kind"] for e in bench_server.get(f"/api/agents/{login}/cut/events", key)["events"]]
    assert any(cut_to(kind, MAX_KIND_CHARS) for kind in kinds)
    assert agent.stats.latest_run is not None and cut_to(agent.stats.latest_run.name,
                                                         MAX_NAME_CHARS)


def test_otlp_log_content_of_500_kb_attaches_capped(bench_server: RunningServer) -> None:
    login = new_login()
    key = bench_server.create_key(login)
    chat = span("chat")
    assert post_traces(bench_server, export(chat), key, **{"X-Bench-Agent": "logs"}
                       ).status_code == 200
    record = {"traceId": chat["traceId"], "spanId": chat["spanId"],
              "timeUnixNano": str(T0 + 10**9), "eventName": "gen_ai.choice",
              "body": {"stringValue": "c" * 500_000}}
    r = httpx.post(bench_server.url + "/v1/logs", timeout=30, content=json.dumps(
        {"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}).encode(),
        headers={"Content-Type": "application/json", "X-Bench-Key": key, "X-Bench-Agent": "logs"})
    assert r.status_code == 200, r.text
    assert capped(bench_server.store.ingest.get_task(AgentRef(login, "logs"), task_of(chat)).output)


@pytest.fixture(scope="module")
def endpoint() -> Any:
    yield from serve_endpoint()


@pytest.fixture(scope="module")
def reuse_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    yield from serve_bench(tmp_path_factory.mktemp("limits-reuse"))


def test_a_call_through_bench_with_a_large_input_is_recorded_capped(
        reuse_server: RunningServer, endpoint: AgentEndpoint) -> None:
    owner, owner_key, slug = published(reuse_server, endpoint)
    r = httpx.post(f"{reuse_server.url}/api/agents/{owner}/{slug}/invoke", timeout=30,
                   headers={"X-Bench-Key": owner_key}, json={"input": {"q": "x" * 200_000}})
    assert r.status_code == 502, r.text  # the echo is over the test server's answer limit
    (run,) = reuse_server.get(f"/api/agents/{owner}/{slug}/runs", owner_key)["runs"]
    task = reuse_server.store.ingest.get_task(AgentRef(owner, slug), run["run_id"])
    assert task.status == "failed" and capped(task.input)


def test_a_benchmark_run_with_oversized_names_is_graded_with_them_cut(
        bench_server: RunningServer) -> None:
    login = new_login()
    key = bench_server.create_key(login)
    slug = new_slug()
    body = run_body(slug, display_name="d" * 10_000)
    body["attempts"][0]["error"] = "e" * 10_000
    accepted = httpx.post(f"{bench_server.url}/api/benchmarks/grounded-research-v1/runs",
                          json=body, headers={"X-Bench-Key": key}, timeout=30)
    run = graded_run(bench_server.url, accepted, key)
    assert run["status"] == "done"
    first = body["attempts"][0]
    (stored,) = [a for a in bench_server.store.benchmarks.get_benchmark_run(run["run_id"]).attempts
                 if (a.case_id, a.repeat) == (first["case_id"], first["repeat"])]
    assert cut_to(stored.error, MAX_ERROR_CHARS)
    agent = bench_server.store.agents.get_agent(AgentRef(login, slug))
    assert cut_to(agent.display_name, MAX_LABEL_CHARS)


@pytest.fixture(scope="module")
def try_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tests.conftest import serving

    with serving(tmp_path_factory.mktemp("limits-try"), store="memory") as running:
        yield running


def test_a_sandbox_key_sending_oversized_names_has_them_cut(try_server: RunningServer) -> None:
    _, login, key = start_sandbox(try_server)
    r = post_batch(try_server, batch("demo-agent", task_events("big", name="s" * 50_000),
                                     display_name="s" * 50_000), key)
    assert r.status_code == 200, r.text
    ref = AgentRef(login, "demo-agent")
    assert cut_to(try_server.store.ingest.get_task(ref, "big").name, MAX_NAME_CHARS)
    assert cut_to(try_server.store.agents.get_agent(ref).display_name, MAX_LABEL_CHARS)


def test_the_leaderboard_stays_small_whatever_names_its_agents_sent(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    login = new_login()
    key = server.create_key(login)
    huge = "w" * 600_000
    runs = Qualification().min_runs  # each agent a day old with its runs: all six rank
    for i in range(3):
        for slug in (f"wire-{i}", f"otlp-{i}"):
            server.store.agents.create_agent(day_old(login, slug))
        events = [e for n in range(runs) for e in task_events(
            f"t{n}", name=huge if n == runs - 1 else "earlier")]  # the newest run named huge
        r = post_batch(server, batch(f"wire-{i}", events, display_name=huge, model=huge,
                                     framework=huge), key)
        assert r.status_code == 200, r.text
        spans = [{**span("earlier"), "startTimeUnixNano": str(T0 - (n + 1) * 10**10),
                  "endTimeUnixNano": str(T0 - (n + 1) * 10**10 + 1)} for n in range(runs - 1)]
        r = post_traces(server, export(*spans, span(huge)), key, **{"X-Bench-Agent": f"otlp-{i}"})
        assert r.status_code == 200, r.text
    page = httpx.get(server.url + "/leaderboard", timeout=30)
    board = httpx.get(server.url + "/api/leaderboard", timeout=30)
    assert page.status_code == board.status_code == 200
    assert len(board.json()["agents"]) == 6
    assert len(page.content) < 40_000 and len(board.content) < 20_000, (len(page.content),
                                                                        len(board.content))
