"""Mastra (the original's other JavaScript adapter) with its real npm packages: an agent with a
tool on the AI SDK's mock model, its run traced by Mastra's AI tracing and exported by
@mastra/otel-exporter over OTLP/HTTP protobuf to a real Bench server
(tests/e2e/mastra/<line>/agent.mjs).

Both lines of Mastra, which name their spans and attributes differently: 1.x (@mastra/core
1.71 with @mastra/observability and @mastra/otel-exporter 1.4: `invoke_agent`, `chat`,
`execute_tool`, content in `mastra.<span type>.input|output`; it declares Node 22.13 but runs on
20) and 0.x (0.24, the last line to declare Node 20, with @mastra/otel-exporter 0.3:
`agent.run`, `tool.execute`, content in bare `input`/`output`). Runs where `node` is installed,
as tests/e2e/test_node_ai_sdk.py does; each line's packages come from its package-lock.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from bench_core.render import formatting as fmt

from tests.conftest import RunningServer, poll
from tests.e2e.test_node_ai_sdk import STEP_COSTS, tasks

MASTRA_DIR = Path(__file__).with_name("mastra")
ANSWER = {"text": "Sunny in Lisbon, 24 degrees.", "files": []}


@dataclass(frozen=True)
class Line:
    """What one line of Mastra calls the spans of the same run."""

    root: str
    root_input: Any
    tool: str
    step: str
    call_costs: tuple[float, ...]
    """The evidence of its model-call spans: 0.x reports the generation's usage once, 1.x each
    call's."""


PROMPT = "What is the weather in Lisbon?"
LINES = {
    "v1": Line(root="invoke_agent weather", tool="execute_tool weather", step="agent_step weather",
               root_input={"system_instructions": "You answer weather questions.",
                           "messages": PROMPT},
               call_costs=STEP_COSTS),
    "v0": Line(root="agent.weather", tool="tool.execute weather", step="step: 0",
               root_input=PROMPT, call_costs=(sum(STEP_COSTS),)),
}


@pytest.mark.parametrize("line", sorted(LINES))
def test_a_mastra_agent_run_is_a_task_tree_with_evidence(
        bench_server: RunningServer, node: str, npm_packages: Callable[[Path], Path],
        line: str) -> None:
    expected = LINES[line]
    login = "m" + uuid.uuid4().hex[:10]
    key = bench_server.create_key(login)
    bench_server.showing_content(login, "weather-agent")
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": bench_server.url,
           "OTEL_EXPORTER_OTLP_HEADERS": f"X-Bench-Key={key}"}
    done = subprocess.run([node, "agent.mjs"], cwd=npm_packages(MASTRA_DIR / line), env=env,
                          timeout=120, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (root,) = poll(lambda: tasks(bench_server, login, "weather-agent", key),
                   lambda found: len(found) == 1 and found[0]["status"] == "success")
    assert root["name"] == expected.root
    assert root["input"] == expected.root_input and root["output"] == ANSWER
    assert (root["evidence"]["input_tokens"], root["evidence"]["output_tokens"]) == (2200, 80)
    assert root["evidence"]["cost_usd"] == pytest.approx(sum(STEP_COSTS))

    run = bench_server.get(f"/api/agents/{login}/weather-agent/runs/{root['task_id']}", key)
    spans = {span["task_id"]: span for span in run["spans"]}
    assert run["spans"][0]["task_id"] == root["task_id"] and run["depth"] >= 3
    assert run["evidence"]["cost_usd"] == pytest.approx(sum(STEP_COSTS))
    tool = next(span for span in run["spans"] if span["name"] == expected.tool)
    assert tool["input"] == {"city": "Lisbon"}
    assert tool["output"] == {"city": "Lisbon", "celsius": 24, "sky": "sunny"}
    assert spans[tool["parent_id"]]["name"] == expected.step  # nested: run → … → step → tool
    calls = [span for span in run["spans"] if (span["evidence"] or {}).get("records")]
    records = [record for span in calls for record in span["evidence"]["records"]]
    assert {(r["provider"], r["model"]) for r in records} == {("openai", "gpt-4.1-mini")}
    assert sorted(r["cost_usd"] for r in records) == pytest.approx(sorted(expected.call_costs))
    assert {span["name"] for span in calls} == {"chat gpt-4.1-mini"}
    assert ANSWER["text"] in json.dumps(calls[-1]["output"])
    assert not any(ANSWER["text"] in json.dumps(span["metadata"]) for span in run["spans"])

    page = httpx.get(f"{bench_server.url}/u/{login}/weather-agent/runs/{root['task_id']}",
                     params={"span": calls[0]["task_id"]}, headers={"X-Bench-Key": key}).text
    assert "gpt-4.1-mini" in page and fmt.usd(calls[0]["evidence"]["cost_usd"]) in page
    answered = httpx.get(f"{bench_server.url}/u/{login}/weather-agent/runs/{root['task_id']}",
                         params={"span": calls[-1]["task_id"]}, headers={"X-Bench-Key": key}).text
    chat = answered[answered.index("data-chat"):answered.index("data-raw-json")]
    assert 'data-role="assistant"' in chat and ANSWER["text"] in chat, "the call's answer as a chat"
    profile = bench_server.get(f"/api/agents/{login}/weather-agent")
    assert profile["runs"] == 1 and profile["model"] == "gpt-4.1-mini"
    assert profile["evidence_cost_usd_total"] == pytest.approx(sum(STEP_COSTS))
