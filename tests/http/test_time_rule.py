"""One rule for the times of every source, over real HTTP on both stores: an event, span or log
record is from 1970-01-01 to 9999-12-31 (UTC) or it is refused, naming its time; the agent's
pages keep answering whatever was sent (`bench_core.domain.field_limits.TIME_RULE`)."""

from __future__ import annotations

import json

import httpx
import pytest
from bench_core.domain.field_limits import LATEST_NS, TIME_RULE
from bench_core.domain.models import AgentRef

from tests.conftest import RunningServer
from tests.factories import batch, task_events
from tests.http.test_field_limits import export, span, task_of
from tests.http.test_ingest_http import new_login
from tests.http.test_ingest_http import post as post_batch
from tests.http.test_otlp_http import T0
from tests.http.test_otlp_http import post as post_traces

FAR_FUTURE_NS = 3_000_000_000_000 * 10**9
"""Year 97,000: an OTLP JSON time past anything the ISO timestamps can write."""


def pages_answer(server: RunningServer, login: str, slug: str) -> None:
    for page in (f"/u/{login}/{slug}", f"/embed/{login}/{slug}", f"/api/agents/{login}/{slug}",
                 f"/badge/{login}/{slug}.svg", "/leaderboard"):
        assert httpx.get(server.url + page, timeout=30).status_code == 200, page


def account(server: RunningServer) -> tuple[str, str]:
    login = new_login()
    return login, server.create_key(login)


def refused(answer: httpx.Response, field: str, count: int) -> None:
    """`answer` is OTLP's partial success, `count` refused for their times."""
    assert answer.status_code == 200, answer.text
    partial = answer.json()["partialSuccess"]
    assert partial[field] == str(count) and TIME_RULE in partial["errorMessage"]


def post_logs(server: RunningServer, key: str, slug: str, *records: dict[str, object]
              ) -> httpx.Response:
    return httpx.post(server.url + "/v1/logs", timeout=30, content=json.dumps(
        {"resourceLogs": [{"scopeLogs": [{"logRecords": list(records)}]}]}).encode(),
        headers={"Content-Type": "application/json", "X-Bench-Key": key, "X-Bench-Agent": slug})


def choice(traced: dict[str, object], time_ns: int, text: str) -> dict[str, object]:
    return {"traceId": traced["traceId"], "spanId": traced["spanId"], "timeUnixNano": str(time_ns),
            "eventName": "gen_ai.choice", "body": {"stringValue": text}}


def test_a_log_record_past_year_9999_is_refused_and_the_pages_keep_answering(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    login, key = account(server)
    chat = span("chat")
    assert post_traces(server, export(chat), key, **{"X-Bench-Agent": "late"}).status_code == 200
    refused(post_logs(server, key, "late", choice(chat, FAR_FUTURE_NS, "from the future")),
            "rejectedLogRecords", 1)
    assert server.store.ingest.get_task(AgentRef(login, "late"), task_of(chat)).output is None
    pages_answer(server, login, "late")
    r = post_logs(server, key, "late", choice(chat, LATEST_NS, "the last millisecond"))
    assert r.status_code == 200 and "partialSuccess" not in r.json(), r.text
    assert server.store.ingest.get_task(AgentRef(login, "late"), task_of(chat)).output == [
        "the last millisecond"]
    pages_answer(server, login, "late")


def test_a_span_past_year_9999_or_before_1970_is_refused_naming_its_times(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    login, key = account(server)
    ok = span("ok")
    late = {**span("late"), "startTimeUnixNano": str(T0), "endTimeUnixNano": str(FAR_FUTURE_NS)}
    negative = {**span("negative"), "startTimeUnixNano": "-5"}
    refused(post_traces(server, export(ok, late, negative), key, **{"X-Bench-Agent": "spans"}),
            "rejectedSpans", 2)
    for gone in (late, negative):
        assert server.store.ingest.get_task(AgentRef(login, "spans"), task_of(gone)) is None
    assert server.store.ingest.get_task(AgentRef(login, "spans"), task_of(ok)) is not None
    pages_answer(server, login, "spans")


@pytest.mark.parametrize("ts", ["0001-01-01T00:00:00Z", "1969-12-31T23:59:59.999Z"])
def test_an_ingest_time_before_1970_is_422_naming_it(server_on_each_store: RunningServer,
                                                     ts: str) -> None:
    server = server_on_each_store
    login, key = account(server)
    events = [{**e, "ts": ts} for e in task_events("old")]
    r = post_batch(server, batch("old", events), key)
    assert r.status_code == 422, r.text
    (problem, *_) = r.json()["detail"]
    assert problem["loc"] == ["events", 0, "ts"]
    assert TIME_RULE in problem["msg"]
    assert server.store.agents.get_agent(AgentRef(login, "old")) is None


def test_times_at_both_ends_of_the_range_are_stored_and_the_pages_answer(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    login, key = account(server)
    for task, ts in (("first", "1970-01-01T00:00:00.000Z"), ("last", "9999-12-31T23:59:59.999Z")):
        events = [{**e, "ts": ts} for e in task_events(task)]
        assert post_batch(server, batch("edges", events), key).status_code == 200
    first = {**span("first"), "startTimeUnixNano": "1", "endTimeUnixNano": "2"}
    last = {**span("last"), "startTimeUnixNano": str(LATEST_NS - 1),
            "endTimeUnixNano": str(LATEST_NS)}
    r = post_traces(server, export(first, last), key, **{"X-Bench-Agent": "edges"})
    assert r.status_code == 200 and "partialSuccess" not in r.json(), r.text
    assert server.get(f"/api/agents/{login}/edges")["runs"] == 4
    pages_answer(server, login, "edges")

