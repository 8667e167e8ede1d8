"""DynamoDB keeps an agent's newest run under a race: a batch decides which of its runs are
newer than the agent's from the agent item it read, and a concurrent batch may record a newer
one before its transaction lands (`store/dynamodb/ingest.py`)."""

from __future__ import annotations

from typing import Any

from bench_core.domain.models import AgentMeta, AgentRef, RunRef

from tests.aws.moto_table import dynamo_store
from tests.factories import clean, ev, ts

REF = AgentRef("alice", "racer")
META = AgentMeta(slug="racer")


def run(task_id: str, at_ms: int, status: str) -> list[dict[str, Any]]:
    return [ev("task.start", task_id, ts=ts(at_ms), name=task_id),
            ev("task.end", task_id, ts=ts(at_ms + 1_000), status=status, output="ok")]


def test_a_newer_run_recorded_by_a_concurrent_batch_is_not_overwritten() -> None:
    with dynamo_store() as store:
        newer = clean(run("newer", 5_000, "success"))
        cut_in: list[Any] = []

        def concurrent_batch(**_: Any) -> None:
            """Just before the older batch's transaction, a newer batch is stored whole."""
            if not cut_in:
                cut_in.append(None)
                cut_in[0] = store.ingest.ingest("alice", META, newer)

        store.client.meta.events.register("before-call.dynamodb.TransactWriteItems",
                                          concurrent_batch)
        try:
            outcome = store.ingest.ingest("alice", META, clean(run("older", 2_000, "failed")))
        finally:
            store.client.meta.events.unregister("before-call.dynamodb.TransactWriteItems",
                                                concurrent_batch)
        assert cut_in[0].finished == [("newer", True)] and outcome.finished == [("older", True)]
        s = store.agents.get_agent(REF).stats
        assert s.latest_run == RunRef("newer", "newer", "success", ts(5_000))
        assert s.latest_failure == RunRef("older", "older", "failed", ts(2_000))
        assert (s.runs, s.successes, s.failures) == (2, 1, 1)
