"""The eval queue on AWS, on moto's SQS and DynamoDB: a batch's runs are one message (32 runs at
most), a queue that refuses it leaves them marked pending for the sweep, and the eval
function's handler answers a delivery with the messages to deliver again, each made invisible
for its wait, judging and recording the rest."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from bench_core.domain.models import AgentMeta, AgentRef, iso
from bench_core.evals import queue
from bench_core.lambdas.eval_queue import EvalDeliveries
from bench_core.ports.llm import Completion, LLMUnavailable
from bench_core.runtime.adapters import Services
from bench_core.settings import Settings
from bench_core.store.dynamodb.store import DynamoStore
from bench_core.workflows.eval_queue import RUNS_PER_MESSAGE, EvalQueue

from tests.aws.lambda_runtime import LambdaContext, sqs_event
from tests.aws.moto_table import dynamo_store
from tests.factories import clean, task_events

REF = AgentRef("alice", "agent-1")


class Judge:
    """Every run 0.6, but the runs named `down` (the model throttled for them)."""

    label = "bedrock:scripted"

    def __init__(self, *down: str) -> None:
        self.down = set(down)

    def complete(self, system, messages, *, max_tokens):  # noqa: ANN001, ANN201 - the LLM port
        if any(run in str(messages) for run in self.down):
            raise LLMUnavailable("ThrottlingException")
        return Completion(json.dumps({"score": 0.6, "reasoning": "Fair."}), 100, 20)


@pytest.fixture
def store() -> Iterator[DynamoStore]:
    with dynamo_store() as store:
        yield store


@pytest.fixture
def sqs(store: DynamoStore) -> Any:
    return boto3.client("sqs")


def ingest(store: DynamoStore, *runs: str) -> None:
    store.ingest.ingest("alice", AgentMeta(slug="agent-1"),
                        clean([e for r in runs for e in task_events(r)]))


def test_a_batchs_runs_are_one_message_and_a_refused_one_is_left_for_the_sweep(
        store: DynamoStore, sqs: Any) -> None:
    url = sqs.create_queue(QueueName="evals")["QueueUrl"]
    runs = [f"r{n:02d}" for n in range(RUNS_PER_MESSAGE + 3)]
    EvalQueue(url, store.evals, client=sqs, clock=store.clock).start_evals(REF, runs, private=True)
    bodies = [json.loads(r["body"]) for r in sqs_event(url)["Records"]]
    assert sorted(len(b["task_ids"]) for b in bodies) == [3, RUNS_PER_MESSAGE]
    assert all(b["agent"] == REF.path and b["private"] is True and b["queued_at"] for b in bodies)
    assert store.evals.pending_evals("", "9999", 100) == []  # sending writes nothing
    broken = EvalQueue(url.replace("evals", "missing"), store.evals, client=sqs, clock=store.clock)
    ingest(store, "lost")
    broken.start_evals(REF, ["lost"])
    assert store.evals.pending_evals("", "9999", 100) == [(REF, ["lost"])]


def deliveries(store: DynamoStore, sqs: Any, url: str, judge: Judge) -> EvalDeliveries:
    services = Services(Settings(store="dynamodb", eval_queue_url=url), store).provide(llm=judge)
    return EvalDeliveries(services, client=sqs)


def test_a_delivery_judges_each_agent_together_and_puts_back_what_the_judge_missed(
        store: DynamoStore, sqs: Any) -> None:
    # a message handed out is visible again at once, unless the handler delays it
    url = sqs.create_queue(QueueName="evals", Attributes={"VisibilityTimeout": "0"})["QueueUrl"]
    ingest(store, "a1", "a2", "b1")
    starter = EvalQueue(url, store.evals, client=sqs, clock=store.clock)
    starter.start_evals(REF, ["a1"])
    starter.start_evals(REF, ["b1"])
    sqs.send_message(QueueUrl=url, MessageBody="not an eval")
    event = sqs_event(url)
    assert len(event["Records"]) == 3
    handler = deliveries(store, sqs, url, Judge("b1"))
    answer = handler(event, LambdaContext(remaining_ms=300_000))
    failed = {f["itemIdentifier"] for f in answer["batchItemFailures"]}
    bodies = {r["messageId"]: json.loads(r["body"]) if r["body"].startswith("{") else None
              for r in event["Records"]}
    # a1 and b1 went in one round: both messages come back; the junk is dropped
    assert {bodies[m]["task_ids"][0] for m in failed} == {"a1", "b1"}
    assert store.ingest.get_task(REF, "a1").eval.score == 0.6
    assert store.ingest.get_task(REF, "b1").eval is None
    # the failed ones were made invisible for their wait (5 minutes: a first delivery)
    visible = {r["messageId"] for r in sqs_event(url)["Records"]}
    assert visible == set(bodies) - failed


def test_a_delivery_without_time_for_a_round_puts_everything_back_at_once(
        store: DynamoStore, sqs: Any) -> None:
    url = sqs.create_queue(QueueName="evals")["QueueUrl"]
    ingest(store, "a1")
    EvalQueue(url, store.evals, client=sqs, clock=store.clock).start_evals(REF, ["a1"])
    event = sqs_event(url)
    short = LambdaContext(remaining_ms=int(queue.JUDGEMENT.total_seconds() * 1000))
    answer = deliveries(store, sqs, url, Judge())(event, short)
    assert [f["itemIdentifier"] for f in answer["batchItemFailures"]] == [
        event["Records"][0]["messageId"]]
    assert store.ingest.get_task(REF, "a1").eval is None
    assert [json.loads(r["body"])["task_ids"] for r in sqs_event(url)["Records"]] == [["a1"]]


def test_the_queued_time_survives_a_restart_by_the_sweep(store: DynamoStore, sqs: Any) -> None:
    """A run a refused send left pending is queued again by the sweep with the time it was
    first queued, so the two days count from then."""
    url = sqs.create_queue(QueueName="evals")["QueueUrl"]
    ingest(store, "a1")
    first = iso(store.clock.now())
    store.evals.mark_evals_pending(REF, ["a1"], first)
    (ref, runs), = store.evals.pending_evals("", "9999", 10)
    EvalQueue(url, store.evals, client=sqs, clock=store.clock).start_evals(ref, runs)
    (record,) = sqs_event(url)["Records"]
    assert json.loads(record["body"])["task_ids"] == ["a1"]
