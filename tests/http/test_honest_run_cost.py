"""Each run's headline cost follows the rule the profile's uses (`pricing.cost_rule`): the
owner's report, else the provider-evidence cost, labelled which; on the run header, its JSON,
the runs list and its JSON, the profile's recent runs, the tasks API, the owner's dashboard,
compare's example runs and MCP. An OpenTelemetry run reports no cost of its own, so none of
them may read "$0 owner-reported" while the profile prices it."""

from __future__ import annotations

import uuid

import httpx
import pytest
from bench_core.domain.pricing import cost_rule
from bench_core.render import formatting as fmt

from tests.conftest import RunningServer
from tests.factories import batch, ev
from tests.http.accounts_support import Browser
from tests.http.test_honest_headline import PER_RUN, chat_spans
from tests.http.test_ingest_http import post
from tests.http.test_mcp import call

EVIDENCE = "provider evidence"


def test_the_rule_prefers_the_owner_then_evidence_and_labels_both() -> None:
    assert cost_rule(0.01, 0.5) == (0.01, "owner-reported")
    assert cost_rule(None, 0.5) == (0.5, EVIDENCE)
    assert cost_rule(0.0, 0.5) == (0.5, EVIDENCE)
    assert cost_rule(None, None) == (0.0, None)


def otel_runs(server: RunningServer, login: str, runs: int = 2, slug: str | None = None
              ) -> tuple[str, str]:
    slug = slug or "otel-cost-" + uuid.uuid4().hex[:6]
    key = server.create_key(login)
    response = httpx.post(f"{server.url}/v1/traces", json=chat_spans(runs), timeout=30,
                          headers={"X-Bench-Key": key, "X-Bench-Agent": slug})
    assert response.status_code == 200
    return slug, key


def test_an_otel_run_is_priced_from_evidence_on_every_run_surface(
        bench_server: RunningServer) -> None:
    browser = Browser(bench_server)
    login = browser.sign_in()
    slug, _ = otel_runs(bench_server, login)
    base = f"/api/agents/{login}/{slug}"
    listed = bench_server.get(f"{base}/runs", key=bench_server.create_key(login))["runs"]
    assert len(listed) == 2
    for run in listed:
        assert run["cost_usd"] in (None, 0, 0.0)
        assert run["headline_cost_usd"] == pytest.approx(PER_RUN)
        assert run["headline_cost_source"] == EVIDENCE
    run_id = listed[0]["run_id"]
    answer = bench_server.get(f"{base}/runs/{run_id}")
    assert (answer["headline_cost_usd"], answer["headline_cost_source"]) == (
        pytest.approx(PER_RUN), EVIDENCE)
    assert answer["spans"][0]["headline_cost_source"] == EVIDENCE
    task = bench_server.get(f"{base}/tasks")["tasks"][0]
    assert task["headline_cost_source"] == EVIDENCE
    shown = fmt.usd(PER_RUN)
    run_page = browser.get(f"/u/{login}/{slug}/runs/{run_id}?span={run_id}").text
    head, detail = run_page.split("data-headline-cost")[1:3]
    for shows in (head[:300], detail[:300]):
        assert shown in shows and EVIDENCE in shows and "owner-reported" not in shows
    for path in (f"/u/{login}/{slug}/runs", f"/u/{login}/{slug}"):
        text = browser.get(path).text
        assert f'title="{EVIDENCE}">{shown} <span class="faint">evidence</span>' in text, path
    dashboard = browser.get("/dashboard").text
    assert fmt.usd(2 * PER_RUN) in dashboard and EVIDENCE in dashboard
    agent_page = browser.get(f"/dashboard/agents/{slug}").text
    assert fmt.usd(2 * PER_RUN) in agent_page and "owner-reported" not in agent_page
    report = call(bench_server, "get_agent", {"login": login, "slug": slug}).structured_content
    assert report["owner_telemetry"]["headline_cost_source"] == EVIDENCE


def test_an_owner_reported_run_keeps_its_report_and_compare_shows_both(
        bench_server: RunningServer) -> None:
    login = "c" + uuid.uuid4().hex[:10]
    slug = "otel-cost-" + uuid.uuid4().hex[:6]
    bench_server.showing_content(login, slug)
    slug, key = otel_runs(bench_server, login, runs=1, slug=slug)
    reporter = "reporter-" + uuid.uuid4().hex[:6]
    events = [ev("task.start", "r1", name="q", input="x"),
              ev("task.end", "r1", name="q", status="success", output="a", cost_usd=0.01)]
    assert post(bench_server, batch(reporter, events), key).status_code == 200
    run = bench_server.get(f"/api/agents/{login}/{reporter}/runs/r1")
    assert (run["headline_cost_usd"], run["headline_cost_source"]) == (0.01, "owner-reported")
    compare = httpx.get(f"{bench_server.url}/vs/@{login}/{slug}/@{login}/{reporter}").text
    examples = compare[compare.index('id="compare-examples"'):]
    assert f'title="{EVIDENCE}">{fmt.usd(PER_RUN)} <span class="faint">evidence</span>' in examples
    assert f'title="owner-reported">{fmt.usd(0.01)} <span class="faint">reported</span>' in examples
