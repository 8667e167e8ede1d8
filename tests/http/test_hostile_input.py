"""Odd and oversized input over real HTTP: a 4xx naming what is wrong, never a 500, and
nothing of a refused request stored."""

from __future__ import annotations

import json
import os

import httpx
import pytest

from tests.conftest import RunningServer
from tests.factories import batch, ev
from tests.http.test_ingest_http import new_login
from tests.http.test_ingest_http import post as post_batch
from tests.http.test_otlp_http import T0, attributes, body
from tests.http.test_otlp_http import post as post_traces


@pytest.fixture
def owner(bench_server: RunningServer) -> tuple[str, str]:
    login = new_login()
    return login, bench_server.create_key(login)


def span(i: int, **fields: object) -> dict[str, object]:
    return {"traceId": os.urandom(16).hex(), "spanId": os.urandom(8).hex(), "kind": 1,
            "name": f"chat {i}", "startTimeUnixNano": str(T0),
            "endTimeUnixNano": str(T0 + 1_000_000),
            "attributes": attributes({"gen_ai.operation.name": "chat"}), **fields}


def test_more_spans_than_a_batch_may_hold_is_413_and_nothing_stored(
        bench_server: RunningServer, owner: tuple[str, str]) -> None:
    login, key = owner
    limit = bench_server.services.settings.limits.max_events_per_batch
    r = post_traces(bench_server, body(*(span(i) for i in range(limit + 1)), service="many"),
                    key)
    assert r.status_code == 413, r.text
    assert r.json()["code"] == 8 and str(limit + 1) in r.json()["message"]
    assert httpx.get(f"{bench_server.url}/api/agents/{login}/many").status_code == 404
    assert post_traces(bench_server, body(*(span(i) for i in range(limit)), service="many"),
                       key).status_code == 200


@pytest.mark.parametrize("ts", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-05:00"])
def test_a_time_outside_the_calendar_in_utc_is_422_naming_ts(
        bench_server: RunningServer, owner: tuple[str, str], ts: str) -> None:
    login, key = owner
    r = post_batch(bench_server, batch("odd", [{**ev("custom"), "ts": ts}]), key)
    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["loc"][-1] == "ts"
    assert httpx.get(f"{bench_server.url}/api/agents/{login}/odd").status_code == 404


def test_attribute_values_nested_too_deep_are_400(bench_server: RunningServer,
                                                  owner: tuple[str, str]) -> None:
    for depth in (40, 400):
        value = '{"arrayValue": {"values": [' * depth + '{"stringValue": "x"}' + "]}}" * depth
        deep = json.dumps(span(0, attributes=[{"key": "gen_ai.prompt", "value": "VALUE"}]))
        r = post_traces(bench_server, body(json.loads(deep), service="deep").replace(
            b'"VALUE"', value.encode()), owner[1])
        assert r.status_code == 400, r.text
        assert "nested" in r.json()["message"]
    assert httpx.get(f"{bench_server.url}/api/agents/{owner[0]}/deep").status_code == 404


def test_evidence_of_a_span_holds_names_only_and_the_answer_says_what_was_dropped(
        bench_server: RunningServer, owner: tuple[str, str]) -> None:
    login, key = owner
    leaky = span(0, attributes=attributes({
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "my secret prompt goes here", "gen_ai.usage.input_tokens": 5}))
    r = post_traces(bench_server, body(leaky, service="leaky"), key)
    assert r.status_code == 200, r.text
    partial = r.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "0" and "evidence model dropped" in partial["errorMessage"]
    task, = httpx.get(f"{bench_server.url}/api/agents/{login}/leaky/tasks",
                      headers={"X-Bench-Key": key}).json()["tasks"]
    assert task["evidence"] is not None
    assert "secret" not in httpx.get(f"{bench_server.url}/api/agents/{login}/leaky/tasks/"
                                     f"{task['task_id']}").text


@pytest.mark.parametrize("path", ["/v1/traces", "/v1/logs"])
def test_a_json_export_nested_past_the_parser_is_400_not_500(
        bench_server: RunningServer, owner: tuple[str, str], path: str) -> None:
    deep = b'{"a": ' * 100_000 + b"1" + b"}" * 100_000
    r = httpx.post(f"{bench_server.url}{path}", content=deep,
                   headers={"Content-Type": "application/json", "X-Bench-Key": owner[1],
                            "X-Bench-Agent": "deep"})
    assert r.status_code == 400, r.text
    assert "nested too deeply" in r.json()["message"]


def test_more_log_records_than_a_batch_may_hold_is_413_and_nothing_stored(
        bench_server: RunningServer, owner: tuple[str, str]) -> None:
    login, key = owner
    chat = span(0)
    assert post_traces(bench_server, body(chat, service="chatty"), key).status_code == 200
    limit = bench_server.services.settings.limits.max_events_per_batch

    def logs(n: int) -> bytes:
        record = {"traceId": chat["traceId"], "spanId": chat["spanId"],
                  "timeUnixNano": str(T0), "eventName": "gen_ai.choice"}
        return json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [
            {**record, "body": {"stringValue": f"part {i}"}} for i in range(n)]}]}]}).encode()

    def send(n: int) -> httpx.Response:
        return httpx.post(f"{bench_server.url}/v1/logs", content=logs(n), timeout=30,
                          headers={"Content-Type": "application/json", "X-Bench-Key": key,
                                   "X-Bench-Agent": "chatty"})

    r = send(limit + 1)
    assert r.status_code == 413, r.text
    assert r.json()["code"] == 8 and f"too many log records: {limit + 1}" in r.json()["message"]
    task = f"{chat['traceId']}-{chat['spanId']}"
    assert bench_server.get(f"/api/agents/{login}/chatty/tasks/{task}", key)["output"] is None
    r = send(limit)
    assert r.status_code == 200 and "partialSuccess" not in r.json(), r.text
    output = bench_server.get(f"/api/agents/{login}/chatty/tasks/{task}", key)["output"]
    assert len(output) == limit
