"""Benchmarks as Lambda serves them: API Gateway v2 events through Mangum, routed as the
template routes them (runs and JSON on ApiFunction, pages on WebFunction), graded by
BenchmarkFunction's steps as the benchmark state machine calls them, on moto's DynamoDB built
from the template's table; every AWS call the functions make is granted to their roles."""

from __future__ import annotations

import json
import os
from typing import Any
from unittest import mock

import pytest
from bench_core.benchmarks import workflow
from bench_core.lambdas import workflow_steps
from bench_core.ports.workflows import benchmark_start

from tests.aws import cfn
from tests.aws.lambda_runtime import LambdaContext, fresh_function_module
from tests.aws.test_handlers import Deployment, assert_granted, new_login
from tests.aws.test_handlers import deployment as _deployment  # noqa: F401 - the fixture
from tests.benchmark_support import SUITE, new_slug, run_body


@pytest.fixture
def site(request: pytest.FixtureRequest) -> Deployment:
    """The template's deployment on moto, each function with exactly the template's
    environment: the suite's judge is the Bedrock model it names (answered in Bedrock's shapes,
    tests/aws/lambda_runtime.py's `bedrock_answer`)."""
    return request.getfixturevalue("_deployment")


def grading_step(transformed: dict[str, Any], site: Deployment, monkeypatch: pytest.MonkeyPatch,
                 step: str, state: dict[str, Any]) -> dict[str, Any]:
    """One Task of the benchmark state machine: BenchmarkFunction's handler, loaded as Lambda
    loads it, with exactly the template's environment."""
    deployed = cfn.functions(transformed)["BenchmarkFunction"]
    monkeypatch.setattr(workflow_steps, "_services", None)
    site.aws.current = "BenchmarkFunction"
    try:
        with mock.patch.dict(os.environ, cfn.environment(transformed, "BenchmarkFunction", site.refs)):
            return fresh_function_module(deployed.code_dir).handler(  # type: ignore[no-any-return]
                {"step": step, "state": state}, LambdaContext())
    finally:
        site.aws.current = "test"


def test_a_run_submitted_through_lambda_is_graded_by_the_workflow_and_served_by_the_api_and_pages(
        transformed: dict[str, Any], site: Deployment, monkeypatch: pytest.MonkeyPatch) -> None:
    login, slug = new_login(), new_slug()
    key = site.create_key(login)
    posted = site.request("POST", f"/api/benchmarks/{SUITE}/runs", headers={"X-Bench-Key": key},
                          json_body=run_body(slug, repeats=2, summary={"pass_rate": 1.0}))
    assert posted.status == 202, posted.body[:500]
    accepted = posted.json()
    assert accepted["status"] == "pending" and accepted["pass_rate"] is None
    started = [(who, p) for who, _, op, p in site.aws.calls if op == "StartExecution"]
    assert [(who, p["stateMachineArn"], json.loads(p["input"])) for who, p in started] == [
        ("ApiFunction", site.refs["BenchmarkStateMachine"], benchmark_start(accepted["id"]))]
    assert not [c for c in site.aws.calls if c[1] == "bedrock-runtime"], "nothing graded in the request"
    assert site.request("GET", "/api/benchmarks").json()["suites"][0]["versions"][0]["top"] == []

    state, seen, total = benchmark_start(accepted["id"]), [], accepted["progress"]["total"]
    with mock.patch.object(workflow, "CHUNK", 4):  # several chunks, as a large run has
        while state["next"] != workflow.DONE:
            state = grading_step(transformed, site, monkeypatch, state["next"], state)
            progress = site.request("GET", f"/api/benchmarks/runs/{accepted['id']}").json()
            seen.append((progress["status"], progress["progress"]["graded"]))
            if progress["status"] == "grading":
                page = site.request("GET", accepted["url"], headers={"Accept": "text/html"})
                assert b"Grading in the background" in page.body
                assert f'data-value="{progress["progress"]["graded"]}/{total}"'.encode() in page.body
    assert seen[0] == ("grading", 4) and seen[-1] == ("done", total) and len(seen) == -(-total // 4)
    run = site.request("GET", f"/api/benchmarks/runs/{accepted['id']}").json()
    assert run["summary"]["pass_rate"] < 1 and run["summary"]["attempts"] == len(run["attempts"])
    model = cfn.environment(transformed, "BenchmarkFunction", site.refs)["BENCH_BEDROCK_MODEL"]
    assert run["judge"] == f"bedrock:{model}", "graded by the model the template names"
    # the submission made the agent as every agent starts: public, its content hidden
    made = site.request("GET", f"/api/agents/{login}/{slug}").json()
    assert (made["visibility"], made["hide_inputs"], made["hide_outputs"]) == ("public", True, True)
    assert {(a["input"], a["output"], a["output_hash"]) for a in run["attempts"]} == {
        ("[hidden by owner]",) * 3}
    own = site.request("GET", f"/api/benchmarks/runs/{run['run_id']}",
                       headers={"X-Bench-Key": key}).json()
    assert all(a["output_hash"].startswith("sha256:") and a["input"] for a in own["attempts"])
    again = site.request("GET", f"/api/benchmarks/{SUITE}/runs/{run['run_id']}")
    assert again.status == 200 and again.json()["summary"] == run["summary"]
    assert len(again.json()["attempts"]) == len(run["attempts"])
    listing = site.request("GET", "/api/benchmarks")
    top = listing.json()["suites"][0]["versions"][0]["top"]
    assert [r["run_id"] for r in top] == [run["run_id"]]
    changed = run_body(slug, repeats=1)
    changed["suite_hash"] = "sha256:" + "1" * 64
    refused = site.request("POST", f"/api/benchmarks/{SUITE}/runs", headers={"X-Bench-Key": key},
                           json_body=changed)
    assert refused.status == 409 and "never changes" in refused.json()["error"]
    html = {"Accept": "text/html"}
    for path in ("/benchmarks", f"/benchmarks/{SUITE}", run["url"], f"/u/{login}/{slug}",
                 f"/vs/@{login}/{slug}/@{login}/{slug}"):
        page = site.request("GET", path, headers=html)
        assert page.status == 200, (path, page.body[:300])
        assert b"enchmark evidence" in page.body, path
    assert site.request("GET", f"/benchmarks/{SUITE}/runs/missing", headers=html).status == 404
    assert {"ApiFunction", "WebFunction"} <= set(site.api.invocations)

    assert_granted(transformed, site.aws.calls, ("ApiFunction", "WebFunction", "BenchmarkFunction"))
