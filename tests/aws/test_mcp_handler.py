"""McpFunction as Lambda runs it: API Gateway's events (payload 2.0) through Mangum, the
template's route and environment, moto's DynamoDB. One warm execution environment serves
invocation after invocation; API Gateway's Host is accepted; a GET is 405 at once."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.aws.lambda_runtime import HOST, Reply
from tests.aws.test_handlers import Deployment, assert_granted, new_login
from tests.aws.test_handlers import deployment as _deployment  # noqa: F401 - the fixture
from tests.factories import batch, day_old, task_events

PROTOCOL = "2025-11-25"
HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": PROTOCOL}


@pytest.fixture
def site(request: pytest.FixtureRequest) -> Deployment:
    """The template's deployment on moto (tests/aws/test_handlers.py's `deployment`)."""
    return request.getfixturevalue("_deployment")


def rpc(site: Deployment, method: str, params: dict[str, Any], request_id: int = 1,
        **headers: str) -> Reply:
    return site.request("POST", "/mcp", headers={**HEADERS, **headers}, json_body={
        "jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


def call_tool(site: Deployment, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    reply = rpc(site, "tools/call", {"name": name, "arguments": arguments})
    assert reply.status == 200, reply.body
    assert reply.headers["content-type"].startswith("application/json")
    return reply.json()["result"]


def seed(site: Deployment, slug: str, tag: str) -> tuple[str, str]:
    """An agent made two days ago (so its runs rank it) with 12 runs."""
    login = new_login()
    key = site.create_key(login)
    site.store.agents.create_agent(day_old(login, slug))
    events = [e for i in range(12) for e in task_events(
        f"t{i}", status="failed" if i < 2 else "success", duration_ms=100 + i, cost=0.01,
        output=f"secret-{i}")]
    r = site.request("POST", "/ingest", headers={"X-Bench-Key": key},
                     json_body=batch(slug, events, framework=tag))
    assert r.status == 200, r.body
    return login, key


def test_warm_invocations_one_after_another_are_all_served(site: Deployment) -> None:
    """Mangum runs without the lifespan and the transport is made per request, so the second
    and later invocations of one execution environment work like the first."""
    tag = "lambda" + new_login()
    login, _ = seed(site, "warm", tag)
    hello = rpc(site, "initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                     "clientInfo": {"name": "tests", "version": "1"}})
    assert hello.status == 200, hello.body
    assert hello.json()["result"]["serverInfo"]["name"] == "bench"
    listed = rpc(site, "tools/list", {}, request_id=2)
    assert {t["name"] for t in listed.json()["result"]["tools"]} == {
        "search_agents", "get_agent", "list_benchmarks"}
    found = call_tool(site, "search_agents", {"query": tag})
    assert not found.get("isError"), found
    assert [a["login"] for a in found["structuredContent"]["agents"]] == [login]
    report = call_tool(site, "get_agent", {"login": login, "slug": "warm"})
    assert report["structuredContent"]["owner_telemetry"]["runs"] == 12
    assert "secret-" not in json.dumps(report)
    # four invocations of one loaded module: a cold start, then three warm ones
    assert site.api.invocations == ["IngestFunction"] + ["McpFunction"] * 4


def test_tool_errors_not_http_errors_for_private_agents_and_bad_arguments(
        site: Deployment) -> None:
    login, key = seed(site, "hidden", "private-on-lambda")
    patched = site.request("PATCH", f"/api/agents/{login}/hidden",
                           json_body={"visibility": "private"}, headers={"X-Bench-Key": key})
    assert patched.status == 200, patched.body
    private = call_tool(site, "get_agent", {"login": login, "slug": "hidden"})
    unknown = call_tool(site, "get_agent", {"login": login, "slug": "other"})
    assert private["isError"] and private["content"] == unknown["content"]
    assert "agent not found" in private["content"][0]["text"]
    assert call_tool(site, "search_agents", {"query": "private-on-lambda"})[
        "structuredContent"]["agents"] == []
    bad = call_tool(site, "search_agents", {"limit": 1000})
    assert bad["isError"] and "limit" in bad["content"][0]["text"]


def test_the_api_gateway_host_is_accepted_and_a_foreign_one_refused(site: Deployment) -> None:
    """API Gateway routes by Host and names the domain in `requestContext.domainName`: that
    Host is served; a request carrying another (a rebinding page's) is refused with 421."""
    ok = rpc(site, "tools/list", {})
    assert ok.status == 200, ok.body
    assert rpc(site, "tools/list", {}, host="attacker.example").status == 421
    assert rpc(site, "tools/list", {}, origin="https://attacker.example").status == 403
    assert rpc(site, "tools/list", {}, origin=f"https://{HOST}").status == 200


def test_get_is_405_at_once_instead_of_an_event_stream(site: Deployment) -> None:
    for method in ("GET", "DELETE"):
        reply = site.request(method, "/mcp", headers={"accept": "text/event-stream"})
        assert reply.status == 405, (method, reply.body)
        assert reply.headers["allow"] == "POST"
        assert "POST" in reply.json()["error"]
    assert set(site.api.invocations) == {"McpFunction"}


def submit_benchmark_run(site: Deployment, key: str, slug: str) -> None:
    """A run of every case, stored through the benchmark feature's own code on moto's table."""
    from bench_core.benchmarks.runs import RunIn, submit_run
    from bench_core.benchmarks.suites import load_suite, value_hash
    from bench_core.benchmarks.workflow import run_grading
    from bench_core.domain.keys import hash_key
    from bench_core.runtime.adapters import Services
    from bench_core.settings import Settings

    packaged = load_suite("grounded-research-v1")
    attempts = [{"case_id": c.id, "repeat": 0, "status": "ok", "output": "see [S1]",
                 "output_hash": value_hash("see [S1]"), "duration_ms": 900.0}
                for c in packaged.suite.cases]
    record = site.store.accounts.key_by_hash(hash_key(key))
    assert record is not None
    services = Services(Settings(), site.store)
    started: list[str] = []

    class Grading:  # the workflows port, recording the start; the steps run below, in order
        def start_benchmark(self, run_id: str) -> None:
            started.append(run_id)

    services.provide(workflows=Grading())
    submit_run(services, record, "grounded-research-v1", RunIn(
        agent_slug=slug, suite_hash=packaged.content_hash, repeats=1, attempts=attempts))
    (run_id,) = started
    assert run_grading(services, run_id)["next"] == "done"


def test_every_call_the_mcp_function_makes_is_granted_to_its_role(
        transformed: dict[str, Any], site: Deployment) -> None:
    login, key = seed(site, "granted", "granted-on-lambda")
    submit_benchmark_run(site, key, "granted")
    report = call_tool(site, "get_agent", {"login": login, "slug": "granted"})
    assert len(report["structuredContent"]["benchmark_evidence"]["results"]) == 1
    registry = call_tool(site, "list_benchmarks", {"suite": "grounded-research-v1"})
    (suite,) = registry["structuredContent"]["suites"]
    assert [r["login"] for r in suite["versions"][0]["top"]] == [login]
    for sort in ("runs", "success", "score", "cost", "latency"):
        assert not call_tool(site, "search_agents", {"sort": sort, "query": "granted"}).get(
            "isError")
    assert not call_tool(site, "get_agent", {"login": login, "slug": "granted"}).get("isError")
    assert not call_tool(site, "list_benchmarks", {}).get("isError")
    assert_granted(transformed, site.aws.calls, ["McpFunction"])
    calls = [c for c in site.aws.calls if c[0] == "McpFunction"]
    assert {op for _, _, op, _ in calls} <= {"GetItem", "BatchGetItem", "Query"}, "read-only"
