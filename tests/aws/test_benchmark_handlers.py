"""Benchmarks as Lambda serves them: API Gateway v2 events through Mangum, routed as the
template routes them (runs and JSON on ApiFunction, pages on WebFunction), on moto's DynamoDB
built from the template's table; every AWS call the functions make is granted to their roles."""

from __future__ import annotations

from typing import Any

import pytest

from tests.aws import cfn
from tests.aws.test_handlers import Deployment, assert_granted, new_login
from tests.aws.test_handlers import deployment as _deployment  # noqa: F401 - the fixture
from tests.benchmark_support import SUITE, new_slug, run_body


@pytest.fixture
def site(request: pytest.FixtureRequest) -> Deployment:
    """The template's deployment on moto, each function with exactly the template's
    environment: the suite's judge is the Bedrock model it names (answered in Bedrock's shapes,
    tests/aws/lambda_runtime.py's `bedrock_answer`)."""
    return request.getfixturevalue("_deployment")


def test_a_run_submitted_through_lambda_is_served_by_the_api_and_the_pages(
        transformed: dict[str, Any], site: Deployment) -> None:
    login, slug = new_login(), new_slug()
    key = site.create_key(login)
    posted = site.request("POST", f"/api/benchmarks/{SUITE}/runs", headers={"X-Bench-Key": key},
                          json_body=run_body(slug, repeats=2, summary={"pass_rate": 1.0}))
    assert posted.status == 201, posted.body[:500]
    run = posted.json()
    assert run["summary"]["pass_rate"] < 1 and run["summary"]["attempts"] == len(run["attempts"])
    model = cfn.environment(transformed, "ApiFunction", site.refs)["BENCH_BEDROCK_MODEL"]
    assert run["judge"] == f"bedrock:{model}", "graded by the model the template names"
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

    assert_granted(transformed, site.aws.calls, ("ApiFunction", "WebFunction"))
