"""DynamoDB: a session's runs and the sessions list cost what `store/dynamodb/codec/sessions.py`
says (`tests/perf/dynamodb_cost.py`'s `Meter`, deterministic): a session with its counters and
its 30 runs is one Query of the agent's key, eventually consistent; a page of the list one Query
of `gsi1`; and a finished run in a session writes its two small items in the batch's one
transaction, under the agent's own key."""

from __future__ import annotations

from typing import Any

import boto3
from bench_core.domain.models import AgentMeta, AgentRef
from bench_core.domain.sessions import SessionFilter
from bench_core.store.dynamodb.codec.keys import AgentKeys

from tests.aws.moto_table import TABLE_NAME, dynamo_store
from tests.factories import clean, task_events
from tests.perf.dynamodb_cost import Meter

REF = AgentRef("owner", "helper")


def turn(run: str, session: str) -> list[dict[str, Any]]:
    start, end = task_events(run, "answer")
    return [{**start, "session_id": session, "user_id": "someone"}, end]


def test_a_session_is_one_query_and_a_turn_two_small_items() -> None:
    with dynamo_store() as store:
        meter = Meter(TABLE_NAME, boto3.client("dynamodb"))
        meter.attach(store.client)
        calls: list[str] = []
        store.client.meta.events.register(
            "after-call.dynamodb", lambda event_name, **_: calls.append(event_name.rsplit(".")[-1]))
        store.ingest.ingest("owner", AgentMeta(slug="helper"), clean(turn("warm", "other")))
        meter.reset()
        store.ingest.ingest("owner", AgentMeta(slug="helper"), clean(turn("r-0", "chat")))
        sessions = {key for key in meter.by_item if "SESSION#" in str(key)}
        assert len(sessions) == 2, sessions  # its counters and its run
        agent_key = AgentKeys(REF.login, REF.slug).pk
        assert all(agent_key in str(key) for key in sessions)
        for n in range(1, 30):
            store.ingest.ingest("owner", AgentMeta(slug="helper"), clean(turn(f"r-{n}", "chat")))
        meter.reset()
        calls.clear()
        stats, runs = store.runs.session_runs(REF, "chat", limit=100)
        assert stats is not None and stats.runs == 30 and len(runs) == 30
        assert calls == ["Query"]
        assert meter.rru <= 1.5, f"{meter.rru} RRU"  # 31 items of some 200 bytes, half units
        calls.clear()
        page = store.runs.list_sessions(REF, SessionFilter(), limit=50)
        assert [s.session_id for s in page.sessions] == ["chat", "other"]
        assert calls == ["Query"]
