"""End to end on the local server: tasks sent with the SDK are judged shortly after (by the
offline judge, or by an OpenAI-compatible model), the profile shows the scores, and the owner's
refresh produces failure insights. Polls have a generous hang guard, never a timed assertion."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bench
import httpx
import pytest
from bench_core.settings import LLMSettings

from tests.conftest import RunningServer, poll, start_server
from tests.fake_openai import FakeOpenAI, fake_openai, verdict


def send_tasks(server: RunningServer, key: str, slug: str) -> None:
    agent = bench.observe(api_key=key, agent=slug, endpoint=server.url, flush_interval_ms=50)
    with agent.span("answer", {"question": "capital of France?"}) as t:
        t.set_output("Paris is the capital of France.")
    for i, error in enumerate(("TimeoutError: search API timed out after 30s",
                               "HTTP 429 Too Many Requests: rate limit exceeded")):
        with pytest.raises(RuntimeError), agent.span(f"lookup-{i}", {"n": i}):
            raise RuntimeError(error)
    assert agent.shutdown_sync(timeout=30)


def judged_tasks(server: RunningServer, key: str, path: str) -> list[dict[str, Any]]:
    return server.get(f"/api/agents/{path}/tasks", key=key)["tasks"]


def all_judged(tasks: list[dict[str, Any]]) -> bool:
    return len(tasks) == 3 and all(t["eval"] is not None for t in tasks)


def test_sdk_tasks_get_heuristic_scores_and_the_profile_shows_them(
        bench_server: RunningServer) -> None:
    login, slug = f"e2e{uuid.uuid4().hex[:8]}", "judged"
    key = bench_server.create_key(login)
    send_tasks(bench_server, key, slug)
    tasks = poll(lambda: judged_tasks(bench_server, key, f"{login}/{slug}"), all_judged)
    scores = {t["name"]: (t["eval"]["score"], t["eval"]["judge"]) for t in tasks}
    assert scores == {"answer": (1.0, "heuristic-v1"), "lookup-0": (0.0, "heuristic-v1"),
                      "lookup-1": (0.0, "heuristic-v1")}
    profile = bench_server.get(f"/api/agents/{login}/{slug}")
    assert profile["avg_eval_score"] == pytest.approx(1 / 3)
    assert profile["avg_eval_score_judge"] == "heuristic-v1"
    assert profile["judged_share"] == 1.0 and profile["evals"]["pending"] == 0
    assert profile["recent_tasks"][0]["eval"]["status"] == "scored"


def test_the_owner_refreshes_insights_and_anyone_reads_them(bench_server: RunningServer) -> None:
    login, slug = f"e2e{uuid.uuid4().hex[:8]}", "insightful"
    key = bench_server.create_key(login)
    send_tasks(bench_server, key, slug)
    poll(lambda: judged_tasks(bench_server, key, f"{login}/{slug}"), all_judged)
    base = f"{bench_server.url}/api/agents/{login}/{slug}/insights"
    assert httpx.post(base + "/refresh", timeout=10).status_code == 401
    other = bench_server.create_key(f"x{uuid.uuid4().hex[:8]}")
    assert httpx.post(base + "/refresh", headers={"X-Bench-Key": other}, timeout=10).status_code == 404
    agent_key = bench_server.create_key(login, slug)
    assert httpx.post(base + "/refresh", headers={"X-Bench-Key": agent_key},
                      timeout=10).status_code == 403
    started = httpx.post(base + "/refresh", headers={"X-Bench-Key": key}, timeout=10)
    assert started.status_code == 202 and started.json()["status"] == "started"
    insights = poll(lambda: httpx.get(base, timeout=10).json(), lambda i: i["computed_at"])
    assert sum(c["count"] for c in insights["clusters"]) == insights["considered"] == 2
    assert all(c["label"] and c["example_task_ids"] for c in insights["clusters"])


def test_insights_of_a_private_agent_are_not_found_by_others(bench_server: RunningServer) -> None:
    login, slug = f"e2e{uuid.uuid4().hex[:8]}", "secret"
    key = bench_server.create_key(login)
    send_tasks(bench_server, key, slug)
    httpx.patch(f"{bench_server.url}/api/agents/{login}/{slug}", json={"visibility": "private"},
                headers={"X-Bench-Key": key}, timeout=10).raise_for_status()
    base = f"{bench_server.url}/api/agents/{login}/{slug}/insights"
    assert httpx.get(base, timeout=10).status_code == 404
    assert httpx.get(base, headers={"X-Bench-Key": key}, timeout=10).status_code == 200


def test_the_owner_sets_the_judge_budget_through_the_agent_settings(
        bench_server: RunningServer) -> None:
    login, slug = f"e2e{uuid.uuid4().hex[:8]}", "budgeted"
    key = bench_server.create_key(login)
    send_tasks(bench_server, key, slug)
    url = f"{bench_server.url}/api/agents/{login}/{slug}"
    patched = httpx.patch(url, json={"judge_daily_budget_usd": 1.5, "judge_sample_rate": 0.2},
                          headers={"X-Bench-Key": key}, timeout=10)
    assert patched.status_code == 200, patched.text
    assert (patched.json()["evals"]["judge_daily_budget_usd"],
            patched.json()["evals"]["judge_sample_rate"]) == (1.5, 0.2)
    assert "judge_sample_rate" not in httpx.get(url, timeout=10).json()["evals"]
    assert httpx.patch(url, json={"judge_sample_rate": 2}, headers={"X-Bench-Key": key},
                       timeout=10).status_code == 422


# ---- with a model behind an OpenAI-compatible endpoint ------------------------------------------


@pytest.fixture
def model_server(tmp_path: Path) -> Iterator[tuple[RunningServer, FakeOpenAI]]:
    with fake_openai(verdict(0.75, "Answers the question.")) as fake:
        running, server, thread = start_server(
            tmp_path, llm=LLMSettings(provider="openai_compat", url=fake.url, model="fake-llama"))
        try:
            yield running, fake
        finally:
            server.should_exit = True
            thread.join(timeout=10)


def test_sdk_tasks_are_judged_by_the_configured_model(
        model_server: tuple[RunningServer, FakeOpenAI]) -> None:
    server, fake = model_server
    key = server.create_key("modeller")
    send_tasks(server, key, "llm-judged")
    tasks = poll(lambda: judged_tasks(server, key, "modeller/llm-judged"), all_judged)
    assert {(t["eval"]["score"], t["eval"]["judge"]) for t in tasks} == {(0.75, "openai_compat:fake-llama")}
    assert all(t["eval"]["input_tokens"] == 120 for t in tasks)
    assert len(fake.requests) == 3
    profile = server.get("/api/agents/modeller/llm-judged")
    assert profile["avg_eval_score"] == 0.75
    assert profile["avg_eval_score_judge"] == "openai_compat:fake-llama"
    assert profile["evals"]["judge_tokens"] == 450
