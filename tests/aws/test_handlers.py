"""The Lambda handlers, invoked in-process with API Gateway's own event shapes, routed as the
template routes them, against moto's DynamoDB on the table the template declares."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import boto3
import botocore.client
import httpx
import pytest
from bench_core.clock import SYSTEM_CLOCK
from bench_core.domain.keys import new_key
from bench_core.store.dynamodb.store import DynamoStore

from tests.aws import cfn
from tests.aws.lambda_runtime import (
    HOST,
    DeployedHttpApi,
    Reply,
    bedrock_answer,
    stand_ins,
)
from tests.aws.moto_table import TABLE_NAME, dynamo_store
from tests.conftest import RunningServer
from tests.factories import batch, ev, task_events


def new_login() -> str:
    return "u" + uuid.uuid4().hex[:10]


@dataclass
class AwsCalls:
    """Every AWS API call, with the function whose invocation made it."""

    current: str = "test setup"
    calls: list[tuple[str, str, str, dict[str, Any]]] = field(default_factory=list)


@dataclass
class Deployment:
    api: DeployedHttpApi
    store: DynamoStore
    aws: AwsCalls
    refs: dict[str, str]

    def create_key(self, login: str, agent: str | None = None) -> str:
        raw, record = new_key(login, agent, now=SYSTEM_CLOCK.now())
        self.store.accounts.create_key(record)
        return raw

    def request(self, method: str, path: str, **kwargs: Any) -> Reply:
        route = cfn.route_for(self.api.routes, method, path)
        self.aws.current = route.function if route else "no function"
        try:
            return self.api.request(method, path, **kwargs)
        finally:
            self.aws.current = "test"


def _made_by_moto(frame: FrameType | None) -> bool:
    """Whether a call comes from moto's own machinery, not from a function: its Step Functions
    executions run on in threads of their own and call Lambda, past the test that started
    them and into whichever test is recording then."""
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("moto."):
            return True
        frame = frame.f_back
    return False


@pytest.fixture
def deployment(transformed: dict[str, Any], monkeypatch: pytest.MonkeyPatch
               ) -> Iterator[Deployment]:
    aws = AwsCalls()
    make_call = botocore.client.BaseClient._make_api_call

    def recording(client: Any, operation: str, params: dict[str, Any]) -> Any:
        service = client.meta.service_model.service_name
        if not _made_by_moto(sys._getframe(1)):
            aws.calls.append((aws.current, service, operation, params))
        if service == "bedrock-runtime":
            return bedrock_answer(operation, params)
        return make_call(client, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", recording)
    for name in [n for n in os.environ if n.startswith("BENCH_")]:
        monkeypatch.delenv(name)  # each function gets exactly what the template sets
    with dynamo_store() as store:
        refs = stand_ins(transformed, TABLE_NAME)
        yield Deployment(DeployedHttpApi(transformed, refs), store, aws, refs)


# ---- a batch in, the same numbers out -------------------------------------------------------------


def test_a_batch_posted_to_ingest_is_served_by_the_read_api(deployment: Deployment) -> None:
    login = new_login()
    key = deployment.create_key(login)
    events = task_events("t1", cost=0.004, duration_ms=412) + task_events(
        "t2", status="failed", output="boom", duration_ms=100)
    r = deployment.request("POST", "/ingest", headers={"X-Bench-Key": key},
                           json_body=batch("my-agent", events, display_name="My Agent"))
    assert r.status == 200, r.body
    assert r.json() == {"accepted": 5, "duplicates": 0, "agent": f"{login}/my-agent",
                        "url": f"https://{HOST}/u/{login}/my-agent"}
    profile = deployment.request("GET", f"/api/agents/{login}/my-agent")
    assert profile.status == 200, profile.body
    agent = profile.json()
    assert agent["display_name"] == "My Agent"
    assert (agent["runs"], agent["successes"], agent["failures"]) == (2, 1, 1)
    assert agent["cost_usd_total"] == 0.004
    assert sorted(t["task_id"] for t in agent["recent_tasks"]) == ["t1", "t2"]
    assert deployment.api.invocations == ["IngestFunction", "ApiFunction"]


def test_a_gzipped_base64_body_is_stored_once_however_often_it_is_sent(
        deployment: Deployment) -> None:
    login = new_login()
    key = deployment.create_key(login)
    body = batch("zipped", task_events("t1", cost=1.0))
    first = deployment.request("POST", "/ingest", headers={"X-Bench-Key": key}, json_body=body,
                               gzip=True)
    assert first.status == 200, first.body
    assert (first.json()["accepted"], first.json()["duplicates"]) == (3, 0)
    again = deployment.request("POST", "/ingest", headers={"X-Bench-Key": key}, json_body=body,
                               gzip=True)
    assert (again.json()["accepted"], again.json()["duplicates"]) == (0, 3)
    tasks = deployment.request("GET", f"/api/agents/{login}/zipped/tasks").json()
    assert [t["task_id"] for t in tasks["tasks"]] == ["t1"]
    assert deployment.request("GET", f"/api/agents/{login}/zipped").json()["runs"] == 1


def test_healthz_reaches_dynamodb(deployment: Deployment) -> None:
    r = deployment.request("GET", "/healthz")
    assert r.status == 200 and r.json()["store"] == "dynamodb"
    assert deployment.aws.calls, "a health check that does not touch the store proves little"


# ---- the same errors as one machine ---------------------------------------------------------------

VALID = {"kind": "custom", "ts": "2026-12-02T16:00:00Z"}
ERROR_CASES: dict[str, dict[str, Any]] = {
    "malformed JSON": {"body": b'{"agent_slug": "a", "events": [', "status": 400},
    "missing key": {"key": None, "json": batch("a", [ev("custom")]), "status": 401},
    "unknown key": {"key": "bk_" + "x" * 43, "json": batch("a", [ev("custom")]), "status": 401},
    "bad field": {"json": batch("a", [{"id": "e1", "kind": "custom", "ts": "yesterday"}]),
                  "status": 422},
    "bad slug": {"json": batch("no spaces allowed", [{"id": "e1", **VALID}]), "status": 422},
    "too big": {"body": b"[" + b" " * (5 * 1024 * 1024) + b"]", "status": 413},
    "too many events": {"json": batch("a", [{"id": f"e{i}", **VALID} for i in range(1001)]),
                        "status": 413},
    "bad gzip": {"body": b"not gzip at all", "headers": {"Content-Encoding": "gzip"},
                 "status": 400},
    "agent key for another agent": {"agent_key": "other", "json": batch("a", [ev("custom")]),
                                    "status": 403},
}


def _send_local(server: RunningServer, case: dict[str, Any], key: str | None) -> tuple[int, Any]:
    body = case.get("body") or json.dumps(case.get("json")).encode()
    headers = {"Content-Type": "application/json", **case.get("headers", {})}
    if key is not None:
        headers["X-Bench-Key"] = key
    r = httpx.post(server.url + "/ingest", content=body, headers=headers, timeout=60)
    return r.status_code, r.json()


def _send_lambda(deployment: Deployment, case: dict[str, Any], key: str | None
                 ) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json", **case.get("headers", {})}
    if key is not None:
        headers["X-Bench-Key"] = key
    r = deployment.request("POST", "/ingest", body=case.get("body"), json_body=case.get("json"),
                           headers=headers)
    return r.status, r.json()


def _key_for(case: dict[str, Any], login: str, make_key: Any) -> str | None:
    if "key" in case:
        return case["key"]
    if "agent_key" in case:
        return make_key(login, case["agent_key"])
    return make_key(login, None)


@pytest.mark.parametrize("name", list(ERROR_CASES))
def test_bad_input_gets_the_same_error_on_lambda_as_on_one_machine(
        name: str, deployment: Deployment, bench_server: RunningServer) -> None:
    case = ERROR_CASES[name]
    login = new_login()
    local = _send_local(bench_server, case,
                        _key_for(case, login, lambda lg, a: bench_server.create_key(lg, a)))
    on_lambda = _send_lambda(deployment, case, _key_for(case, login, deployment.create_key))
    assert local[0] == case["status"], local
    assert on_lambda == local
    assert set(on_lambda[1]) == {"error", "detail"}


def test_read_api_errors_match_one_machine(deployment: Deployment,
                                           bench_server: RunningServer) -> None:
    for path in ("/api/agents/nobody/nothing", "/api/agents/nobody/nothing/tasks?status=odd",
                 "/api/nowhere"):
        local = httpx.get(bench_server.url + path, timeout=10)
        plain, _, query = path.partition("?")
        on_lambda = deployment.request("GET", plain, query=query)
        assert (on_lambda.status, on_lambda.json()) == (local.status_code, local.json()), path


# ---- metrics -------------------------------------------------------------------------------------


def _emf_metrics(stdout: str) -> list[dict[str, Any]]:
    """The CloudWatch EMF documents among the function's stdout lines (logs are JSON too)."""
    documents = []
    for line in stdout.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            documents.append(json.loads(line))
    return documents


