"""Delivery against a real loopback server that fails in every way a server can fail.

The agent's code runs while the server is failing and must finish without an exception and
without waiting for the server: the failure lasts until the agent is done, so an SDK that
blocked on the network would hang here (caught by the hang guard). Once the server recovers,
every event must arrive exactly once on the server side.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time

import pytest
from bench._transport import UrllibTransport
from conftest import FAST, HANG_GUARD, FaultServer

TASKS = 40
EVENTS_PER_TASK = 5  # start, two logs, a cost, end


def agent_work(agent, tasks: int = TASKS) -> None:
    """What an agent does: sync and async tasks with logs and costs (5 events each)."""

    async def step(t):
        t.log("a", 1)
        t.log("b", {"x": [1, 2]})
        t.cost(0.001)
        return "ok"

    async def main() -> None:
        for i in range(tasks // 2):
            await agent.task("async-step", {"i": i}, step)

    asyncio.run(main())
    for i in range(tasks - tasks // 2):
        with agent.span("sync-step", {"i": i}) as t:
            t.log("a", 1)
            t.log("b", 2)
            t.cost(0.001)


def run_agent_in_thread(agent) -> None:
    """Run the agent's work; fail if it raises or does not finish (it must not wait on us)."""
    errors: list[BaseException] = []

    def target() -> None:
        try:
            agent_work(agent)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    worker = threading.Thread(target=target)
    worker.start()
    worker.join(HANG_GUARD)
    assert not worker.is_alive(), "the agent's code waited on the failing server"
    assert not errors, f"the agent saw an exception: {errors!r}"


def assert_exactly_once(sink: FaultServer, tasks: int = TASKS) -> None:
    events = sink.unique_events()
    assert len(events) == tasks * EVENTS_PER_TASK
    ends = sink.of_kind("task.end")
    assert len({e["task_id"] for e in ends}) == tasks
    assert {e["task_id"] for e in sink.of_kind("task.start")} == {e["task_id"] for e in ends}
    if sink.mode != "slow":
        assert all(n == 1 for n in sink.id_counts.values()), "the server saw an event twice"


@pytest.mark.parametrize("mode", ["down", "500", "502", "503", "504", "429", "408", "425", "reset", "cut"])
def test_outage_then_recovery_delivers_everything_once(make_agent, sink, transport_factory, mode: str) -> None:
    sink.retry_after = "0"
    if mode == "down":
        sink.down()
    else:
        sink.mode = mode
    agent = make_agent(endpoint=sink.url, transport=transport_factory)

    run_agent_in_thread(agent)
    assert not agent.flush_sync(timeout=0.3), "nothing can be delivered while the server fails"
    sink.up()
    assert agent.flush_sync(timeout=HANG_GUARD)
    assert_exactly_once(sink)


def test_slow_server_does_not_slow_the_agent(make_agent, sink) -> None:
    sink.mode = "slow"
    agent = make_agent(endpoint=sink.url, config=dataclasses.replace(FAST, max_batch_size=1))

    run_agent_in_thread(agent)
    assert sink.responses_sent == 0, "the agent finished before the server answered anything"
    sink.wait_for(lambda: sink.held >= 1)
    sink.mode = "ok"
    assert agent.flush_sync(timeout=HANG_GUARD)
    assert_exactly_once(sink)


def test_retry_after_is_honoured(make_agent, sink) -> None:
    sink.mode, sink.retry_after = "429", "1"
    agent = make_agent(endpoint=sink.url)
    with agent.span("once"):
        pass
    sink.wait_for(lambda: sink.attempts >= 1)
    sink.mode = "ok"
    assert agent.flush_sync(timeout=HANG_GUARD)
    first, second = sink.attempt_times
    assert second - first >= 0.9, "retried before Retry-After elapsed"
    assert len(sink.unique_events()) == 2


@pytest.mark.parametrize("mode", ["400", "401", "403", "404", "422"])
def test_client_errors_are_not_retried_and_warn_once(make_agent, sink, caplog, mode: str) -> None:
    caplog.set_level(logging.WARNING, logger="bench")
    sink.mode = mode
    agent = make_agent(endpoint=sink.url)
    for i in range(3):
        with agent.span(f"rejected{i}"):
            pass
        assert agent.flush_sync(timeout=HANG_GUARD), "a rejected batch is settled, not pending"
    assert sink.attempts == 3, "one request per batch: 4xx is final"
    warnings = [r for r in caplog.records if mode in r.getMessage()]
    assert len(warnings) == 1
    assert ("invalid batch" if mode == "400" else f"status {mode}") in warnings[0].getMessage()
    sink.mode = "ok"
    agent.event("after", None)
    assert agent.flush_sync(HANG_GUARD)
    assert sink.dropped_reported == 6, "what was given up is reported as dropped"


def test_a_flush_ends_the_backoff_and_the_first_answer_sends_everything_oldest_first(make_agent, sink) -> None:
    """Batches that failed first must not sit out a long backoff while newer ones go: the
    backoff is shared, a flush (the exit's) tries at once, and once the server answers every
    waiting batch is sent, the oldest first. The backoff here is long (10 to 30 s) so that a
    batch waiting out its own would miss the flush."""
    sink.mode = "reset"
    config = dataclasses.replace(FAST, backoff_base=20.0, backoff_cap=30.0)
    agent = make_agent(endpoint=sink.url, config=config)
    for i in range(6):
        agent.event("tick", {"i": i})
        if i == 0:
            sink.wait_for(lambda: sink.attempts >= 1)
        else:
            time.sleep(config.flush_interval * 2)  # its own batch
    sink.mode = "ok"
    assert agent.flush_sync(timeout=HANG_GUARD / 4), "the flush tried at once"
    assert sorted(e["data"]["i"] for e in sink.of_kind("tick")) == list(range(6))
    assert [e["data"]["i"] for e in sink.requests[0].body["events"]][0] == 0, "the oldest batch went first"


