"""The MCP server on the real local server, through the official MCP client (Streamable HTTP):
the handshake and the handshake-free protocol, the tools' schemas, each tool on agents sent
through POST /ingest, invalid arguments as tool errors, and privacy (private agents and hidden
fields never appear)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
import pytest
from bench_core.alerts.monitor import watch_versions
from bench_core.domain.alerts import AlertSettings
from bench_core.domain.models import AgentRef
from mcp import Client
from mcp.types import CallToolResult

from tests.benchmark_support import graded_run
from tests.conftest import RunningServer
from tests.http.alerts_support import hold_looks, quiet_monitors
from tests.http.surfaces_data import Seeded, seed_agent, set_agent

T = TypeVar("T")


def with_client(server: RunningServer, use: Callable[[Client], Awaitable[T]],
                mode: str = "legacy") -> T:
    """`use` an MCP client connected to the server's /mcp (`legacy`: with the initialize
    handshake; `auto`: the 2026-07-28 protocol, no handshake, as the SDK negotiates it)."""
    async def run() -> T:
        async with Client(server.url + "/mcp", mode=mode) as client:
            return await use(client)
    return asyncio.run(run())


def call(server: RunningServer, tool: str, arguments: dict[str, Any],
         mode: str = "legacy") -> CallToolResult:
    return with_client(server, lambda c: c.call_tool(tool, arguments), mode)


def error_text(result: CallToolResult) -> str:
    assert result.is_error, result
    return " ".join(getattr(c, "text", "") for c in result.content)


@pytest.fixture(scope="module")
def tag() -> str:
    """A word only this module's agents carry (framework), so searches see only them."""
    return "mcp" + uuid.uuid4().hex[:8]


CARD = {"capability": {"description": "Answers research questions with cited sources.",
                       "skills": [{"id": "research", "name": "Research"}]},
        "invocation": {"mode": "disabled"}}


@pytest.fixture(scope="module")
def shown(bench_server: RunningServer, tag: str) -> Seeded:
    agent = seed_agent(bench_server, runs=12, failures=3, display_name="Shown Agent",
                       framework=tag, duration_ms=300, cost=0.004)
    published = httpx.put(f"{bench_server.url}/api/agents/{agent.path}/capability", json=CARD,
                          headers={"X-Bench-Key": agent.key}, timeout=10)
    assert published.status_code == 200, published.text
    return agent


@pytest.fixture(scope="module")
def hidden_private(bench_server: RunningServer, tag: str) -> Seeded:
    agent = seed_agent(bench_server, runs=14, failures=0, display_name="Private Agent",
                       framework=tag, slug="private-one")
    set_agent(bench_server, agent, visibility="private")
    return agent


@pytest.fixture(scope="module")
def secretive(bench_server: RunningServer, tag: str) -> Seeded:
    """Public, but hiding inputs and outputs; its failure clusters were labelled from them."""
    agent = seed_agent(bench_server, runs=10, failures=4, display_name="Secretive Agent",
                       framework=tag, slug="secretive")
    set_agent(bench_server, agent, hide_inputs=True, hide_outputs=True)
    bench_server.store.evals.save_insights(bench_server.store.agents.get_agent(_ref(agent)).ref, {
        "computed_at": "2026-12-03T12:00:00.000Z", "considered": 4, "clusters": [
            {"label": "leaks secret-output-9 when asked", "describer": "heuristic",
             "terms": ["secret-output-9"], "count": 4, "share": 1.0,
             "example_task_ids": ["t9"]}]})
    return agent


def _ref(agent: Seeded) -> Any:
    from bench_core.domain.models import AgentRef

    return AgentRef(agent.login, agent.slug)


# ---- the handshake and the tools' schemas --------------------------------------------------------


def test_initialize_then_list_the_three_read_only_tools_with_their_schemas(
        bench_server: RunningServer) -> None:
    async def use(client: Client) -> tuple[Any, ...]:
        return (client.protocol_version, client.server_info, client.instructions,
                await client.list_tools())

    version, info, instructions, listed = with_client(bench_server, use)
    assert version == "2025-11-25" and info is not None and info.name == "bench"
    assert instructions and "owner telemetry" in instructions
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == {"search_agents", "get_agent", "list_benchmarks"}
    for tool in tools.values():
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
        assert tool.output_schema is not None, tool.name
    search = tools["search_agents"].input_schema["properties"]
    assert search["sort"]["enum"] == ["runs", "success", "score", "cost", "latency"]
    assert (search["limit"]["minimum"], search["limit"]["maximum"]) == (1, 50)
    assert search["query"]["maxLength"] == 100
    get = tools["get_agent"].input_schema
    assert set(get["required"]) == {"login", "slug"}
    assert "pattern" in get["properties"]["login"]
    top = tools["list_benchmarks"].input_schema["properties"]["top"]
    assert (top["minimum"], top["maximum"], top["default"]) == (1, 20, 5)
    report = tools["get_agent"].output_schema["properties"]
    assert {"agent", "owner_telemetry", "benchmark_evidence", "capability"} <= set(report)


