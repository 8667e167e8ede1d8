"""OTLP content on every store: GenAI log events for a span not stored yet are parked (the
store's short-lived records) and join the span when the trace export brings it, bounded per
agent and hour; the same use cases as `POST /v1/logs` and `/v1/traces`, on SQLite and DynamoDB.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from bench_core.domain.models import AgentRef, KeyRecord
from bench_core.ingest.otlp import export_traces, parked
from bench_core.ingest.otlp.logs import export_logs
from bench_core.live.local import LocalTransport
from bench_core.ports.store import Store
from bench_core.reads.live_feed import LiveFeed
from bench_core.settings import Settings
from bench_core.workflows.none import NoWorkflows

TRACE, SPAN = uuid.uuid4().hex, uuid.uuid4().hex[:16]
TASK = f"{TRACE}-{SPAN}"


@dataclass
class Ports:
    """What `pipeline.accept` uses, with the live push collected instead of run."""

    store: Store
    settings: Settings = field(default_factory=Settings)
    workflows: NoWorkflows = field(default_factory=NoWorkflows)
    later: list[Any] = field(default_factory=list)

    def run_later(self, *call: Any) -> None:
        self.later.append(call)

    @property
    def live(self) -> LiveFeed[Any]:
        return LiveFeed(self.store, LocalTransport())


def key(login: str) -> KeyRecord:
    return KeyRecord(key_hash="h", prefix="bk_x", login=login)


def logs_body() -> bytes:
    message = {"kvlistValue": {"values": [{"key": "content",
                                           "value": {"stringValue": "Capital of Portugal?"}}]}}
    choice = {"kvlistValue": {"values": [{"key": "message", "value": {"kvlistValue": {"values": [
        {"key": "role", "value": {"stringValue": "assistant"}},
        {"key": "content", "value": {"stringValue": "Lisbon."}}]}}}]}}
    records = [{"timeUnixNano": str(1_764_000_000_100_000_000 + i), "traceId": TRACE,
                "spanId": SPAN, "eventName": name, "body": body}
               for i, (name, body) in enumerate((("gen_ai.user.message", message),
                                                 ("gen_ai.choice", choice)))]
    return json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}).encode()


def traces_body() -> bytes:
    span = {"traceId": TRACE, "spanId": SPAN, "name": "chat",
            "startTimeUnixNano": "1764000000000000000", "endTimeUnixNano": "1764000000500000000",
            "attributes": [{"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
                           {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "10"}}]}
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()


@pytest.mark.parametrize("logs_first", [True, False])
def test_content_joins_its_span_in_either_order(store: Store, logs_first: bool) -> None:
    ports, login = Ports(store), "c" + uuid.uuid4().hex[:8]
    ref = AgentRef(login, "chatty")
    send_logs = lambda: export_logs(ports, key(login), logs_body(), "json", "chatty",  # noqa: E731
                                    later=ports.run_later)
    send_spans = lambda: export_traces(ports, key(login), traces_body(), "json",  # noqa: E731
                                       "chatty", later=ports.run_later)
    if logs_first:
        result = send_logs()
        assert (result.parked, result.attached, result.rejected) == (1, 0, 0)
        assert store.ingest.get_task(ref, TASK) is None
        send_spans()
    else:
        send_spans()
        assert send_logs().attached == 1
    send_logs()  # a re-sent export changes nothing
    task = store.ingest.get_task(ref, TASK)
    assert task is not None and task.finished
    assert task.input == [{"role": "user", "content": "Capital of Portugal?"}]
    assert task.output == [{"message": {"role": "assistant", "content": "Lisbon."}}]
    assert task.evidence is not None and task.evidence.input_tokens == 10
    assert parked.waiting(store, ref, [TASK]) == {}
    assert store.agents.get_agent(ref).stats.runs == 1


def test_parking_is_bounded_per_agent_and_hour(store: Store,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    ports, login = Ports(store), "b" + uuid.uuid4().hex[:8]
    monkeypatch.setattr(parked, "MAX_PARKED_PER_HOUR", 0)
    result = export_logs(ports, key(login), logs_body(), "json", "chatty",
                         later=ports.run_later)
    assert (result.parked, result.rejected) == (0, 2)
    assert parked.FULL in result.error_message
    assert parked.waiting(store, AgentRef(login, "chatty"), [TASK]) == {}
