"""DynamoDB: a session's runs and the sessions list cost what `store/dynamodb/codec/sessions.py`
says (`tests/perf/dynamodb_cost.py`'s `Meter`, deterministic): a session with its counters and
its 30 runs is one Query of the agent's key, eventually consistent; a page of the list one Query
of `gsi1`; a finished run in a session writes two small items, under the agent's own key, and
a batch's turns of one session share one item: read in turn order, up to a limit, beside the
one-run items older code wrote."""

from __future__ import annotations

import json
from typing import Any

import boto3
from bench_core.domain.models import AgentMeta, AgentRef
from bench_core.domain.sessions import SessionFilter
from bench_core.store.dynamodb.codec.keys import AgentKeys
from bench_core.store.dynamodb.codec.values import to_item

from tests.aws.moto_table import TABLE_NAME, dynamo_store
from tests.factories import clean, task_events, ts
from tests.perf.dynamodb_cost import Meter

REF = AgentRef("owner", "helper")


def turn(run: str, session: str, started: str | None = None) -> list[dict[str, Any]]:
    start, end = task_events(run, "answer")
    return [{**start, "session_id": session, "user_id": "someone",
             **({"ts": started} if started else {})}, end]


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


def test_a_batchs_turns_of_one_session_are_one_item_of_one_write_unit() -> None:
    with dynamo_store() as store:
        meter = Meter(TABLE_NAME, boto3.client("dynamodb"))
        meter.attach(store.client)
        store.ingest.ingest("owner", AgentMeta(slug="helper"), clean(turn("warm", "chat")))
        meter.reset()
        events = [e for n in range(5) for session in ("chat", "other")
                  for e in turn(f"{session}-{n}", session)]
        store.ingest.ingest("owner", AgentMeta(slug="helper"), clean(events))
        items = {key: tally for key, tally in meter.by_item.items()
                 if "SESSION#" in key[1] and not key[1].endswith("#")}
        assert len(items) == 2, items  # one a session, where each run had its own
        assert all(tally.wru == 1 for tally in items.values()), items
        for session in ("chat", "other"):
            _, runs = store.runs.session_runs(REF, session, limit=100)
            assert [r.run_id for r in runs][-5:] == [f"{session}-{n}" for n in range(5)]


def test_turns_come_in_start_order_across_items_up_to_the_limit() -> None:
    """A batch's item holds turns that started before a later batch's: the read goes on past
    an item until `limit` turns come before the next one's key; a run on two items (a batch
    sent again, cut otherwise) shows once; a run item older code wrote reads among them."""
    at = [ts() for _ in range(7)]
    agent = AgentKeys(REF.login, REF.slug)
    with dynamo_store() as store:
        ingest = store.ingest.ingest
        ingest("owner", AgentMeta(slug="helper"),
               clean(turn("r0", "chat", at[0]) + turn("r2", "chat", at[2])
                     + turn("r5", "chat", at[5])))
        ingest("owner", AgentMeta(slug="helper"),
               clean(turn("r1", "chat", at[1]) + turn("r4", "chat", at[4])))
        store.table.write_all([
            {**agent.key(f"SESSION#chat#{at[3]}#0#r3"),
             **to_item({"run_id": "r3", "status": "failed", "started_at": at[3],
                        "ended_at": at[3], "cost_usd": 0, "evidence_cost_usd": 0,
                        "tokens": 0, "name": "answer", "duration_ms": 100})}])
        _, runs = store.runs.session_runs(REF, "chat", limit=100)
        assert [r.run_id for r in runs] == ["r0", "r1", "r2", "r3", "r4", "r5"]
        assert runs[3].status == "failed" and runs[2].status == "success"
        _, first = store.runs.session_runs(REF, "chat", limit=3)
        assert [r.run_id for r in first] == ["r0", "r1", "r2"]
        packed = [i for i in store.table.query(agent.pk, "begins_with(#sk, :head)",
                                               head="SESSION#chat#") if "turns" in i]
        assert len(packed) == 2  # r0, r2, r5 and r1, r4
        resent = json.loads(packed[0]["turns"])[1:]  # r2, r5 as a batch cut otherwise puts them
        store.table.write_all([{**agent.key(f"SESSION#chat#{resent[0][3]}#{resent[0][4]}#r2"),
                                **to_item({"turns": json.dumps(resent)})}])
        _, runs = store.runs.session_runs(REF, "chat", limit=100)
        assert [r.run_id for r in runs] == ["r0", "r1", "r2", "r3", "r4", "r5"]