def test_the_handshake_free_protocol_serves_the_same_answers(
        bench_server: RunningServer, shown: Seeded) -> None:
    async def use(client: Client) -> tuple[str, CallToolResult]:
        result = await client.call_tool("get_agent", {"login": shown.login, "slug": shown.slug})
        return client.protocol_version, result

    version, result = with_client(bench_server, use, mode="auto")
    assert version == "2026-07-28"
    assert not result.is_error
    assert result.structured_content["owner_telemetry"]["runs"] == 12


# ---- the tools on real data ----------------------------------------------------------------------


def test_search_agents_ranks_public_agents_and_never_lists_a_private_one(
        bench_server: RunningServer, tag: str, shown: Seeded, hidden_private: Seeded,
        secretive: Seeded) -> None:
    by_runs = call(bench_server, "search_agents", {"query": tag.upper()})
    assert not by_runs.is_error, by_runs
    found = by_runs.structured_content
    assert found["source"] == "owner telemetry" and found["query"] == tag
    assert [(a["rank"], a["slug"]) for a in found["agents"]] == [(1, "agent"), (2, "secretive")]
    first = found["agents"][0]
    assert first["login"] == shown.login and first["display_name"] == "Shown Agent"
    assert first["runs"] == 12 and first["success_rate"] == pytest.approx(0.75)
    assert first["profile_path"] == f"/u/{shown.login}/agent"
    assert json.loads(by_runs.content[0].text) == found  # the same answer as text
    for sort in ("runs", "success", "score", "cost", "latency"):
        result = call(bench_server, "search_agents", {"query": tag, "sort": sort, "limit": 50})
        slugs = [a["slug"] for a in result.structured_content["agents"]]
        assert "private-one" not in slugs, sort
    best = call(bench_server, "search_agents", {"query": tag, "sort": "success", "limit": 1})
    assert [a["slug"] for a in best.structured_content["agents"]] == ["agent"]


def test_get_agent_labels_owner_telemetry_apart_from_benchmark_evidence(
        bench_server: RunningServer, shown: Seeded) -> None:
    result = call(bench_server, "get_agent", {"login": shown.login.upper(), "slug": shown.slug})
    assert not result.is_error, result
    report = result.structured_content
    assert report["agent"]["login"] == shown.login and report["agent"]["framework"]
    telemetry = report["owner_telemetry"]
    assert telemetry["source"] == "owner telemetry"
    assert (telemetry["runs"], telemetry["successes"], telemetry["failures"]) == (12, 9, 3)
    low, high = telemetry["success_rate_ci95"]
    assert low < 0.75 < high
    assert telemetry["cost_usd_total"] == pytest.approx(0.048)
    assert telemetry["cost_usd_per_run"] == pytest.approx(0.004)
    assert telemetry["latency_ms"]["p50"] > 0
    assert telemetry["failure_insights"] is None
    assert report["benchmark_evidence"]["source"] == "benchmark evidence"
    assert isinstance(report["benchmark_evidence"]["results"], list)
    capability = report["capability"]
    assert capability["source"] == "owner telemetry"
    assert capability["card"]["capability"]["description"] == CARD["capability"]["description"]
    assert [s["id"] for s in capability["card"]["capability"]["skills"]] == ["research"]


def test_get_agent_links_the_newest_run_and_failure_as_the_leaderboard_does(
        bench_server: RunningServer, shown: Seeded) -> None:
    telemetry = call(bench_server, "get_agent", {"login": shown.login, "slug": shown.slug}
                     ).structured_content["owner_telemetry"]
    detail = bench_server.get(f"/api/agents/{shown.path}")
    assert telemetry["latest_run"] == detail["latest_run"] is not None
    assert telemetry["latest_failure"] == detail["latest_failure"] is not None
    assert telemetry["latest_run"]["url"].startswith(f"/u/{shown.path}/runs/")
    assert httpx.get(bench_server.url + telemetry["latest_run"]["url"]).status_code == 200


