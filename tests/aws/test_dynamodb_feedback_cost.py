"""DynamoDB: feedback from people costs what `store/dynamodb/feedback.py` says, by DynamoDB's
sizing rules (`tests/perf/dynamodb_cost.py`'s `Meter`, deterministic): a feedback is one
write unit in the partition of its run's task, touching nothing else (off the ingest path, it
adds nothing to an event's cost); a resend one failed write and one read; a run's 100 feedback
one Query (100 of some 520 bytes: 13 read units)."""

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


def test_feedback_is_one_write_unit_beside_its_run_and_a_run_reads_it_in_one_query() -> None:
    with dynamo_store() as store:
        meter = Meter(TABLE_NAME, boto3.client("dynamodb"))
        meter.attach(store.client)
        calls: list[str] = []

        def count(event_name: str, **_: Any) -> None:
            calls.append(event_name.rsplit(".", 1)[-1])

        store.client.meta.events.register("after-call.dynamodb", count)
        assert store.feedback.add_feedback(REF, feedback(0)) is None
        assert (meter.wru, meter.rru, calls) == (1.0, 0.0, ["PutItem"])
        run_partition = AgentKeys(REF.login, REF.slug).pk_of(TASK + "run-1")
        assert set(meter.by_partition) == {("table", run_partition)}

        meter.reset()
        calls.clear()
        assert store.feedback.add_feedback(REF, feedback(0)) == feedback(0)
        assert (meter.wru, meter.rru, calls) == (1.0, 1.0, ["PutItem", "GetItem"])

        for n in range(1, RUN_FEEDBACK_SHOWN + 5):
            store.feedback.add_feedback(REF, feedback(n))
        meter.reset()
        calls.clear()
        read = store.feedback.run_feedback(REF, "run-1", RUN_FEEDBACK_SHOWN)
        assert len(read) == RUN_FEEDBACK_SHOWN
        assert calls == ["Query"]
        assert meter.rru == 13.0, f"{meter.rru} RRU"  # 100 items of some 520 bytes, 4 KB a unit
