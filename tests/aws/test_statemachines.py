"""The state machines, executed by moto's Step Functions interpreter with canned Lambda results
(queued through moto's API): their flow, retries with backoff and failure paths; and a check
that their Task states call exactly the Python steps, in order."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
import pytest
import requests
from bench_core.benchmarks import workflow as benchmark_wf
from bench_core.clock import SYSTEM_CLOCK
from bench_core.domain.models import AgentMeta
from bench_core.lambdas import cluster_steps
from bench_core.ports.workflows import benchmark_start, parse_agent
from bench_core.runtime.adapters import Services
from bench_core.settings import Settings
from moto import mock_aws
from moto.awslambda_simple.models import LambdaSimpleBackend

from tests.aws import cfn
from tests.factories import clean, task_events

MACHINES = cfn.REPO / "statemachines"
QUEUE_URL = "http://motoapi.amazonaws.com/moto-api/static/lambda-simple/response"
HANG_GUARD_S = 60


# ---- the definitions agree with the Python steps ----------------------------------------------


def definition(name: str) -> dict[str, Any]:
    return json.loads((MACHINES / f"{name}.asl.json").read_text())


def states_of(machine: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every state by name, those inside Map processors included."""
    found = {}
    for name, state in machine["States"].items():
        found[name] = state
        inner = state.get("ItemProcessor") or state.get("Iterator")
        if inner:
            found |= states_of(inner)
    return found


def step_paths(machine: dict[str, Any]) -> list[list[str]]:
    """The steps each path from the start calls, in order, Catch edges included; a loop back
    to a state already on the path (grading chunk after chunk) ends the path there."""
    states = states_of(machine)

    def walk(name: str | None, seen: list[str], visited: tuple[str, ...]) -> list[list[str]]:
        if name is None or name in visited:
            return [seen]
        state = states[name]
        here = seen + ([state["Parameters"]["step"]] if state["Type"] == "Task" else [])
        if state["Type"] == "Map":
            (here,) = walk(state["ItemProcessor"]["StartAt"], here, ())
        nexts = [c["Next"] for c in state.get("Choices", [])] + \
            [n for n in (state.get("Default"), state.get("Next")) if n] + \
            [c["Next"] for c in state.get("Catch", [])]
        return ([p for n in nexts for p in walk(n, here, (*visited, name))] if nexts
                else [here])

    return walk(machine["StartAt"], [], ())


@pytest.mark.parametrize("name, steps", [("cluster", cluster_steps.STEPS),
                                         ("benchmark", benchmark_wf.STEPS)])
def test_task_states_call_the_python_steps_in_order(name: str, steps: dict[str, Any]) -> None:
    machine = definition(name)
    tasks = [s for s in states_of(machine).values() if s["Type"] == "Task"]
    assert [t["Parameters"]["step"] for t in tasks] == list(steps), "one Task per step, in order"
    order = list(steps)
    paths = step_paths(machine)
    for path in paths:
        assert path == sorted(path, key=order.index), f"steps out of order on a path: {path}"
    assert max(paths, key=len) == order, "some path runs every step"
    for task in tasks:
        assert task["Resource"] in ("${ClusterFunctionArn}", "${BenchmarkFunctionArn}")
        assert task["Parameters"] == {"step": task["Parameters"]["step"], "state.$": "$"}
        assert task["Retry"] and all(r["BackoffRate"] >= 2 for r in task["Retry"]), task


def test_every_task_has_retry_and_a_catch_but_the_clusters_own() -> None:
    for machine in ("cluster", "benchmark"):
        for state in states_of(definition(machine)).values():
            if state["Type"] == "Task":
                assert state["Retry"] and ("Catch" in state or machine == "cluster"
                                           or state["Parameters"]["step"] == "fail")


# ---- executed under moto -----------------------------------------------------------------------


