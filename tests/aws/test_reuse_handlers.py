"""Authorized reuse as Lambda runs it: the capability card, grants and usage on ApiFunction,
calls on InvokeFunction, API Gateway's events, moto's DynamoDB; what their roles must grant;
and that no deployed function may call loopback."""

from __future__ import annotations

from typing import Any

import pytest
from bench_core.domain.models import AgentRef
from bench_core.settings import ReuseSettings

from tests.aws import cfn
from tests.aws.test_handlers import Deployment, assert_granted, new_login
from tests.aws.test_handlers import deployment as _deployment  # noqa: F401 - the fixture
from tests.factories import batch, task_events
from tests.http.reuse_support import card, start_agent_endpoint

TEST_ONLY = "BENCH_REUSE_ALLOW_LOOPBACK_FOR_TESTS"


@pytest.fixture
def site(request: pytest.FixtureRequest) -> Deployment:
    """The template's deployment on moto (tests/aws/test_handlers.py's `deployment`)."""
    return request.getfixturevalue("_deployment")


def test_no_deployed_function_may_call_loopback(transformed: dict[str, Any]) -> None:
    """The test-only setting is set on no function (nor in Globals), and the functions' own
    settings refuse loopback."""
    functions = cfn.resources_of_type(transformed, "AWS::Lambda::Function")
    assert "InvokeFunction" in functions
    for function_id, function in functions.items():
        environment = function["Properties"].get("Environment", {}).get("Variables", {})
        assert TEST_ONLY not in environment, function_id
        assert "BENCH_REUSE_PORTS" not in environment, f"{function_id}: only 443 is called"
    assert TEST_ONLY not in (cfn.REPO / "samconfig.toml").read_text()
    assert ReuseSettings().allow_loopback is False


def _owner_with_agent(site: Deployment, slug: str = "helper") -> tuple[str, str]:
    owner = new_login()
    key = site.create_key(owner)
    r = site.request("POST", "/ingest", headers={"X-Bench-Key": key},
                     json_body=batch(slug, task_events("t0")))
    assert r.status == 200, r.body
    return owner, key


def test_the_deployed_functions_refuse_a_loopback_endpoint(site: Deployment) -> None:
    owner, key = _owner_with_agent(site)
    r = site.request("PUT", f"/api/agents/{owner}/helper/capability",
                            headers={"X-Bench-Key": key}, json_body=card("http://127.0.0.1:9/x"))
    assert r.status == 422, r.body
    assert r.json()["error"] == ("invocation.url is refused: Bench calls endpoints on public "
                                 "addresses only")


def test_publish_grant_call_and_usage_through_the_deployed_functions(
        transformed: dict[str, Any], site: Deployment) -> None:
    for function_id in ("ApiFunction", "InvokeFunction"):  # this test's agent is on loopback
        site.api.environments[function_id][TEST_ONLY] = "1"
    endpoint, server = start_agent_endpoint()
    try:
        owner, owner_key = _owner_with_agent(site)
        caller = new_login()
        caller_key = site.create_key(caller)
        base = f"/api/agents/{owner}/helper"
        published = site.request("PUT", base + "/capability", headers={"X-Bench-Key": owner_key},
                                 json_body=card(endpoint.url + "/echo"))
        assert published.status == 200, published.body
        endpoint.secrets[f"{owner}/helper"] = published.json()["invocation_secret"]
        shown = site.request("GET", base + "/capability")
        assert shown.status == 200 and shown.json()["invocation"] == {"mode": "http"}
        denied = site.request("POST", base + "/invoke", headers={"X-Bench-Key": caller_key},
                              json_body={"input": {"q": 1}})
        assert denied.status == 403, denied.body
        granted = site.request("POST", base + "/grants", headers={"X-Bench-Key": owner_key},
                               json_body={"caller": caller, "calls_per_day": 1,
                                          "calls_per_minute": 5})
        assert granted.status == 201, granted.body
        answer = site.request("POST", base + "/invoke", headers={"X-Bench-Key": caller_key},
                              json_body={"input": {"q": 1}})
        assert answer.status == 200, answer.body
        assert answer.json()["output"] == {"caller": caller, "echo": {"q": 1}, "skill": None}
        over = site.request("POST", base + "/invoke", headers={"X-Bench-Key": caller_key},
                            json_body={"input": {"q": 2}})
        assert over.status == 429 and int(over.headers["retry-after"]) >= 1
        usage = site.request("GET", "/api/usage", headers={"X-Bench-Key": caller_key}).json()
        assert [u["call_id"] for u in usage["usage"]] == [answer.json()["call_id"]]
        task = site.request("GET", f"{base}/tasks/{answer.json()['call_id']}",
                            headers={"X-Bench-Key": owner_key}).json()  # content is the owner's
        assert (task["name"], task["status"]) == ("invoked", "success")
        assert task["metadata"]["invoked_by"] == caller
        revoked = site.request("DELETE", f"{base}/grants/{caller}",
                               headers={"X-Bench-Key": owner_key})
        assert revoked.status == 200, revoked.body
        assert site.store.reuse.get_invocation_grant(AgentRef(owner, "helper"), caller) is None
        assert site.request("GET", "/dashboard/agents/helper/reuse").status == 303
    finally:
        server.shutdown()
        server.server_close()
    assert {"ApiFunction", "InvokeFunction", "DashboardFunction"} <= set(site.api.invocations)
    assert any(who == "InvokeFunction" and op == "Query" and params.get("IndexName")
               for who, _, op, params in site.aws.calls), "each call is pushed to the live feed"
    assert_granted(transformed, site.aws.calls)
