"""An eval reads the runs it judges at half the read units (eventually consistent), and a read
that lags the batch which finished a run is read again as it is: the run is judged all the
same. DynamoDB's lag is simulated at the boto3 boundary, by a replica answering a
not-consistent GetItem of a task with the item as it was before the run ended, or with none."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from bench_core.domain.models import AgentMeta, AgentRef
from bench_core.evals import workflow
from bench_core.ports.workflows import eval_start
from bench_core.runtime.adapters import Services
from bench_core.settings import Settings
from bench_core.store.dynamodb.codec.keys import TASK, AgentKeys
from bench_core.store.dynamodb.store import DynamoStore
from botocore.awsrequest import AWSResponse
from moto.core.botocore_stubber import MockRawResponse

from tests.aws.moto_table import dynamo_store
from tests.factories import clean, ev
from tests.unit.test_eval_workflow import ScriptedLLM, verdict

REF = AgentRef("alice", "agent-1")
RUN = "run-1"


def send(store: DynamoStore, *events: dict[str, Any]) -> None:
    store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), clean(list(events)))


def judge(store: DynamoStore) -> dict[str, str]:
    services = Services(Settings(store="memory"), store).provide(llm=ScriptedLLM(verdict(0.8)))
    return workflow.run_eval(services, eval_start(REF.path, [RUN]))["outcomes"]


@contextmanager
def lagging(store: DynamoStore, stale: bytes) -> Iterator[list[bool]]:
    """A replica that answers every GetItem of the run's item that is not consistent with
    `stale` (the answer's body as the table sent it); yields whether each GetItem of it was
    consistent."""
    reads: list[bool] = []

    def answer(request: Any, **_: Any) -> AWSResponse | None:
        target = request.headers.get("X-Amz-Target", b"")
        body = json.loads(request.body or b"{}")
        if not (target.decode() if isinstance(target, bytes) else target).endswith(".GetItem") \
                or body["Key"]["sk"]["S"] != TASK + RUN:
            return None
        reads.append(bool(body.get("ConsistentRead")))
        if body.get("ConsistentRead"):
            return None  # the leader answers
        return AWSResponse(request.url, 200, {"Content-Type": "application/x-amz-json-1.0"},
                           MockRawResponse(stale))

    store.client.meta.events.register_first("before-send.dynamodb", answer)
    try:
        yield reads
    finally:
        store.client.meta.events.unregister("before-send.dynamodb", answer)


def answer_now(store: DynamoStore) -> bytes:
    """The body of a consistent GetItem of the run's item now, as the table sends it."""
    bodies: list[bytes] = []

    def keep(http_response: AWSResponse, **_: Any) -> None:
        bodies.append(http_response.content)

    store.client.meta.events.register("after-call.dynamodb.GetItem", keep)
    try:
        store.client.get_item(TableName=store.table.name, ConsistentRead=True,
                              Key=AgentKeys(REF.login, REF.slug).key(TASK + RUN))
    finally:
        store.client.meta.events.unregister("after-call.dynamodb.GetItem", keep)
    return bodies[0]


def test_a_run_is_read_for_its_eval_eventually_consistent_when_the_read_shows_it_finished(
        ) -> None:
    with dynamo_store() as store:
        send(store, ev("task.start", RUN, name="answer", input="2+2?"),
             ev("task.end", RUN, status="success", output="4"))
        with lagging(store, answer_now(store)) as reads:
            assert judge(store) == {RUN: "scored"}
        assert reads == [False]
        task = store.ingest.get_task(REF, RUN)
        assert task is not None and task.eval is not None and task.eval.score == 0.8


@pytest.mark.parametrize("replica", ["before the run ended", "before the run began"])
def test_a_run_a_lagging_read_shows_unfinished_is_read_again_and_judged(replica: str) -> None:
    with dynamo_store() as store:
        send(store, ev("task.start", RUN, name="answer", input="2+2?"))
        stale = answer_now(store) if replica == "before the run ended" else b"{}"
        send(store, ev("task.end", RUN, status="success", output="4"))
        with lagging(store, stale) as reads:
            assert judge(store) == {RUN: "scored"}
        assert reads[:2] == [False, True]
        task = store.ingest.get_task(REF, RUN)
        assert task is not None and task.eval is not None and task.eval.score == 0.8