@dataclass
class Sfn:
    client: Any
    cluster_arn: str
    benchmark_arn: str = ""
    sleeps: list[float] = field(default_factory=list)

    def queue(self, *results: dict[str, Any]) -> None:
        """What the next Lambda invocations return, in order; a dict with `errorType` is an
        unhandled function error, the way Lambda reports an exception."""
        response = requests.post(QUEUE_URL, json={"results": [json.dumps(r) for r in results],
                                                  "region": "us-east-1"}, timeout=10)
        assert response.status_code == 201

    def run(self, arn: str, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        execution = self.client.start_execution(stateMachineArn=arn, name=name,
                                                input=json.dumps(payload))["executionArn"]
        deadline = time.monotonic() + HANG_GUARD_S
        while (described := self.client.describe_execution(executionArn=execution))["status"] \
                == "RUNNING":
            assert time.monotonic() < deadline, "execution hangs (hang guard)"
            time.sleep(0.02)
        events = self.client.get_execution_history(executionArn=execution)["events"]
        return {**described, "events": events}


def invocations(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The payload of every Lambda invocation, in order."""
    return [json.loads(e["lambdaFunctionScheduledEventDetails"]["input"]) for e in run["events"]
            if e["type"] == "LambdaFunctionScheduled"]


def error(kind: str, message: str = "scripted") -> dict[str, Any]:
    return {"errorType": kind, "errorMessage": message, "stackTrace": []}


def _as_function_error(invoke: Any) -> Any:
    def wrapped(self: LambdaSimpleBackend, function_name: str, qualifier: str | None, body: Any,
                headers: Any, response_headers: dict[str, str]) -> Any:
        payload = invoke(self, function_name, qualifier, body, headers, response_headers)
        try:
            reported = json.loads(payload)
        except ValueError:
            return payload
        if isinstance(reported, dict) and "errorType" in reported:
            response_headers["x-amz-function-error"] = "Unhandled"
        return payload

    return wrapped


@pytest.fixture
def sfn() -> Iterator[Sfn]:
    """The state machines with canned Lambda results (`Sfn.queue`)."""
    yield from moto_sfn(LambdaSimpleBackend.invoke)


def moto_sfn(invoke: Any) -> Iterator[Sfn]:
    """The state machines on moto, their Lambda invocations answered by `invoke`."""
    import moto.stepfunctions.parser.asl.component.common.retry.retrier_decl as retrier

    recorder = Sfn(None, "")

    class Clock:  # the retrier's waits, recorded instead of slept
        @staticmethod
        def sleep(seconds: float) -> None:
            recorder.sleeps.append(seconds)

    with mock.patch.object(LambdaSimpleBackend, "invoke", _as_function_error(invoke)), \
            mock.patch.object(retrier, "time", Clock), \
            mock_aws(config={"stepfunctions": {"execute_state_machine": True},
                             "lambda": {"use_docker": False}}):
        role = boto3.client("iam").create_role(
            RoleName="bench-test", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        lam, client = boto3.client("lambda"), boto3.client("stepfunctions")
        arns = {}
        for name, kind in (("cluster", "STANDARD"), ("benchmark", "STANDARD")):
            function = lam.create_function(FunctionName=f"bench-{name}", Runtime="python3.12",
                                           Role=role, Handler="app.handler",
                                           Code={"ZipFile": b"app"})["FunctionArn"]
            body = (MACHINES / f"{name}.asl.json").read_text().replace(
                f"${{{name.capitalize()}FunctionArn}}", function)
            arns[name] = client.create_state_machine(name=f"bench-{name}", definition=body,
                                                     roleArn=role, type=kind)["stateMachineArn"]
        recorder.client, recorder.cluster_arn = client, arns["cluster"]
        recorder.benchmark_arn = arns["benchmark"]
        yield recorder


HOURLY = {"hourly": True}


def test_the_hourly_run_sweeps_finds_due_agents_clusters_each_then_looks(sfn: Sfn) -> None:
    swept = {**HOURLY, "swept": 3}
    judged = {**swept, "sessions_judged": {"scored": 2}}
    due = {**judged, "agents": ["alice/a"]}
    sfn.queue(swept, judged, due, {"agent": "alice/a", "clusters": 2, "considered": 40},
              {**due, "clustered": {"agents": 1}, "watched": 2})
    run = sfn.run(sfn.cluster_arn, "cluster-hourly", {})
    assert run["status"] == "SUCCEEDED"
    assert invocations(run) == [{"step": "sweep_evals", "state": HOURLY},
                                {"step": "judge_sessions", "state": swept},
                                {"step": "due_agents", "state": judged},
                                {"step": "cluster_agent", "state": {"agent": "alice/a"}},
                                {"step": "watch_active",
                                 "state": {**due, "clustered": {"agents": 1}}}]
    assert json.loads(run["output"])["looks"] == {"watched": 2}


def test_a_refresh_clusters_the_named_agents_only(sfn: Sfn) -> None:
    sfn.queue({"agent": "alice/a", "clusters": 1}, {"agent": "alice/a", "clusters": 1})
    run = sfn.run(sfn.cluster_arn, "cluster-refresh", {"agents": ["alice/a", "bob/b"]})
    assert run["status"] == "SUCCEEDED"
    calls = invocations(run)
    assert sorted(c["state"]["agent"] for c in calls) == ["alice/a", "bob/b"]
    assert {c["step"] for c in calls} == {"cluster_agent"}


def test_one_agent_failing_does_not_fail_the_run(sfn: Sfn) -> None:
    attempts = definition("cluster")["States"]["ClusterEachAgent"]["ItemProcessor"]["States"][
        "ClusterAgent"]["Retry"][0]["MaxAttempts"] + 1
    sfn.queue(*[error("MemoryError")] * attempts)
    run = sfn.run(sfn.cluster_arn, "cluster-failing", {"agents": ["alice/a"]})
    assert run["status"] == "SUCCEEDED"
    assert json.loads(run["output"])["clustered"] == {"agents": 1}
    assert "MemoryError" in json.dumps(run["events"], default=str), "the error is in the history"
    assert len(sfn.sleeps) == attempts - 1


STATE_LIMIT = 256 * 1024
"""What Step Functions lets pass between states (an input or output over it fails the run)."""
ONE_AGENT = 8 * 1024
"""Room for what one agent's iteration carries (its ref, its error with the stack trace)."""


def largest_payload(run: dict[str, Any]) -> int:
    """The largest input or output any state of `run` passed on, in bytes."""
    return max(len(details[key].encode()) for event in run["events"]
               for details in event.values() if isinstance(details, dict)
               for key in ("input", "output") if isinstance(details.get(key), str))


@pytest.fixture
def real_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Sfn, Services]]:
    """The cluster state machine invoking the real ClusterFunction handler on a memory store;
    agents of login `crash` make the function die (an out-of-memory Lambda reports its error
    with a long stack trace, as AWS does)."""
    from bench_core.lambdas import workflow_steps as lambdas

    from tests.aws.lambda_runtime import LambdaContext, fresh_function_module

    services = Services.from_settings(Settings(data_dir=tmp_path, store="memory"))
    monkeypatch.setattr(lambdas, "_services", services)
    handler = fresh_function_module(cfn.REPO / "functions" / "cluster").handler

    def invoke(self: LambdaSimpleBackend, function_name: str, qualifier: str | None, body: Any,
               headers: Any, response_headers: dict[str, str]) -> str:
        event = json.loads(body)
        if event["state"].get("agent", "").startswith("crash/"):
            return json.dumps(error("MemoryError", "Runtime exited: out of memory")
                              | {"stackTrace": [f"  File \"/opt/python/bench_core/frame_{i}.py\", "
                                                f"line {i}, in step\n    {'x' * 120}"
                                                for i in range(24)]})
        return json.dumps(handler(event, LambdaContext()))

    try:
        yield from ((recorder, services) for recorder in moto_sfn(invoke))
    finally:
        services.close()


