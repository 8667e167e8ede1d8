"""DynamoDB: feedback from people costs what `store/dynamodb/feedback.py` says, by DynamoDB's
sizing rules (`tests/perf/dynamodb_cost.py`'s `Meter`, deterministic): a feedback is one
write unit in the partition of its run's task and one marking the agent's `AGREE` item, touching
nothing else (off the ingest path, it adds nothing to an event's cost); a resend those writes
and one read; a run's 100 feedback one Query (100 of some 520 bytes: 13 read units). Moving a
run in the agreement table is a read and a transaction of two small writes (4 units); whether
an agent has feedback half a read unit; the agreement of a page of 25 agents one BatchGetItem."""

from __future__ import annotations

from typing import Any

import boto3
from bench_core.domain.feedback import RUN_FEEDBACK_SHOWN, Feedback
from bench_core.domain.models import AgentRef
from bench_core.store.dynamodb.codec.keys import TASK, AgentKeys

from tests.aws.moto_table import TABLE_NAME, dynamo_store
from tests.perf.dynamodb_cost import Meter

REF = AgentRef("owner", "helper")


def feedback(n: int) -> Feedback:
    return Feedback(feedback_id=f"fb-{n:04d}", run_id="run-1", kind="score", score=0.5,
                    label="wrong-tool", comment="c" * 300, source="agent",
                    created_at="2026-12-03T10:00:00.000Z")


def test_feedback_is_two_write_units_and_a_run_reads_it_in_one_query() -> None:
    with dynamo_store() as store:
        meter = Meter(TABLE_NAME, boto3.client("dynamodb"))
        meter.attach(store.client)
        calls: list[str] = []

        def count(event_name: str, **_: Any) -> None:
            calls.append(event_name.rsplit(".", 1)[-1])

        store.client.meta.events.register("after-call.dynamodb", count)
        assert store.feedback.add_feedback(REF, feedback(0)) is None
        assert (meter.wru, meter.rru, calls) == (2.0, 0.0, ["UpdateItem", "PutItem"])
        agent = AgentKeys(REF.login, REF.slug)
        run_partition = agent.pk_of(TASK + "run-1")
        assert set(meter.by_partition) == {("table", run_partition), ("table", agent.pk)}

        meter.reset()
        calls.clear()
        assert store.feedback.add_feedback(REF, feedback(0)) == feedback(0)
        assert (meter.wru, meter.rru, calls) == (2.0, 1.0, ["UpdateItem", "PutItem", "GetItem"])

        for n in range(1, RUN_FEEDBACK_SHOWN + 5):
            store.feedback.add_feedback(REF, feedback(n))
        meter.reset()
        calls.clear()
        read = store.feedback.run_feedback(REF, "run-1", RUN_FEEDBACK_SHOWN)
        assert len(read) == RUN_FEEDBACK_SHOWN
        assert calls == ["Query"]
        assert meter.rru == 13.0, f"{meter.rru} RRU"  # 100 items of some 520 bytes, 4 KB a unit


def test_the_agreement_costs_a_few_units_only_when_a_labelled_run_moves() -> None:
    with dynamo_store() as store:
        meter = Meter(TABLE_NAME, boto3.client("dynamodb"))
        store.feedback.set_agreement(REF, "run-0", "ff")  # the table's layout looked up once
        meter.attach(store.client)
        store.feedback.set_agreement(REF, "run-1", "pp")
        assert (meter.wru, meter.rru) == (4.0, 1.0)  # the cell read; two writes, transacted
        meter.reset()
        store.feedback.set_agreement(REF, "run-1", "pp")
        assert (meter.wru, meter.rru) == (0.0, 1.0)  # unchanged: read only
        meter.reset()
        assert not store.feedback.has_feedback(REF)
        assert (meter.wru, meter.rru) == (0.0, 0.5)
        meter.reset()
        refs = [AgentRef("owner", f"agent-{n}") for n in range(25)]
        store.feedback.agreement_tables(refs)
        assert meter.rru == 12.5  # half a unit an agent, eventually consistent
