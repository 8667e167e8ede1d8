"""No manual secret step: the stack's `Custom::SessionSecret` resource, run as CloudFormation
runs it (its handler loaded as Lambda loads it, with the template's environment and the
resource's own properties, answering at a real `ResponseURL` on 127.0.0.1), creates the SSM
SecureString the functions read, never replaces one, keeps it on delete, and always answers."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from unittest import mock

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from bench_core.clock import SYSTEM_CLOCK
from bench_core.domain.models import Agent, iso

from tests.aws import cfn
from tests.aws.lambda_runtime import LambdaContext, fresh_function_module
from tests.aws.test_handlers import Deployment, assert_granted, new_login
from tests.aws.test_handlers import deployment as _deployment  # noqa: F401 - the fixture


class CloudFormation:
    """Where the custom resource answers: each PUT body, as CloudFormation would receive it."""

    def __init__(self) -> None:
        answers: list[dict[str, Any]] = []
        headers: list[dict[str, str]] = []

        class Receiver(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers["Content-Length"])
                answers.append(json.loads(self.rfile.read(length)))
                headers.append(dict(self.headers))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.answers, self.headers = answers, headers
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        self.url = f"http://127.0.0.1:{self.server.server_port}/response?X-Amz-Signature=x"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def request(self, request_type: str, properties: dict[str, Any]) -> dict[str, Any]:
        return {"RequestType": request_type, "ResponseURL": self.url,
                "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/bench/1",
                "RequestId": f"req-{len(self.answers)}", "ResourceType": "Custom::SessionSecret",
                "LogicalResourceId": "SessionSecret", "ResourceProperties": properties,
                **({"PhysicalResourceId": properties.get("ParameterName")}
                   if request_type != "Create" else {})}


@pytest.fixture
def stack(transformed: dict[str, Any], request: pytest.FixtureRequest) -> Iterator[Any]:
    site: Deployment = request.getfixturevalue("_deployment")
    cloudformation = CloudFormation()
    parameters.clear_caches()
    function = cfn.functions(transformed)["SessionSecretFunction"]
    resource = transformed["Resources"]["SessionSecret"]
    properties = {k: cfn.resolve(v, transformed, site.refs)
                  for k, v in resource["Properties"].items() if k != "ServiceToken"}
    environment = cfn.environment(transformed, "SessionSecretFunction", site.refs)

    def deploy(request_type: str, **overrides: Any) -> dict[str, Any]:
        site.aws.current = "SessionSecretFunction"
        try:
            with mock.patch.dict(os.environ, environment):
                handler = fresh_function_module(function.code_dir).handler
                handler(cloudformation.request(request_type, {**properties, **overrides}),
                        LambdaContext("SessionSecretFunction"))
        finally:
            site.aws.current = "test"
        return cloudformation.answers[-1]

    yield site, deploy, properties["ParameterName"], cloudformation
    cloudformation.server.shutdown()


def stored(name: str) -> dict[str, Any]:
    return boto3.client("ssm").get_parameter(Name=name, WithDecryption=True)["Parameter"]


def test_a_fresh_stack_creates_the_secret_and_live_tokens_work_without_any_manual_step(
        stack: Any, transformed: dict[str, Any]) -> None:
    site, deploy, name, cloudformation = stack
    owner = new_login()
    site.store.agents.create_agent(Agent(login=owner, slug="watched", created_at=iso(SYSTEM_CLOCK.now())))
    token = {"query": f"channel={owner}/watched"}
    assert site.request("GET", "/live-token", **token).status == 503  # no secret yet
    answer = deploy("Create")
    assert answer["Status"] == "SUCCESS", answer.get("Reason")
    assert answer["PhysicalResourceId"] == name and answer["Data"] == {"Created": "true"}
    parameter = stored(name)
    assert parameter["Type"] == "SecureString" and len(parameter["Value"]) >= 32
    assert parameter["Value"] not in json.dumps(cloudformation.answers), "the value stays secret"
    assert cloudformation.headers[-1].get("Content-Type", "") == ""  # as the URL was signed
    parameters.clear_caches()
    answer = site.request("GET", "/live-token", **token)
    assert answer.status == 200, answer.body
    assert "token=" in answer.json()["url"]
    assert_granted(transformed, site.aws.calls, ("SessionSecretFunction",))


def test_an_existing_secret_is_never_replaced_and_a_delete_keeps_it(stack: Any) -> None:
    site, deploy, name, _ = stack
    boto3.client("ssm").put_parameter(Name=name, Value="set-by-hand-" + "x" * 40,
                                      Type="SecureString")
    assert deploy("Create")["Data"] == {"Created": "false"}
    assert deploy("Update")["Status"] == "SUCCESS"
    assert deploy("Delete")["Status"] == "SUCCESS"
    assert stored(name)["Value"] == "set-by-hand-" + "x" * 40


def test_a_failure_is_answered_as_failed_with_its_reason_never_left_hanging(stack: Any) -> None:
    _, deploy, _, _ = stack
    answer = deploy("Create", ParameterName="no-leading-slash")
    assert answer["Status"] == "FAILED" and "ParameterName" in answer["Reason"]


def test_the_resource_is_kept_and_readers_are_granted_the_parameter_it_writes(
        transformed: dict[str, Any]) -> None:
    template = cfn.load_template()
    resource = template["Resources"]["SessionSecret"]
    assert resource["DeletionPolicy"] == "Retain"
    assert resource["Properties"]["ParameterName"] == {"Ref": "SessionSecretParameter"}
    refs = {"AWS::Region": "us-east-1", "AWS::AccountId": "123456789012",
            "AWS::Partition": "aws"}
    (written,) = [cfn.resolve(st["Resource"], transformed, refs)
                  for st in cfn.role_statements(transformed, "SessionSecretRole")
                  if st.get("Sid") == "CreateSessionSecret"]
    for function_id in ("LiveFunction", "DashboardFunction", "WebFunction", "ApiFunction"):
        role = cfn.functions(transformed)[function_id].role
        read = [cfn.resolve(r, transformed, refs) for st in cfn.role_statements(transformed, role)
                if "ssm:GetParameter" in cfn.as_list(st["Action"])
                for r in cfn.as_list(st["Resource"])]
        assert written in read, function_id
