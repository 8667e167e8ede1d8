"""Instrumentation nobody here wrote, against a real Bench server: OpenTelemetry's GenAI
instrumentation for OpenAI (`opentelemetry-instrumentation-openai-v2`, content as log events)
and OpenInference's (`openinference-instrumentation-openai`, content and tokens as `llm.*`
span attributes), each calling a loopback fake OpenAI server with the real `openai` client and
exporting with the real OTLP/HTTP span and log exporters. Each run shows its content, tokens,
model and evidence cost on the run's page and in its JSON.

Versions that install together (pinned in pyproject's dev extra): openai-v2 2.4b0 with
opentelemetry-util-genai 1.1b0, openinference-instrumentation-openai 0.1.66.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from bench_core.render import formatting as fmt
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from tests.conftest import RunningServer, poll
from tests.fake_openai import answer, fake_openai
from tests.http.chat_data import openai_v2, openinference

COST = (1000 * 0.4 + 50 * 1.6) / 1e6
"""gpt-4.1-mini at $0.40 in / $1.60 out per million tokens: 1,000 prompt and 50 completion."""
QUESTION, REPLY = "Where should I fly in May?", "Lisbon: warm, not yet crowded."


@pytest.fixture
def agent(bench_server: RunningServer, monkeypatch: pytest.MonkeyPatch
          ) -> Iterator[tuple[str, str, str]]:
    login = "g" + uuid.uuid4().hex[:10]
    key = bench_server.create_key(login)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", bench_server.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"X-Bench-Key={key}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
    yield login, "travel-bot", key


def call_openai() -> None:
    with fake_openai(answer(REPLY, (1000, 50))) as fake:
        client = openai.OpenAI(base_url=fake.url, api_key="sk-test")
        client.chat.completions.create(model="gpt-4.1-mini", messages=[
            {"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}])


def only_task(server: RunningServer, agent: tuple[str, str, str]) -> dict[str, Any]:
    """The one run's span in the run's JSON twin, after checking its page (as the owner sees
    it: content is hidden from others by default) shows the same."""
    login, slug, key = agent
    listed = poll(lambda: server.get(f"/api/agents/{login}/{slug}/tasks", key)["tasks"],
                  lambda tasks: tasks and tasks[0]["status"] != "running")
    assert len(listed) == 1
    run_id = listed[0]["task_id"]
    run = server.get(f"/api/agents/{login}/{slug}/runs/{run_id}", key)
    [span] = run["spans"]
    page = httpx.get(f"{server.url}/u/{login}/{slug}/runs/{run_id}?span={run_id}", timeout=10,
                     headers={"X-Bench-Key": key}).text
    for shown in ("gpt-4.1-mini", "1,000", fmt.usd(COST), REPLY):
        assert shown in page, shown
    return span


def assert_evidence(span: dict[str, Any]) -> None:
    evidence = span["evidence"]
    assert (evidence["input_tokens"], evidence["output_tokens"]) == (1000, 50)
    assert evidence["cost_usd"] == pytest.approx(COST)
    assert evidence["records"][0]["model"] == "gpt-4.1-mini"


def text_of(value: Any) -> str:
    import json
    return json.dumps(value)


@pytest.mark.parametrize("logs_first", [True, False])
def test_openai_v2_content_arrives_as_log_events(
        bench_server: RunningServer, agent: tuple[str, str, str], logs_first: bool) -> None:
    with openai_v2("Travel Bot") as (_, spans, logs):
        call_openai()
    finished_spans, finished_logs = spans.get_finished_spans(), logs.get_finished_logs()
    assert not any(k.startswith("gen_ai.input") for k in finished_spans[0].attributes)
    exports = [lambda: OTLPLogExporter().export(finished_logs),
               lambda: OTLPSpanExporter().export(finished_spans)]
    for export in exports if logs_first else exports[::-1]:
        assert export().name == "SUCCESS"
        export()  # a re-sent export changes nothing
    task = only_task(bench_server, agent)
    assert QUESTION in text_of(task["input"]) and "Be brief." in text_of(task["input"])
    assert REPLY in text_of(task["output"])
    assert text_of(task["input"]).count(QUESTION) == 1
    assert_evidence(task)


def test_openinference_attributes_give_content_tokens_and_model(
        bench_server: RunningServer, agent: tuple[str, str, str]) -> None:
    with openinference("Travel Bot") as spans:
        call_openai()
    assert OTLPSpanExporter().export(spans.get_finished_spans()).name == "SUCCESS"
    task = only_task(bench_server, agent)
    assert QUESTION in text_of(task["input"])
    assert REPLY in text_of(task["output"])
    assert_evidence(task)
