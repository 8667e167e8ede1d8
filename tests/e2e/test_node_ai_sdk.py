"""The Vercel AI SDK (one of the original's two JavaScript adapters; Mastra, the other, is
tests/e2e/test_node_mastra.py), run with the real npm packages: `ai` with its mock model and
`experimental_telemetry`, the OpenTelemetry Node SDK and its OTLP/HTTP proto and JSON exporters
(tests/e2e/node/agent.mjs), exporting to a real Bench server.

Runs where `node` is installed (skipped otherwise, failed instead under BENCH_REQUIRE_NODE=1: the
`node` fixture of tests/e2e/conftest.py); the packages come from tests/e2e/node/package-lock.json
(`make test` installs them, and the `npm_packages` fixture does if they are missing).
"""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from bench_core.render import formatting as fmt

from tests.conftest import RunningServer, poll

NODE_DIR = Path(__file__).with_name("node")
STEP_COSTS = ((1000 * 0.4 + 50 * 1.6) / 1e6, (1200 * 0.4 + 30 * 1.6) / 1e6)
"""gpt-4.1-mini at $0.40 in / $1.60 out per million tokens, for the two steps of the run."""


def tasks(server: RunningServer, login: str, slug: str, key: str, **params: Any
          ) -> list[dict[str, Any]]:
    """As the owner sees them: content is hidden from others by default."""
    return server.get(f"/api/agents/{login}/{slug}/tasks", key, **params)["tasks"]


@pytest.mark.parametrize("encoding", ["proto", "json"])
def test_ai_sdk_runs_become_tasks_with_evidence(
        bench_server: RunningServer, node: str, npm_packages: Callable[[Path], Path],
        encoding: str) -> None:
    login = "n" + uuid.uuid4().hex[:10]
    key = bench_server.create_key(login)
    bench_server.showing_content(login, "weather-agent")
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": bench_server.url,
           "OTEL_EXPORTER_OTLP_HEADERS": f"X-Bench-Key={key}"}
    done = subprocess.run([node, "agent.mjs", encoding], cwd=npm_packages(NODE_DIR), env=env,
                          timeout=120,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    runs = {t["name"]: t for t in poll(lambda: tasks(bench_server, login, "weather-agent", key),
                                       lambda found: len(found) == 2)}
    generated, streamed = runs["ai.generateText"], runs["ai.streamText"]
    assert generated["input"] == {"prompt": "What is the weather in Lisbon?"}
    assert generated["output"] == "Sunny in Lisbon, 24 degrees."
    assert streamed["output"] == "Pack sunscreen."
    assert generated["evidence"]["input_tokens"] == 2200
    assert generated["evidence"]["cost_usd"] == pytest.approx(sum(STEP_COSTS))
    assert streamed["evidence"]["cost_usd"] == pytest.approx((400 * 0.4 + 10 * 1.6) / 1e6)
    steps = tasks(bench_server, login, "weather-agent", key, parent=generated["task_id"])
    by_name = sorted((t["name"], t["started_at"]) for t in steps)
    assert [name for name, _ in by_name] == ["ai.generateText.doGenerate"] * 2 + [
        "ai.toolCall weather"]
    tool = next(t for t in steps if t["name"] == "ai.toolCall weather")
    assert tool["input"] == {"city": "Lisbon"}
    assert tool["output"] == {"city": "Lisbon", "celsius": 24, "sky": "sunny"}
    calls = [bench_server.get(f"/api/agents/{login}/weather-agent/tasks/{t['task_id']}", key)
             for t in steps if t["name"].endswith("doGenerate")]
    records = [call["evidence"]["records"][0] for call in calls]
    assert {(r["provider"], r["model"]) for r in records} == {("openai", "gpt-4.1-mini")}
    assert sorted(r["cost_usd"] for r in records) == pytest.approx(sorted(STEP_COSTS))
    run = bench_server.get(f"/api/agents/{login}/weather-agent/runs/{generated['task_id']}", key)
    assert [span["name"] for span in run["spans"]][0] == "ai.generateText"
    assert run["evidence"]["cost_usd"] == pytest.approx(sum(STEP_COSTS))
    step = next(span for span in run["spans"] if span["name"].endswith("doGenerate"))
    assert step["evidence"]["records"][0]["model"] == "gpt-4.1-mini"
    page = httpx.get(f"{bench_server.url}/u/{login}/weather-agent/runs/{generated['task_id']}",
                     params={"span": step["task_id"]}, headers={"X-Bench-Key": key}).text
    assert "gpt-4.1-mini" in page and fmt.usd(step["evidence"]["cost_usd"]) in page
    chat = page[page.index("data-chat"):page.index("data-raw-json")]
    assert re.findall(r'data-role="(\w+)"', chat) == ["user", "assistant"], "a step as a chat"
    assert "data-tool-call" in chat and "weather" in chat and "&#34;city&#34;: &#34;Lisbon&#34;" in chat
    session = bench_server.get(f"/api/agents/{login}/weather-agent/sessions/weather-chat")
    assert [r["run_id"] for r in session["runs"]] == [generated["task_id"], streamed["task_id"]]
    assert session["user"] != "traveller-7", "the telemetry metadata's user, as a pseudonym"
    profile = bench_server.get(f"/api/agents/{login}/weather-agent")
    assert profile["runs"] == 2 and profile["model"] == "gpt-4.1-mini"
    assert profile["evidence_cost_usd_total"] == pytest.approx(
        sum(STEP_COSTS) + (400 * 0.4 + 10 * 1.6) / 1e6)