def agents_with_failures(services: Services, login: str, count: int) -> list[str]:
    paths = []
    for n in range(count):
        events = [e for i, text in enumerate(("TimeoutError: search API timed out after 30s",
                                              "HTTP 429 Too Many Requests from openai",
                                              "JSONDecodeError: Expecting value: line 1"))
                  for e in task_events(f"t{i}", status="failed", output=text)]
        services.store.ingest.ingest(f"{login}{n}", AgentMeta(slug="agent"), clean(events))
        paths.append(f"{login}{n}/agent")
    return paths


def test_150_agents_clustered_and_80_crashing_pass_a_bounded_state_on(
        real_cluster: tuple[Sfn, Services]) -> None:
    """Each agent's result goes to the store and its error to the history, never into the
    state: past the agent refs themselves, what passes between states does not grow with the
    number of agents (it grew ~3.6 KB per crashing agent, failing the run past ~71)."""
    sfn, services = real_cluster
    for name, clustered, crashing in (("few", 3, 2), ("many", 150, 80)):
        agents = (agents_with_failures(services, name, clustered)
                  + [f"crash/{name}-{n}" for n in range(crashing)])
        run = sfn.run(sfn.cluster_arn, f"cluster-{name}", {"agents": agents})
        assert run["status"] == "SUCCEEDED", run.get("error")
        refs = len(json.dumps({"agents": agents}))
        assert largest_payload(run) <= refs + ONE_AGENT, (name, largest_payload(run), refs)
        assert json.loads(run["output"])["clustered"] == {"agents": clustered + crashing}
        for path in agents[:clustered]:
            insights = services.store.evals.get_insights(parse_agent(path))
            assert insights is not None and insights["considered"] == 3, path
    assert largest_payload(run) < STATE_LIMIT / 8