def test_a_private_agent_is_not_found_exactly_like_an_unknown_one(
        bench_server: RunningServer, hidden_private: Seeded) -> None:
    private = call(bench_server, "get_agent", {"login": hidden_private.login,
                                               "slug": hidden_private.slug})
    unknown = call(bench_server, "get_agent", {"login": hidden_private.login, "slug": "nope"})
    assert error_text(private) == error_text(unknown)
    assert "agent not found" in error_text(private)
    assert private.structured_content is None
    # The MCP server always answers as an anonymous viewer: even the owner's key changes nothing.
    with_key = post_raw(bench_server, json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "get_agent",
            "arguments": {"login": hidden_private.login, "slug": hidden_private.slug}}}).encode(),
        **{"x-bench-key": hidden_private.key, "mcp-protocol-version": "2025-11-25"})
    assert with_key.status_code == 200, with_key.text
    assert with_key.json()["result"]["isError"] is True
    assert "Private Agent" not in with_key.text


def test_hidden_inputs_outputs_and_what_was_derived_from_them_never_appear(
        bench_server: RunningServer, secretive: Seeded) -> None:
    result = call(bench_server, "get_agent", {"login": secretive.login, "slug": secretive.slug})
    assert not result.is_error, result
    text = json.dumps(result.structured_content) + result.content[0].text
    assert "secret-output" not in text and "secret_input" not in text and "in-1" not in text
    (cluster,) = result.structured_content["owner_telemetry"]["failure_insights"]
    assert cluster["label"] == "[hidden by owner]" and cluster["terms"] == []
    assert cluster["count"] == 4


SUITE = "grounded-research-v1"


def submit_benchmark_run(server: RunningServer, agent: Seeded) -> dict[str, Any]:
    """One repeat of every case of the suite, sent through POST /api/benchmarks/{suite}/runs."""
    from bench_core.benchmarks.suites import load_suite, value_hash

    packaged = load_suite(SUITE)
    attempts = []
    for case in packaged.suite.cases:
        output = f"secret-output for {case.id} [S1]"
        attempts.append({"case_id": case.id, "repeat": 0, "status": "ok", "output": output,
                         "output_hash": value_hash(output), "duration_ms": 1200.0,
                         "cost_usd": 0.002})
    r = httpx.post(f"{server.url}/api/benchmarks/{SUITE}/runs", timeout=60,
                   headers={"X-Bench-Key": agent.key},
                   json={"agent_slug": agent.slug, "suite_hash": packaged.content_hash,
                         "repeats": 1, "attempts": attempts})
    return graded_run(server.url, r, agent.key)


def test_benchmark_evidence_of_public_agents_only_in_get_agent_and_list_benchmarks(
        bench_server: RunningServer, shown: Seeded, hidden_private: Seeded) -> None:
    run = submit_benchmark_run(bench_server, shown)
    submit_benchmark_run(bench_server, hidden_private)
    report = call(bench_server, "get_agent", {"login": shown.login, "slug": shown.slug})
    (result,) = report.structured_content["benchmark_evidence"]["results"]
    assert (result["run_id"], result["suite"], result["label"]) == (
        run["run_id"], SUITE, "benchmark evidence")
    assert result["pass_rate"] == run["pass_rate"] and "pass_rate_ci95" in result
    assert report.structured_content["owner_telemetry"]["runs"] == 12  # not mixed in
    assert "secret-output" not in json.dumps(report.structured_content)

    registry = call(bench_server, "list_benchmarks", {"suite": "grounded-research", "top": 20})
    assert not registry.is_error, registry
    assert registry.structured_content["source"] == "benchmark evidence"
    (suite,) = registry.structured_content["suites"]
    (version,) = suite["versions"]
    assert (suite["name"], version["suite"], version["published"]) == (
        "grounded-research", SUITE, True)
    assert version["cases"] >= 20
    logins = [entry["login"] for entry in version["top"]]
    assert hidden_private.login not in logins
    assert shown.login in logins or len(logins) == 20
    narrowed = call(bench_server, "list_benchmarks", {"suite": SUITE, "top": 1})
    assert [v["suite"] for s in narrowed.structured_content["suites"] for v in s["versions"]] == [
        SUITE]
    assert len(narrowed.structured_content["suites"][0]["versions"][0]["top"]) == 1
    nothing = call(bench_server, "list_benchmarks", {"suite": "no-such-suite"})
    assert nothing.structured_content["suites"] == []


# ---- invalid arguments and requests --------------------------------------------------------------


