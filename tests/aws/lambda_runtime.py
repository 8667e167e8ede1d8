"""Lambda, in-process: load a function as its runtime would, and call it with the events API
Gateway sends (HTTP API payload format 2.0, WebSocket), routed the way the template routes them.
"""

from __future__ import annotations

import base64
import gzip as gzip_module
import importlib.util
import json
import os
import sys
import time
import uuid
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

from tests.aws import cfn

API_ID = "a1b2c3d4e5"
ACCOUNT_ID = "123456789012"
REGION = "us-east-1"
HOST = f"{API_ID}.execute-api.{REGION}.amazonaws.com"


def _load(code_dir: Path, name: str) -> ModuleType:
    """Execute `code_dir/app.py` as a module of its own, with the function folder on the path
    the way Lambda puts /var/task there."""
    spec = importlib.util.spec_from_file_location(name, code_dir / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(code_dir))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(code_dir))
    return module


@cache
def load_function_module(code_dir: Path) -> ModuleType:
    """A function's module, loaded once (for reading its routes)."""
    return _load(code_dir, f"bench_function_{code_dir.name}")


def fresh_function_module(code_dir: Path) -> ModuleType:
    """A function's module in a new "execution environment": nothing cached from other tests."""
    return _load(code_dir, f"bench_function_{code_dir.name}_{uuid.uuid4().hex[:8]}")


@dataclass
class LambdaContext:
    """The fields of Lambda's context object that Powertools and Mangum read."""

    function_name: str = "bench-test-function"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 1024
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/bench/bench/functions"
    log_stream_name: str = "2026/12/02/[$LATEST]0123456789abcdef"
    remaining_ms: int = 15_000

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def _request_context(route_key: str, stage: str, **extra: Any) -> dict[str, Any]:
    now = time.time()
    return {"accountId": ACCOUNT_ID, "apiId": API_ID, "domainName": HOST,
            "domainPrefix": API_ID, "requestId": uuid.uuid4().hex[:16] + "=",
            "routeKey": route_key, "stage": stage,
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000), **extra}


def http_api_event(route: cfn.HttpRoute, method: str, path: str, *, body: bytes | None = None,
                   headers: dict[str, str] | None = None, query: str = "",
                   binary: bool = False) -> dict[str, Any]:
    """The event API Gateway's HTTP API sends a Lambda proxy integration (payload 2.0).

    `binary` sends the body base64-encoded, as API Gateway does for compressed or non-text
    bodies."""
    all_headers = {"host": HOST, "user-agent": "bench-tests/1.0", "accept": "*/*",
                   "x-amzn-trace-id": "Root=1-67a0b1c2-0123456789abcdef01234567",
                   "x-forwarded-for": "203.0.113.7", "x-forwarded-port": "443",
                   "x-forwarded-proto": "https"}
    if body is not None:
        all_headers["content-length"] = str(len(body))
    all_headers.update({k.lower(): v for k, v in (headers or {}).items()})
    route_key = f"{route.method} {route.path}"
    event: dict[str, Any] = {
        "version": "2.0", "routeKey": route_key, "rawPath": path, "rawQueryString": query,
        "headers": all_headers,
        "requestContext": _request_context(
            route_key, "$default",
            http={"method": method, "path": path, "protocol": "HTTP/1.1",
                  "sourceIp": "203.0.113.7", "userAgent": all_headers["user-agent"]}),
        "isBase64Encoded": False,
    }
    if query:
        params: dict[str, str] = {}
        for pair in query.split("&"):
            name, _, value = pair.partition("=")
            params[name] = f"{params[name]},{value}" if name in params else value
        event["queryStringParameters"] = params
    variables = _path_parameters(route.path, path)
    if variables:
        event["pathParameters"] = variables
    if body is not None:
        if binary:
            event["body"], event["isBase64Encoded"] = base64.b64encode(body).decode(), True
        else:
            event["body"] = body.decode()
    return event


def _path_parameters(template: str, path: str) -> dict[str, str]:
    names = template.strip("/").split("/")
    parts = path.strip("/").split("/")
    result = {}
    for i, name in enumerate(names):
        if name.startswith("{") and name.endswith("+}"):
            result[name[1:-2]] = "/".join(parts[i:])
            break
        if name.startswith("{"):
            result[name[1:-1]] = parts[i]
    return result