def test_a_failed_sweep_does_not_stop_the_clustering_or_the_looks(sfn: Sfn) -> None:
    sfn.queue(*[error("RuntimeError")] * 4, HOURLY, {**HOURLY, "agents": []},
              {**HOURLY, "watched": 0})
    run = sfn.run(sfn.cluster_arn, "cluster-sweep-broken", {})
    assert run["status"] == "SUCCEEDED"
    assert [i["step"] for i in invocations(run)] == ["sweep_evals"] * 4 + [
        "judge_sessions", "due_agents", "watch_active"]


def test_failed_looks_do_not_fail_the_run(sfn: Sfn) -> None:
    sfn.queue(HOURLY, HOURLY, {**HOURLY, "agents": []}, *[error("RuntimeError")] * 3)
    run = sfn.run(sfn.cluster_arn, "cluster-looks-broken", {})
    assert run["status"] == "SUCCEEDED"
    assert [i["step"] for i in invocations(run)] == ["sweep_evals", "judge_sessions",
                                                     "due_agents"] + ["watch_active"] * 3
    assert json.loads(run["output"])["watch_error"]["Error"] == "RuntimeError"


def test_failed_session_judging_does_not_stop_the_clustering(sfn: Sfn) -> None:
    sfn.queue(HOURLY, *[error("LLMUnavailable")] * 4, {**HOURLY, "agents": []}, {"watched": 0})
    run = sfn.run(sfn.cluster_arn, "cluster-sessions-broken", {})
    assert run["status"] == "SUCCEEDED"
    assert [i["step"] for i in invocations(run)] == ["sweep_evals"] + [
        "judge_sessions"] * 4 + ["due_agents", "watch_active"]
    assert invocations(run)[-2]["state"]["sessions_error"]["Error"] == "LLMUnavailable"


def test_an_agent_whose_clustering_fails_still_lets_the_looks_run(sfn: Sfn) -> None:
    attempts = definition("cluster")["States"]["ClusterEachAgent"]["ItemProcessor"]["States"][
        "ClusterAgent"]["Retry"][0]["MaxAttempts"] + 1
    due = {**HOURLY, "agents": ["alice/a"]}
    sfn.queue(HOURLY, HOURLY, due, *[error("MemoryError")] * attempts, {**due, "watched": 1})
    run = sfn.run(sfn.cluster_arn, "cluster-agent-broken", {})
    assert run["status"] == "SUCCEEDED"
    assert [i["step"] for i in invocations(run)] == ["sweep_evals", "judge_sessions",
                                                     "due_agents"] + [
        "cluster_agent"] * attempts + ["watch_active"]


def test_the_definitions_are_in_the_template_with_their_function_arns() -> None:
    resources = cfn.load_template()["Resources"]
    machines = {r["Properties"]["DefinitionUri"]: r["Properties"] for r in resources.values()
                if r["Type"] == "AWS::Serverless::StateMachine"}
    assert set(machines) == {"statemachines/cluster.asl.json", "statemachines/benchmark.asl.json"}
    assert machines["statemachines/cluster.asl.json"]["Type"] == "STANDARD"
    assert machines["statemachines/benchmark.asl.json"]["Type"] == "STANDARD"
    for uri, props in machines.items():
        placeholders = set(re.findall(r"\$\{(\w+)\}", Path(cfn.REPO / uri).read_text()))
        assert placeholders == set(props["DefinitionSubstitutions"]), uri


BENCH_START = benchmark_start("run-1")


def test_a_run_is_graded_chunk_after_chunk_until_done(sfn: Sfn) -> None:
    more = {**BENCH_START, "graded": 16, "total": 30}
    done = {**BENCH_START, "next": "done", "graded": 30, "total": 30}
    sfn.queue(more, done)
    run = sfn.run(sfn.benchmark_arn, "bench-chunks", BENCH_START)
    assert run["status"] == "SUCCEEDED" and json.loads(run["output"]) == done
    assert invocations(run) == [{"step": "grade", "state": BENCH_START},
                                {"step": "grade", "state": more}]