@pytest.mark.parametrize(("tool", "arguments", "field"), [
    ("search_agents", {"limit": 0}, "limit"),
    ("search_agents", {"limit": 51}, "limit"),
    ("search_agents", {"limit": "many"}, "limit"),
    ("search_agents", {"sort": "fastest"}, "sort"),
    ("search_agents", {"query": "x" * 101}, "query"),
    ("get_agent", {"login": "no spaces", "slug": "a"}, "login"),
    ("get_agent", {"login": "someone"}, "slug"),
    ("list_benchmarks", {"top": 0}, "top"),
    ("list_benchmarks", {"top": 21}, "top"),
    ("list_benchmarks", {"suite": "s" * 81}, "suite"),
])
def test_invalid_arguments_are_tool_errors_naming_the_argument(
        bench_server: RunningServer, tool: str, arguments: dict[str, Any], field: str) -> None:
    assert field in error_text(call(bench_server, tool, arguments))


def test_an_unknown_tool_is_an_error_not_a_crash(bench_server: RunningServer) -> None:
    result = call(bench_server, "delete_agent", {})
    assert "delete_agent" in error_text(result)


def post_raw(server: RunningServer, body: bytes, **headers: str) -> httpx.Response:
    return httpx.post(server.url + "/mcp", content=body, timeout=10, headers={
        "content-type": "application/json", "accept": "application/json, text/event-stream",
        **headers})


def test_malformed_and_oversized_requests_are_refused_with_4xx(bench_server: RunningServer) -> None:
    assert 400 <= post_raw(bench_server, b'{"jsonrpc": "2.0", "id": 1, "meth').status_code < 500
    assert post_raw(bench_server, b"[" + b" " * (100 * 1024) + b"]").status_code == 413
    wrong_type = httpx.post(bench_server.url + "/mcp", content=b"{}", timeout=10,
                            headers={"content-type": "text/plain"})
    assert 400 <= wrong_type.status_code < 500


def test_get_and_other_methods_are_405_at_once(bench_server: RunningServer) -> None:
    for method in ("GET", "DELETE", "PUT"):
        r = httpx.request(method, bench_server.url + "/mcp", timeout=10,
                          headers={"accept": "text/event-stream"})
        assert r.status_code == 405, method
        assert r.headers["allow"] == "POST"
        assert "POST" in r.json()["error"]


INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"}}}).encode()


def test_foreign_hosts_and_origins_are_refused(bench_server: RunningServer) -> None:
    """DNS-rebinding protection: a name that resolves here but is not ours, or a page of
    another origin, is refused; this server's own origin is served."""
    assert post_raw(bench_server, INITIALIZE, host="attacker.example").status_code == 421
    assert post_raw(bench_server, INITIALIZE, origin="https://attacker.example").status_code == 403
    own = post_raw(bench_server, INITIALIZE, origin=bench_server.url)
    assert own.status_code == 200, own.text
    assert own.json()["result"]["serverInfo"]["name"] == "bench"


def test_get_agent_reports_open_alerts_with_public_numbers_only(
        bench_server: RunningServer) -> None:
    login = "mcp" + uuid.uuid4().hex[:8]
    key = bench_server.create_key(login)
    ref = AgentRef(login, "agent")
    hold_looks(bench_server, ref)
    seed_agent(bench_server, login=login, key=key, runs=60, failures=0, version="1.0")
    seed_agent(bench_server, login=login, key=key, runs=30, failures=15, version="2.0")
    quiet_monitors(bench_server, ref, 90)
    watch_versions(bench_server.store, ref, "2026-12-03T10:30:00.000Z")
    bench_server.store.alerts.set_alert_settings(ref, AlertSettings(
        webhook_url="https://hooks.example.com/secret-path"))
    result = call(bench_server, "get_agent", {"login": login, "slug": "agent"})
    assert not result.is_error, result
    alerts = result.structured_content["owner_telemetry"]["open_alerts"]
    success = next(a for a in alerts if a["metric"] == "success_rate")
    assert (success["version"], success["against"], success["baseline"], success["current"]) \
        == ("2.0", "1.0", 1.0, 0.5)
    assert success["title"] == "Success rate of version 2.0" and success["p_value"] < 1e-6
    assert "secret-path" not in json.dumps(result.structured_content)
    assert "alert_id" not in success and "key" not in success
    bench_server.store.alerts.resolve_alert(ref, "success_rate@2.0", "2026-12-03T11:00:00.000Z",
                                            "owner")
    later = call(bench_server, "get_agent", {"login": login, "slug": "agent"})
    assert all(a["metric"] != "success_rate"
               for a in later.structured_content["owner_telemetry"]["open_alerts"])