def websocket_event(route_key: str, *, body: str | None = None,
                    connection_id: str = "L0SM9cOFvHcCIhw=") -> dict[str, Any]:
    """The event API Gateway's WebSocket API sends for `$connect`, `$disconnect` or a message."""
    event_type = {"$connect": "CONNECT", "$disconnect": "DISCONNECT"}.get(route_key, "MESSAGE")
    context = _request_context(route_key, "prod", eventType=event_type,
                               connectionId=connection_id, connectedAt=int(time.time() * 1000),
                               messageDirection="IN", extendedRequestId=uuid.uuid4().hex[:16],
                               identity={"sourceIp": "203.0.113.7"})
    event: dict[str, Any] = {"requestContext": context, "isBase64Encoded": False}
    if route_key == "$connect":
        event["headers"] = {"Host": f"{API_ID}.execute-api.{REGION}.amazonaws.com",
                            "Sec-WebSocket-Version": "13"}
    if body is not None:
        event["body"] = body
    return event


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class DeployedHttpApi:
    """The HTTP API as the template deploys it: a request goes to the function its route names,
    each function loaded once (one warm execution environment per function)."""

    def __init__(self, transformed: dict[str, Any], refs: dict[str, str]) -> None:
        """`refs`: what stands in for the template's resources (`BenchTable` -> moto's table
        name, ...), to give each function the environment the template sets."""
        self.routes = cfn.http_routes(transformed)
        self.functions = cfn.functions(transformed)
        self.environments = {name: cfn.environment(transformed, name, refs)
                             for name in self.functions}
        self._modules: dict[str, ModuleType] = {}
        self.invocations: list[str] = []

    def module(self, function_id: str) -> ModuleType:
        if function_id not in self._modules:
            self._modules[function_id] = fresh_function_module(
                self.functions[function_id].code_dir)
        return self._modules[function_id]

    def request(self, method: str, path: str, *, json_body: Any = None, body: bytes | None = None,
                headers: dict[str, str] | None = None, query: str = "",
                gzip: bool = False) -> Reply:
        """Send one request through API Gateway's routing to the function behind it."""
        route = cfn.route_for(self.routes, method, path)
        if route is None:
            return Reply(404, {}, b'{"message":"Not Found"}')  # API Gateway's own answer
        headers = dict(headers or {})
        if json_body is not None:
            body = json.dumps(json_body).encode()
            headers.setdefault("content-type", "application/json")
        if gzip and body is not None:
            body = gzip_module.compress(body)
            headers["content-encoding"] = "gzip"
        # API Gateway base64-encodes a body that declares an encoding (compressed: binary).
        binary = any(name.lower() == "content-encoding" for name in headers)
        event = http_api_event(route, method, path, body=body, headers=headers, query=query,
                               binary=binary)
        self.invocations.append(route.function)
        with mock.patch.dict(os.environ, self.environments[route.function]):
            handler = self.module(route.function).handler
            result = handler(event, LambdaContext(route.function))
        raw = result.get("body", "")
        payload = base64.b64decode(raw) if result.get("isBase64Encoded") else raw.encode()
        return Reply(result["statusCode"], result.get("headers", {}), payload)


def stand_ins(transformed: dict[str, Any], table_name: str) -> dict[str, str]:
    """Values for the template's `Ref`s, made in moto (whose mock must be active): the table
    the test created, an empty state machine, an empty queue (its URL) and an empty bucket for
    each of the template's, pseudo parameters, and a placeholder name for any other resource."""
    import boto3

    refs = {name: f"{name.lower()}-stand-in" for name in transformed["Resources"]}
    refs.update({"AWS::Region": REGION, "AWS::AccountId": ACCOUNT_ID, "AWS::Partition": "aws",
                 "AWS::URLSuffix": "amazonaws.com", "AWS::StackName": "bench",
                 cfn.TABLE_RESOURCE: table_name})
    machines = cfn.resources_of_type(transformed, "AWS::StepFunctions::StateMachine")
    if machines:
        client = boto3.client("stepfunctions", region_name=REGION)
        definition = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}})
        for name in machines:
            refs[name] = client.create_state_machine(
                name=f"{name}-{uuid.uuid4().hex[:6]}", definition=definition,
                roleArn=f"arn:aws:iam::{ACCOUNT_ID}:role/{name}")["stateMachineArn"]
    sqs = boto3.client("sqs", region_name=REGION)
    for name in cfn.resources_of_type(transformed, "AWS::SQS::Queue"):
        refs[name] = sqs.create_queue(QueueName=f"{name}-{uuid.uuid4().hex[:6]}")["QueueUrl"]
    s3 = boto3.client("s3", region_name=REGION)
    for name in cfn.resources_of_type(transformed, "AWS::S3::Bucket"):
        refs[name] = f"{name.lower()}-{uuid.uuid4().hex[:6]}"
        s3.create_bucket(Bucket=refs[name])
    return refs


def sqs_event(queue_url: str, limit: int = 10) -> dict[str, Any]:
    """What Lambda's SQS event source hands a function: the messages waiting on the queue
    (moto's), with their receipts and the attributes it passes."""
    import boto3

    sqs = boto3.client("sqs", region_name=REGION)
    arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=limit,
                                   AttributeNames=["All"]).get("Messages", [])
    return {"Records": [{
        "messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
        "attributes": {k: m["Attributes"][k] for k in ("ApproximateReceiveCount", "SentTimestamp",
                                                      "ApproximateFirstReceiveTimestamp")},
        "messageAttributes": {}, "md5OfBody": m["MD5OfBody"], "eventSource": "aws:sqs",
        "eventSourceARN": arn, "awsRegion": REGION} for m in messages]}


def bedrock_answer(operation: str, params: dict[str, Any]) -> dict[str, Any]:
    """What Bedrock answers (moto has no Bedrock runtime), in its real response shapes: a judge
    verdict to Converse (a low score when the task failed), a Titan embedding (a fixed vector
    per text) to InvokeModel."""
    import hashlib
    import io

    from botocore.response import StreamingBody

    if operation == "Converse":
        asked = params["messages"][-1]["content"][0]["text"]
        score = 0.25 if "failed" in asked else 0.9
        text = json.dumps({"score": score, "reasoning": "Judged by what the run answered."})
        return {"output": {"message": {"role": "assistant", "content": [{"text": text}]}},
                "usage": {"inputTokens": 500, "outputTokens": 40}, "stopReason": "end_turn"}
    assert operation == "InvokeModel", operation
    text = json.loads(params["body"])["inputText"]
    seed = hashlib.sha256(text.split(":")[0].encode()).digest()
    vector = [seed[i % len(seed)] / 255 for i in range(json.loads(params["body"])["dimensions"])]
    body = json.dumps({"embedding": vector}).encode()
    return {"body": StreamingBody(io.BytesIO(body), len(body)), "contentType": "application/json"}