def _metric(document: dict[str, Any], name: str) -> float:
    """One metric's value (Powertools writes a list only when a name got several values)."""
    value = document[name]
    return sum(value) if isinstance(value, list) else value


def test_in_lambda_ingest_emits_events_ingested_and_batches_rejected(
        transformed: dict[str, Any], deployment: Deployment, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "bench-IngestFunction")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")  # no X-Ray daemon here
    api = DeployedHttpApi(transformed, deployment.refs)  # modules loaded as in Lambda
    key = deployment.create_key(new_login())
    capsys.readouterr()
    ok = api.request("POST", "/ingest", headers={"X-Bench-Key": key},
                     json_body=batch("m", task_events("t1")))
    assert ok.status == 200
    (ingested,) = _emf_metrics(capsys.readouterr().out)
    assert _metric(ingested, "EventsIngested") == 2  # task.start and task.end
    assert ingested["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "Bench"
    stage = cfn.load_template()["Parameters"]["Stage"]["Default"]  # via the template's env
    assert (ingested["service"], ingested["stage"]) == ("bench", stage)
    for headers, body in (({"X-Bench-Key": key}, b"{"), ({}, b"{}")):
        assert api.request("POST", "/ingest", headers=headers, body=body).status in (400, 401)
        (rejected,) = _emf_metrics(capsys.readouterr().out)
        assert _metric(rejected, "BatchesRejected") == 1
        assert "EventsIngested" not in rejected


def test_outside_lambda_handlers_print_no_metrics(deployment: Deployment,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    key = deployment.create_key(new_login())
    capsys.readouterr()
    for _ in range(3):
        deployment.request("POST", "/ingest", headers={"X-Bench-Key": key},
                           json_body=batch("m", task_events(uuid.uuid4().hex[:8])))
        deployment.request("POST", "/ingest", body=b"{")
    assert _emf_metrics(capsys.readouterr().out) == []


# ---- permissions, proven by use ------------------------------------------------------------------

_TRANSACTION_ACTIONS = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
                        "ConditionCheck": "ConditionCheckItem"}
# IAM actions of the other AWS calls Bench's adapters make (service, operation) -> action; a call
# missing here fails the test below, so whoever adds one also adds its grant.
_IAM_ACTIONS = {
    ("stepfunctions", "StartExecution"): "states:StartExecution",
    ("apigatewaymanagementapi", "PostToConnection"): "execute-api:ManageConnections",
    ("apigatewaymanagementapi", "DeleteConnection"): "execute-api:ManageConnections",
    ("bedrock-runtime", "Converse"): "bedrock:InvokeModel",
    ("bedrock-runtime", "InvokeModel"): "bedrock:InvokeModel",
    ("ssm", "GetParameter"): "ssm:GetParameter",
    ("ssm", "PutParameter"): "ssm:PutParameter",
    ("secretsmanager", "GetSecretValue"): "secretsmanager:GetSecretValue",
    ("lambda", "Invoke"): "lambda:InvokeFunction",
    ("sqs", "SendMessage"): "sqs:SendMessage",
    ("sqs", "ChangeMessageVisibility"): "sqs:ChangeMessageVisibility",
    ("s3", "CreateMultipartUpload"): "s3:PutObject",
    ("s3", "UploadPart"): "s3:PutObject",
    ("s3", "CompleteMultipartUpload"): "s3:PutObject",
    ("s3", "AbortMultipartUpload"): "s3:AbortMultipartUpload",
}


def _needed(service: str, operation: str, params: dict[str, Any]) -> set[tuple[str, bool]]:
    """The IAM actions an AWS call needs, each with whether it reads a DynamoDB index."""
    if service != "dynamodb":
        action = _IAM_ACTIONS.get((service, operation))
        assert action is not None, f"unknown IAM action for {service} {operation}: add it"
        return {(action, False)}
    if operation == "TransactWriteItems":
        return {("dynamodb:" + _TRANSACTION_ACTIONS[kind], False)
                for item in params["TransactItems"] for kind in item}
    if operation == "TransactGetItems":
        return {("dynamodb:GetItem", False)}
    return {("dynamodb:" + operation, "IndexName" in params)}


def _granted(transformed: dict[str, Any], function_id: str) -> set[tuple[str, bool]]:
    """(action, on an index) pairs the function's role allows; other services' actions count
    whatever their resource (the template test checks those resources are narrow)."""
    role = cfn.functions(transformed)[function_id].role
    granted = set()
    for statement in cfn.role_statements(transformed, role):
        resources = cfn.as_list(statement["Resource"])
        for action in cfn.as_list(statement["Action"]):
            if not action.startswith("dynamodb:"):
                granted.add((action, False))
            if {"Fn::GetAtt": [cfn.TABLE_RESOURCE, "Arn"]} in resources:
                granted.add((action, False))
            if {"Fn::Sub": "${" + cfn.TABLE_RESOURCE + ".Arn}/index/*"} in resources:
                granted.add((action, True))
    return granted


def assert_granted(transformed: dict[str, Any], calls: list[tuple[str, str, str, dict[str, Any]]],
                   function_ids: Iterable[str] | None = None) -> set[str]:
    """Every AWS call in `calls` (as `AwsCalls` records them) that one of `function_ids` made
    (default: every function that made one) is granted to that function's role, and each of
    them made one: a missing grant would be an AccessDenied in production. The functions that
    made calls."""
    made = {call[0] for call in calls} - {"test setup", "test"}
    checked = made if function_ids is None else set(function_ids)
    assert checked <= made, f"made no AWS call: {sorted(checked - made)}"
    for function_id in checked:
        granted = _granted(transformed, function_id)
        for who, service, operation, params in calls:
            if who == function_id:
                missing = _needed(service, operation, params) - granted
                assert not missing, f"{function_id} calls {operation} without {missing}"
    return made


def test_every_aws_call_a_function_makes_is_granted_to_its_role(
        transformed: dict[str, Any], deployment: Deployment) -> None:
    """The adapters' real AWS calls, made through the handlers, checked against the template's
    IAM statements: a missing grant would be an AccessDenied in production."""
    login = new_login()
    key = deployment.create_key(login)
    agent_key = deployment.create_key(login, "tour")
    body = batch("tour", task_events("t1", cost=0.5) + task_events("t2", parent="t1"))
    for sender in (key, agent_key, key):  # new, then duplicates, via both kinds of key
        assert deployment.request("POST", "/ingest", headers={"X-Bench-Key": sender},
                                  json_body=body).status == 200
    base = f"/api/agents/{login}/tour"
    for path, query in ((base, ""), (base + "/tasks", ""), (base + "/tasks", "status=success"),
                        (base + "/tasks", "parent=t1"), (base + "/tasks/t1", ""),
                        (base + "/events", ""), ("/healthz", "")):
        r = deployment.request("GET", path, query=query, headers={"X-Bench-Key": key})
        assert r.status == 200, (path, r.body)
    patched = deployment.request("PATCH", base, json_body={"hide_inputs": True},
                                 headers={"X-Bench-Key": key})
    assert patched.status == 200, patched.body
    assert assert_granted(transformed, deployment.aws.calls) == {"IngestFunction", "ApiFunction"}



def test_what_moto_calls_on_its_own_is_no_functions_call(deployment: Deployment) -> None:
    """An execution a former test started calls Lambda from moto's thread while a function
    serves this test's request: not that function's call, so no grant is asked of it."""
    emulator = {"__name__": "moto.stepfunctions.backend", "boto3": boto3}
    exec("def invoke():\n    boto3.client('lambda').list_functions()", emulator)
    deployment.aws.current = "WebFunction"
    thread = threading.Thread(target=emulator["invoke"])
    thread.start()
    thread.join()
    assert deployment.request("GET", "/healthz").status == 200
    services = {service for who, service, _, _ in deployment.aws.calls if who != "test setup"}
    assert services == {"dynamodb"}


# ---- X-Ray, as in Lambda -------------------------------------------------------------------------

TRACED_INGEST = """
import json, os, socket
daemon = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # a stand-in X-Ray daemon
daemon.bind(("127.0.0.1", 0))
daemon.settimeout(0.5)
os.environ["AWS_XRAY_DAEMON_ADDRESS"] = "127.0.0.1:%d" % daemon.getsockname()[1]

from tests.aws import cfn
from tests.aws.lambda_runtime import DeployedHttpApi
from tests.aws.lambda_runtime import stand_ins
from tests.aws.moto_table import TABLE_NAME, dynamo_store
from tests.factories import batch, task_events
from bench_core.domain.keys import new_key

with dynamo_store() as store:
    transformed = cfn.transform()
    api = DeployedHttpApi(transformed, stand_ins(transformed, TABLE_NAME))
    raw, record = new_key("traced", now=store.clock.now())
    store.accounts.create_key(record)
    reply = api.request("POST", "/ingest", headers={"X-Bench-Key": raw},
                        json_body=batch("t", task_events("t1")))
names = []
try:
    while True:
        header, _, document = daemon.recv(65536).decode().partition("\\n")
        names.append(json.loads(document)["name"])
except socket.timeout:
    pass
print(json.dumps({"status": reply.status, "body": reply.json(), "segments": names}))
"""


def test_with_the_tracer_built_as_in_lambda_the_handler_and_its_dynamodb_calls_are_traced(
        ) -> None:
    """In its own process, since the X-Ray SDK patches botocore for good once loaded; the
    segments are read from a stand-in X-Ray daemon (a UDP socket)."""
    pytest.importorskip("aws_xray_sdk", reason="aws-xray-sdk (Powertools' tracer extra) is "
                                               "not installed here")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "POWERTOOLS_"))}
    env.update(AWS_LAMBDA_FUNCTION_NAME="bench-IngestFunction", LAMBDA_TASK_ROOT=str(cfn.REPO),
               _X_AMZN_TRACE_ID="Root=1-67a0b1c2-0123456789abcdef01234567;"
                                "Parent=53995c3f42cd8ad8;Sampled=1",
               AWS_DEFAULT_REGION="us-east-1", PYTHONPATH=str(cfn.REPO))
    done = subprocess.run([sys.executable, "-c", TRACED_INGEST], env=env, cwd=cfn.REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] == 200 and result["body"]["accepted"] == 2, result
    assert "dynamodb" in result["segments"], result["segments"]
    assert "## handler" in result["segments"], result["segments"]