def benchmark_judge_retry() -> dict[str, Any]:
    grade = definition("benchmark")["States"]["Grade"]
    (unavailable,) = [r for r in grade["Retry"] if "JudgeUnavailable" in r["ErrorEquals"]]
    return unavailable


def test_an_unavailable_benchmark_judge_is_retried_with_backoff_then_the_run_is_marked_failed(
        sfn: Sfn) -> None:
    retry = benchmark_judge_retry()
    attempts = retry["MaxAttempts"] + 1
    sfn.queue(*[error("JudgeUnavailable")] * attempts, {**BENCH_START, "next": "done"})
    run = sfn.run(sfn.benchmark_arn, "bench-down", BENCH_START)
    assert run["status"] == "FAILED" and run["error"] == "BenchmarkGradingFailed"
    calls = invocations(run)
    assert [c["step"] for c in calls] == ["grade"] * attempts + ["fail"]
    assert calls[-1]["state"]["error"]["Error"] == "JudgeUnavailable", "fail says why"
    assert len(sfn.sleeps) == retry["MaxAttempts"]
    for n, slept in enumerate(sfn.sleeps):
        assert 0 <= slept <= min(retry["IntervalSeconds"] * retry["BackoffRate"] ** n,
                                 retry["MaxDelaySeconds"])


def test_a_judge_back_within_the_retries_goes_on_grading(sfn: Sfn) -> None:
    done = {**BENCH_START, "next": "done", "graded": 3, "total": 3}
    sfn.queue(error("JudgeUnavailable"), done)
    run = sfn.run(sfn.benchmark_arn, "bench-flaky", BENCH_START)
    assert run["status"] == "SUCCEEDED"
    assert [c["step"] for c in invocations(run)] == ["grade", "grade"]


# ---- starting executions (the Workflows port on AWS) --------------------------------------------


def executions(sfn: Sfn, arn: str) -> list[dict[str, Any]]:
    listed = sfn.client.list_executions(stateMachineArn=arn)["executions"]
    return [{**e, "input": json.loads(sfn.client.describe_execution(
        executionArn=e["executionArn"])["input"])} for e in listed]


def test_a_repeated_refresh_is_one_cluster_execution_and_a_failed_start_never_raises(
        sfn: Sfn) -> None:
    from bench_core.domain.models import AgentRef
    from bench_core.workflows.stepfunctions import StepFunctionsStarter

    starter = StepFunctionsStarter(None, sfn.cluster_arn, client=sfn.client)
    for _ in range(2):
        starter.start_clusters([AgentRef("alice", "agent-1")])
    (started,) = executions(sfn, sfn.cluster_arn)
    assert started["input"] == {"agents": ["alice/agent-1"]}
    starter.start_evals(AgentRef("alice", "agent-1"), ["t1"])  # no eval queue: nothing
    broken = StepFunctionsStarter(None, sfn.cluster_arn.replace("bench-cluster", "missing"),
                                  client=sfn.client)
    broken.start_clusters([AgentRef("alice", "agent-1")])


def test_the_starter_starts_one_grading_execution_per_run_and_says_when_it_cannot(sfn: Sfn) -> None:
    from bench_core.workflows.stepfunctions import StepFunctionsStarter

    starter = StepFunctionsStarter(None, None, client=sfn.client, benchmark_arn=sfn.benchmark_arn)
    starter.start_benchmark("run-1")
    (started,) = executions(sfn, sfn.benchmark_arn)
    assert started["input"] == benchmark_start("run-1")
    assert re.fullmatch(r"benchmark-[0-9a-f]{24}-\d+", started["name"])
    broken = StepFunctionsStarter(None, None, client=sfn.client,
                                  benchmark_arn=sfn.benchmark_arn.replace("bench-benchmark", "missing"))
    with pytest.raises(Exception, match="(?i)does not exist|not found"):
        broken.start_benchmark("run-2")
    with pytest.raises(RuntimeError, match="BENCH_BENCHMARK_STATE_MACHINE_ARN"):
        StepFunctionsStarter(None, None, client=sfn.client).start_benchmark("r")


