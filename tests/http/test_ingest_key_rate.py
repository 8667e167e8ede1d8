"""Each API key's share of the ingest routes, over real HTTP on each store: past
`BENCH_INGEST_KEY_RATE` requests in one second a key's next `/ingest` or `/v1/traces` request
is refused with 429, a JSON error and `Retry-After`, storing nothing, while other keys go on;
the next second it is let through again. Time is the server's clock (a `FixedClock`), so the
test never waits on the wall clock."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from bench_core.clock import FixedClock
from bench_core.domain.models import AgentRef
from bench_core.settings import Limits
from bench_core.store.memory.store import MemoryStore

from tests.conftest import RunningServer, serving
from tests.factories import batch, task_events
from tests.http.test_ingest_http import new_login
from tests.http.test_ingest_http import post as post_batch
from tests.http.test_otlp_http import T0
from tests.http.test_otlp_http import post as post_traces

PER_SECOND = 3
START = datetime(2026, 12, 2, 16, 0, 0, 250_000, tzinfo=UTC)


@pytest.fixture(params=["memory", "dynamodb"])
def served(request: pytest.FixtureRequest, tmp_path: Path
           ) -> Iterator[tuple[RunningServer, FixedClock]]:
    """A server whose store's clock stands still until the test moves it."""
    limits = Limits(key_requests_per_s=PER_SECOND)
    clock = FixedClock(START)
    if request.param == "memory":
        with serving(tmp_path, over=MemoryStore.open(clock=clock), store="memory",
                     limits=limits) as running:
            yield running, clock
        return
    from tests.aws.moto_table import dynamo_store

    with dynamo_store(clock=clock) as store, \
            serving(tmp_path, over=store, store="dynamodb", limits=limits) as running:
        yield running, clock


def spans(n: int) -> bytes:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": os.urandom(16).hex(), "spanId": os.urandom(8).hex(), "name": "run",
         "startTimeUnixNano": str(T0), "endTimeUnixNano": str(T0 + 10**9)}
        for _ in range(n)]}]}]}).encode()


def test_a_key_past_its_requests_a_second_gets_429_until_the_next_second(
        served: tuple[RunningServer, FixedClock]) -> None:
    server, clock = served
    login = new_login()
    key, other = server.create_key(login), server.create_key(login)
    ref = AgentRef(login, "busy")
    for n in range(PER_SECOND):
        r = post_batch(server, batch("busy", task_events(f"t{n}")), key)
        assert r.status_code == 200, r.text

    refused = post_batch(server, batch("busy", task_events("late")), key)
    assert refused.status_code == 429, refused.text
    assert refused.headers["retry-after"] == "1"
    body = refused.json()
    assert f"over {PER_SECOND} requests a second" in body["error"], body
    assert body["detail"][0]["loc"] == ["header", "x-bench-key"]
    assert server.store.ingest.get_task(ref, "late") is None
    traces = post_traces(server, spans(2), key)
    assert traces.status_code == 429 and traces.headers["retry-after"] == "1", traces.text
    assert post_batch(server, batch("busy", task_events("other")), other).status_code == 200

    clock.advance(timedelta(seconds=1))
    again = post_batch(server, batch("busy", task_events("late")), key)
    assert again.status_code == 200, again.text
    assert server.store.ingest.get_task(ref, "late") is not None
    assert post_traces(server, spans(2), key).status_code == 200
