"""The Workflows port: the in-process worker pool and AWS's (the eval queue on moto's SQS, and
Step Functions on moto with the project's own state machine definitions) pass one suite. Work
that is started ends judged or clustered; a start that fails never raises and loses nothing
(the run stays pending for the sweep).

moto starts executions but runs no Lambda here, so the Step Functions side finishes each
execution with the steps its Task states call (`STEPS`, the same functions; that the state
machines call them in order is tests/aws/test_statemachines.py's); the queue's messages go to
the eval function's handler as Lambda's event source hands them over."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
from bench_core.clustering import workflow as cluster_wf
from bench_core.domain.models import AgentMeta, AgentRef
from bench_core.ports.workflows import Workflows
from bench_core.runtime.adapters import Services
from bench_core.runtime.jobs import LocalJobs
from bench_core.settings import Settings
from bench_core.workflows.eval_queue import EvalQueue
from bench_core.workflows.local import LocalRunner
from bench_core.workflows.stepfunctions import StepFunctionsStarter

from tests.conftest import poll
from tests.factories import clean, task_events

REPO = Path(__file__).resolve().parents[2]
REF = AgentRef("alice", "agent-1")
ROLE = "arn:aws:iam::123456789012:role/bench-workflows"


@dataclass
class Harness:
    """One adapter over a real store: `workflows` to start work, `finish` to see it through
    (the worker pool in the background; the executions moto holds, step by step), and
    `broken`, the same adapter when every start fails."""

    services: Services
    workflows: Workflows
    finish: Callable[[Callable[[], bool]], None]
    broken: Workflows


class WorkersOnly(LocalRunner):
    """The pool without its hourly timer, whose first round sweeps every unjudged run and
    clusters every due agent by itself: here only what the suite starts may run."""

    def _timer(self) -> None:
        return None


def local_harness(services: Services) -> Iterator[Harness]:
    runner = WorkersOnly(LocalJobs(services), workers=1)
    services.provide(workflows=runner)
    full = LocalRunner(LocalJobs(services), workers=1, max_queue=1)  # never started: its queue stays full
    full.start_clusters([AgentRef("someone", "else")])
    runner.start()
    try:
        yield Harness(services, runner, lambda done: poll(done, bool), full)
    finally:
        runner.stop()


def aws_harness(services: Services) -> Iterator[Harness]:
    """The eval queue (moto's SQS, its messages delivered to `EvalDeliveries` as Lambda's event
    source would) and the cluster state machine (moto's Step Functions)."""
    from bench_core.lambdas.eval_queue import EvalDeliveries
    from moto import mock_aws

    from tests.aws.lambda_runtime import LambdaContext, sqs_event

    with mock_aws():
        client = boto3.client("stepfunctions", region_name="us-east-1")
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="bench-evals")["QueueUrl"]
        definition = (REPO / "statemachines" / "cluster.asl.json").read_text().replace(
            "${ClusterFunctionArn}", "arn:aws:lambda:us-east-1:123456789012:function:bench-cluster")
        cluster = client.create_state_machine(name="bench-cluster", definition=definition,
                                              roleArn=ROLE, type="STANDARD")["stateMachineArn"]
        starter = StepFunctionsStarter(EvalQueue(url, services.store.evals, client=sqs),
                                       cluster, client=client)
        services.provide(workflows=starter)
        deliveries = EvalDeliveries(services, client=sqs)
        finished: set[str] = set()

        def finish(done: Callable[[], bool]) -> None:
            while (event := sqs_event(url))["Records"]:
                assert deliveries(event, LambdaContext(remaining_ms=300_000)) == {
                    "batchItemFailures": []}
                for record in event["Records"]:
                    sqs.delete_message(QueueUrl=url, ReceiptHandle=record["receiptHandle"])
            for execution in client.list_executions(stateMachineArn=cluster)["executions"]:
                if execution["executionArn"] in finished:
                    continue
                finished.add(execution["executionArn"])
                state = json.loads(client.describe_execution(
                    executionArn=execution["executionArn"])["input"])
                for agent in state["agents"]:
                    cluster_wf.cluster_agent(services, {"agent": agent})
            assert done()

        broken = StepFunctionsStarter(
            EvalQueue(url.replace("bench-evals", "missing"), services.store.evals, client=sqs),
            cluster.replace("bench-cluster", "missing"), client=client)
        yield Harness(services, starter, finish, broken)


HARNESSES = {"in-process": local_harness, "aws": aws_harness}


@pytest.fixture(params=sorted(HARNESSES))
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    services = Services.from_settings(Settings(data_dir=tmp_path))
    try:
        yield from HARNESSES[request.param](services)
    finally:
        services.close()


def ingest(harness: Harness, *task_ids: str, status: str = "success") -> None:
    events = [e for t in task_ids for e in task_events(t, status=status, output="it broke")]
    harness.services.store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), clean(events))


def judged(harness: Harness, *task_ids: str) -> bool:
    return all((task := harness.services.store.ingest.get_task(REF, task_id)) is not None
               and task.eval is not None for task_id in task_ids)


def test_started_evals_end_with_a_result_for_each_run(harness: Harness) -> None:
    ingest(harness, "t1", "t2")
    harness.workflows.start_evals(REF, ["t1", "t2"])
    harness.finish(lambda: judged(harness, "t1", "t2"))
    task = harness.services.store.ingest.get_task(REF, "t1")
    assert task is not None and task.eval is not None and task.eval.judge == "heuristic-v1"


def test_a_cluster_request_ends_with_the_agents_insights(harness: Harness) -> None:
    ingest(harness, "f1", "f2", status="failed")
    harness.workflows.start_clusters([REF])
    harness.finish(lambda: harness.services.store.evals.get_insights(REF) is not None)
    insights = harness.services.store.evals.get_insights(REF)
    assert insights is not None and insights["failed"] == 2


def test_starting_nothing_is_harmless(harness: Harness) -> None:
    harness.workflows.start_evals(REF, [])
    harness.workflows.start_clusters([])
    harness.finish(lambda: True)


def test_a_failed_start_never_raises_and_leaves_the_run_for_the_sweep(harness: Harness) -> None:
    ingest(harness, "t1")
    harness.broken.start_evals(REF, ["t1"])
    harness.broken.start_clusters([REF])
    assert not judged(harness, "t1")
    pending = harness.services.store.evals.pending_evals("0000", "9999", 10)
    assert (REF, ["t1"]) in pending
