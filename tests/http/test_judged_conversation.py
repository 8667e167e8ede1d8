"""An OpenTelemetry GenAI agent's run is judged on its conversation over real HTTP: the real
openai-v2 instrumentation's model call under an `invoke_agent` span that records no content,
its content arriving as log events after the spans. Until the content arrives the run is
unscored in one clean sentence; once it does, the run is judged again on its model calls, and
the page says so."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import RunningServer, poll
from tests.http.chat_data import call_openai, export, new_agent, openai_v2


def agent_run(server: RunningServer) -> tuple[str, str, str, Any, Any]:
    login, slug, key = new_agent(server, "judged", shown=True)
    with openai_v2() as (tracer_provider, spans, logs), tracer_provider.get_tracer("agent").start_as_current_span(
            "invoke_agent weather", attributes={"gen_ai.operation.name": "invoke_agent"}):
        call_openai()
    return login, slug, key, spans.get_finished_spans(), logs.get_finished_logs()


def run_eval(server: RunningServer, login: str, slug: str, run_id: str) -> dict[str, Any]:
    return server.get(f"/api/agents/{login}/{slug}/runs/{run_id}")


def test_a_run_is_judged_on_its_model_calls_once_their_content_arrives(
        bench_server: RunningServer) -> None:
    login, slug, key, spans, logs = agent_run(bench_server)
    export(bench_server, key, slug, spans)
    runs = poll(lambda: bench_server.get(f"/api/agents/{login}/{slug}/runs")["runs"],
                lambda found: found and found[0]["eval"] is not None)
    run_id = runs[0]["run_id"]
    assert runs[0]["eval"]["reason"] == "no content captured"
    page = httpx.get(f"{bench_server.url}/u/{login}/{slug}/runs/{run_id}", timeout=30).text
    assert "Unscored: no content captured" in page and "nscored: unscored" not in page
    export(bench_server, key, slug, [], logs)
    answer = poll(lambda: run_eval(bench_server, login, slug, run_id),
                  lambda run: run["eval"]["status"] == "scored")
    assert answer["unscored_because"] is None
    assert answer["eval"]["reasoning"].startswith("Judged on the run's model calls")
    page = httpx.get(f"{bench_server.url}/u/{login}/{slug}/runs/{run_id}", timeout=30).text
    assert "Judged on the run&#39;s model calls" in page and "Unscored" not in page
    profile = bench_server.get(f"/api/agents/{login}/{slug}")
    assert (profile["eval_count"], profile["evals"]["unscored"]) == (1, 0), "counted once"


def test_a_run_whose_root_is_empty_is_judged_at_once_when_its_calls_hold_content(
        bench_server: RunningServer) -> None:
    login, slug, key, spans, logs = agent_run(bench_server)
    export(bench_server, key, slug, spans, logs)
    runs = poll(lambda: bench_server.get(f"/api/agents/{login}/{slug}/runs")["runs"],
                lambda found: found and found[0]["eval"] is not None
                and found[0]["eval"]["status"] == "scored")
    assert runs[0]["name"] == "invoke_agent weather"