def test_a_5xx_outage_of_any_length_loses_nothing(make_agent, sink) -> None:
    """A restarting server (or its proxy) answering 503 for longer than any attempt cap."""
    sink.mode = "503"
    agent = make_agent(endpoint=sink.url)
    run_agent_in_thread(agent)
    sink.wait_for(lambda: sink.attempts >= 3 * agent._sender._cfg.max_server_error_attempts)
    sink.mode = "ok"
    assert agent.flush_sync(timeout=HANG_GUARD)
    assert_exactly_once(sink)
    assert sink.dropped_reported == 0


def test_a_batch_whose_answer_was_lost_is_sent_again_and_counts_once(make_agent, sink, transport_factory) -> None:
    sink.mode = "unanswered"
    agent = make_agent(endpoint=sink.url, transport=transport_factory)
    with agent.span("stored-but-unanswered") as t:
        t.log("n", 1)
    sink.wait_for(lambda: sink.attempts >= 2)
    sink.mode = "ok"
    assert agent.flush_sync(timeout=HANG_GUARD)
    assert len(sink.unique_events()) == 3
    assert max(sink.id_counts.values()) >= 2, "sent again after the connection dropped"


def test_a_batch_the_server_cannot_take_is_split_until_the_bad_event_is_given_up(make_agent, sink, caplog) -> None:
    """A 5xx for one batch while the server takes others is that batch's own: it is split
    until the one event the server cannot take is found; every other event arrives."""
    caplog.set_level(logging.WARNING, logger="bench")
    sink.mode = "poison"
    agent = make_agent(endpoint=sink.url, config=dataclasses.replace(FAST, flush_interval=60))
    for i in range(40):
        agent.event("tick", {"i": i, "poison": i == 13})
    assert agent.flush_sync(timeout=HANG_GUARD)
    assert sorted(e["data"]["i"] for e in sink.of_kind("tick")) == [i for i in range(40) if i != 13]
    agent.event("later", None)
    assert agent.flush_sync(timeout=HANG_GUARD)
    assert sink.dropped_reported == 1
    assert len([r for r in caplog.records if "while it accepts other batches" in r.getMessage()]) == 1


def test_full_queue_drops_new_events_and_reports_the_count(make_agent, sink) -> None:
    sink.down()
    agent = make_agent(endpoint=sink.url, max_queue_size=10)
    for i in range(25):
        agent.event("tick", {"i": i})
    sink.up()
    assert agent.flush_sync(timeout=HANG_GUARD)
    received = sorted(e["data"]["i"] for e in sink.of_kind("tick"))
    assert len(received) >= 10
    agent.event("later", None)
    assert agent.flush_sync(timeout=HANG_GUARD)
    assert len(sink.unique_events()) + sink.dropped_reported == 26
    assert sink.dropped_reported >= 1
    assert received[:10] == list(range(10)), "the oldest events are kept, new ones dropped"


def test_large_batches_are_gzipped_small_ones_are_not(make_agent, sink) -> None:
    agent = make_agent(endpoint=sink.url)
    agent.event("small", {"x": 1})
    assert agent.flush_sync(HANG_GUARD)
    agent.event("large", {"text": "lorem ipsum " * 2000})
    assert agent.flush_sync(HANG_GUARD)
    small, large = sink.requests
    assert "Content-Encoding" not in small.headers
    assert large.headers["Content-Encoding"] == "gzip"
    assert len(large.raw) < 8_192
    assert large.body["events"][0]["data"]["text"].startswith("lorem ipsum")


def test_headers_and_batch_body_match_the_wire_format(make_agent, sink) -> None:
    agent = make_agent(endpoint=sink.url + "/ingest", display_name="Tester", model="m", tools=["search"])
    agent.event("ping", None)
    assert agent.flush_sync(HANG_GUARD)
    (request,) = sink.requests
    assert request.headers["X-Bench-Key"] == "bk_test"
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["User-Agent"].startswith("bench-sdk-python/")
    body = request.body
    assert {"agent_slug", "display_name", "model", "framework", "architecture", "tools", "events"} <= set(body)
    assert (body["agent_slug"], body["display_name"], body["tools"]) == ("test-agent", "Tester", ["search"])
    assert body["sdk"]["name"] == "bench-sdk-python"
    assert "dropped" not in body


def test_too_large_batches_are_split(make_agent, sink) -> None:
    sink.max_events = 7
    agent = make_agent(endpoint=sink.url, config=dataclasses.replace(FAST, flush_interval=5))
    for i in range(30):
        agent.event("tick", {"i": i})
    assert agent.flush_sync(HANG_GUARD)
    assert sorted(e["data"]["i"] for e in sink.of_kind("tick")) == list(range(30))


def test_shutdown_with_dead_server_returns_within_its_timeout(make_agent, sink, caplog) -> None:
    sink.down()
    agent = make_agent(endpoint=sink.url, transport=UrllibTransport)
    agent.event("lost", None)
    assert agent.shutdown_sync(timeout=0.2) is False
    agent.event("after-shutdown", None)  # must not raise
    assert "shutdown timed out" in caplog.text