# ---- the Lambdas behind the Task states, on DynamoDB ------------------------------------------


def test_eval_and_cluster_lambdas_run_their_steps_on_dynamodb_with_only_granted_calls(
        transformed: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The functions' handlers (as Lambda loads them, with exactly the environment the
    translated template gives each) run against the moto table: the cluster function's steps
    as its state machine calls them, the eval function on the eval queue's delivery (moto's
    SQS); Bedrock answers as Bedrock does. Every AWS call they make is granted to their role,
    the judge is the model the template names, and the hourly sweep queues the runs a failed
    send left pending."""
    import botocore.client
    from bench_core.domain.models import AgentMeta, AgentRef, iso
    from bench_core.lambdas import workflow_steps as lambdas

    from tests.aws.lambda_runtime import (
        LambdaContext,
        bedrock_answer,
        fresh_function_module,
        sqs_event,
        stand_ins,
    )
    from tests.aws.moto_table import TABLE_NAME, dynamo_store
    from tests.aws.test_handlers import assert_granted
    from tests.factories import an_hour_ago as recent
    from tests.factories import clean, task_events

    calls: list[tuple[str, str, str, dict[str, Any]]] = []
    current = ["test setup"]
    make_call = botocore.client.BaseClient._make_api_call

    def recording(client: Any, operation: str, params: dict[str, Any]) -> Any:
        service = client.meta.service_model.service_name
        if service == "lambda":  # moto running the started execution, not the function
            return make_call(client, operation, params)
        calls.append((current[0], service, operation, params))
        if service == "bedrock-runtime":
            return bedrock_answer(operation, params)
        return make_call(client, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", recording)
    monkeypatch.setattr(lambdas, "_services", None)
    for name in [n for n in os.environ if n.startswith("BENCH_")]:
        monkeypatch.delenv(name)  # each function gets exactly what the template sets
    functions = {f.code_dir.name: f for f in cfn.functions(transformed).values()}
    with dynamo_store() as store:
        refs = stand_ins(transformed, TABLE_NAME)
        ref = AgentRef("alice", "agent-1")
        store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(
            task_events("ok") + task_events("f1", status="failed", output="TimeoutError")
            + task_events("f2", status="failed", output="HTTP 429 Too Many Requests")))
        an_hour_ago = iso(SYSTEM_CLOCK.now() - timedelta(hours=1))
        store.evals.mark_evals_pending(ref, ["ok", "f1", "f2"], an_hour_ago)

        def invoke(function: str, event: dict[str, Any]) -> Any:
            deployed = functions[function]
            current[0] = deployed.logical_id
            environment = cfn.environment(transformed, deployed.logical_id, refs)
            monkeypatch.setattr(lambdas, "_services", None)  # one execution environment each
            try:
                with mock.patch.dict(os.environ, environment):
                    handler = fresh_function_module(deployed.code_dir).handler
                    return handler(event, LambdaContext(remaining_ms=300_000))
            finally:
                current[0] = "test"

        def step(name: str, state: dict[str, Any]) -> dict[str, Any]:
            return invoke("cluster", {"step": name, "state": state})

        swept = step("sweep_evals", {})
        assert swept["swept"] == 3  # the runs queued together go back on the queue together
        assert invoke("eval", sqs_event(refs["EvalQueue"])) == {"batchItemFailures": []}
        judged = store.ingest.get_task(ref, "f1").eval
        model = cfn.environment(transformed, "EvalFunction", refs)["BENCH_BEDROCK_MODEL"]
        assert (judged.score, judged.judge) == (0.25, f"bedrock:{model}")
        assert all(store.ingest.get_task(ref, t).eval for t in ("ok", "f2"))
        assert store.evals.pending_evals("", iso(SYSTEM_CLOCK.now()), 10) == []
        assert step("due_agents", swept)["agents"] == [ref.path]
        assert step("cluster_agent", {"agent": ref.path})["clusters"] >= 1
        assert store.evals.get_insights(ref)["considered"] == 2
        session_run = task_events("s1", output="Lisbon is in Portugal.")
        session_run[0]["session_id"] = "chat-1"
        store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(recent(session_run)))
        assert step("judge_sessions", {})["sessions_judged"] == {"scored": 1}
        kept, _ = store.runs.session_runs(ref, "chat-1", limit=10)
        assert kept is not None and kept.eval is not None and kept.eval.judge == judged.judge
        assert store.evals.idle_sessions(iso(SYSTEM_CLOCK.now()), 10) == []
    sent = [(who, json.loads(p["MessageBody"])) for who, _, op, p in calls if op == "SendMessage"]
    assert [(who, m["task_ids"]) for who, m in sent] == [("ClusterFunction", ["f1", "f2", "ok"])]
    models = {p["modelId"] for _, service, op, p in calls if op == "Converse"}
    assert models == {model}
    assert_granted(transformed, calls, ("EvalFunction", "ClusterFunction"))


def test_a_failure_cluster_made_in_an_hourly_run_is_seen_by_that_runs_looks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real ClusterFunction on a clocked memory store: six hours of a new kind of failure
    (every run skipped by its judge budget, so each failure only marks the agent due), then
    one hourly execution clusters them and its looks open the alert about the cluster it
    made, not an hour later."""
    from bench_core.alerts.monitor import look
    from bench_core.clock import FixedClock
    from bench_core.clustering.workflow import cluster_agent
    from bench_core.domain.models import iso
    from bench_core.domain.monitors import Metric
    from bench_core.ingest.pipeline import accept
    from bench_core.lambdas import workflow_steps as lambdas
    from bench_core.store.memory.store import MemoryStore

    from tests.aws.lambda_runtime import LambdaContext, fresh_function_module
    from tests.contract.test_monitor_clusters import CHANGE_AT, CLUSTER_EVERY, failures_in
    from tests.contract.test_monitor_counters import REF, RUNS_PER_HOUR, T0

    clock = FixedClock(T0)
    services = Services(settings=Settings(data_dir=tmp_path), store=MemoryStore.open(clock=clock))
    store = services.store
    monkeypatch.setattr(lambdas, "_services", services)
    handler = fresh_function_module(cfn.REPO / "functions" / "cluster").handler

    def invoke(self: LambdaSimpleBackend, function_name: str, qualifier: str | None, body: Any,
               headers: Any, response_headers: dict[str, str]) -> str:
        return json.dumps(handler(json.loads(body), LambdaContext()))

    def send(hour: int) -> None:
        failures = failures_in(hour, hour >= CHANGE_AT)
        start = T0 + timedelta(hours=hour)
        clock.set(start + timedelta(minutes=59))
        events = [{**e, "ts": iso(start + timedelta(minutes=5 * i, seconds=j))}
                  for i in range(RUNS_PER_HOUR)
                  for j, e in enumerate(task_events(
                      f"h{hour}-r{i}", status="failed" if i < len(failures) else "success",
                      output=failures[i] if i < len(failures) else "done"))]
        accept(services, REF.login, AgentMeta(slug=REF.slug), clean(events),
               later=lambda *_: None)
        clock.set(start + timedelta(hours=1, minutes=2))

    def cluster_alerts() -> list[str]:
        return [a.cluster or "" for a in store.alerts.agent_alerts(REF)
                if a.metric is Metric.CLUSTER]

    store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), [])
    store.agents.update_agent(REF, {"judge_sample_rate": 0.0})
    for hour in range(CHANGE_AT + CLUSTER_EVERY - 1):  # clustered every six hours, looked hourly
        send(hour)
        if (hour + 1) % CLUSTER_EVERY == 0:
            cluster_agent(services, {"agent": REF.path})
        look(store, REF, iso(clock.now()))
    before = store.evals.get_insights(REF)
    assert before is not None and cluster_alerts() == []
    assert "jsondecodeerror" not in json.dumps(before["clusters"])
    assert store.evals.clusters_due(10) == [REF], "its new failures, skipped by the judge"

    send(CHANGE_AT + CLUSTER_EVERY - 1)
    for sfn in moto_sfn(invoke):
        run = sfn.run(sfn.cluster_arn, "cluster-hourly", {})
        assert run["status"] == "SUCCEEDED", run.get("error")
        assert [i["step"] for i in invocations(run)] == [
            "sweep_evals", "judge_sessions", "due_agents", "cluster_agent", "watch_active"]
        assert json.loads(run["output"])["looks"] == {"watched": 1}
    after = store.evals.get_insights(REF)
    assert after is not None
    (made,) = [c["id"] for c in after["clusters"] if "jsondecodeerror" in " ".join(c["terms"])]
    assert cluster_alerts() == [made], "the cluster the run made, seen by the same run's looks"
