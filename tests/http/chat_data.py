"""Model calls that hold a conversation, sent to a real server the way each client sends them:
OpenTelemetry's GenAI instrumentation for OpenAI (content as log events) and OpenInference's
(content as `llm.*` attributes), both wrapping the real `openai` client against a loopback fake
OpenAI; LangChain through the SDK's callback handler (a prompt template step and a chat model
answering with a tool call); the Vercel AI SDK's and Mastra's span attributes as they export
them. Each conversation is the same: instructions, a question, an earlier tool call and its
result, and an answer that calls `get_weather` for Lisbon."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from tests.conftest import RunningServer, poll

SYSTEM, QUESTION = "Be brief.", "Weather in Lisbon?"
EARLIER = "It rained in Lisbon yesterday."
"""An earlier tool result, in the conversation's input."""
TOOL_CALL = {"id": "c2", "object": "chat.completion", "model": "gpt-4.1-mini", "choices": [
    {"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {
                "name": "get_weather", "arguments": '{"city": "Lisbon"}'}}]}}],
    "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}
OPENAI_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_0", "type": "function",
         "function": {"name": "history", "arguments": '{"city": "Lisbon"}'}}]},
    {"role": "tool", "tool_call_id": "call_0", "content": EARLIER}]


@dataclass(frozen=True)
class ChatRun:
    login: str
    slug: str
    key: str
    run_id: str
    span_id: str
    """The model call's span (the run's root for an OTel client's single call)."""

    @property
    def page(self) -> str:
        return f"/u/{self.login}/{self.slug}/runs/{self.run_id}?span={self.span_id}"


def new_agent(server: RunningServer, convention: str, shown: bool) -> tuple[str, str, str]:
    login = "chat" + uuid.uuid4().hex[:8]
    slug = f"{convention}-chat"
    if shown:
        server.showing_content(login, slug)
    return login, slug, server.create_key(login)


def _finished_run(server: RunningServer, login: str, slug: str, key: str) -> str:
    tasks = poll(lambda: server.get(f"/api/agents/{login}/{slug}/runs", key)["runs"],
                 lambda runs: runs and all(r["status"] != "running" for r in runs))
    return str(tasks[0]["run_id"])


def _model_span(server: RunningServer, login: str, slug: str, key: str, run_id: str,
                prefix: str) -> str:
    spans = server.get(f"/api/agents/{login}/{slug}/runs/{run_id}", key)["spans"]
    return next(s["task_id"] for s in spans if (s["name"] or "").startswith(prefix))


def call_openai() -> None:
    import openai

    from tests.fake_openai import Reply, fake_openai

    with fake_openai(Reply(raw=json.dumps(TOOL_CALL))) as fake:
        client = openai.OpenAI(base_url=fake.url, api_key="sk-test")
        client.chat.completions.create(
            model="gpt-4.1-mini", messages=OPENAI_MESSAGES,  # type: ignore[arg-type]
            tools=[{"type": "function", "function": {
                "name": "get_weather", "parameters": {"type": "object", "properties": {}}}}])


def export(server: RunningServer, key: str, slug: str, spans: Any, logs: Any = None) -> None:
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    headers = {"X-Bench-Key": key, "X-Bench-Agent": slug}
    if logs:
        assert OTLPLogExporter(endpoint=f"{server.url}/v1/logs",
                               headers=headers).export(logs).name == "SUCCESS"
    if spans:
        assert OTLPSpanExporter(endpoint=f"{server.url}/v1/traces",
                                headers=headers).export(spans).name == "SUCCESS"


@contextmanager
def openai_v2(service: str = "chat") -> Iterator[tuple[Any, Any, Any]]:
    """While inside, the `openai` client is instrumented by openai-v2 with its content as log
    events (`gen_ai.client.inference.operation.details`); yields its tracer provider and what
    it records: (tracer provider, finished spans, finished logs)."""
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    from tests.e2e.test_otlp_logs import providers

    saved = {name: os.environ.get(name) for name in OPENAI_V2_ENV}
    os.environ.update(OPENAI_V2_ENV)
    tracer_provider, spans, logger_provider, logs = providers(service)
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    try:
        yield tracer_provider, spans, logs
    finally:
        instrumentor.uninstrument()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


OPENAI_V2_ENV = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
                 "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY"}


def otel_genai_run(server: RunningServer, *, shown: bool = True) -> ChatRun:
    """openai-v2 with content in log events."""
    login, slug, key = new_agent(server, "otel", shown)
    with openai_v2() as (_, spans, logs):
        call_openai()
    export(server, key, slug, spans.get_finished_spans(), logs.get_finished_logs())
    run_id = _finished_run(server, login, slug, key)
    return ChatRun(login, slug, key, run_id, run_id)


@contextmanager
def openinference(service: str = "chat") -> Iterator[Any]:
    """While inside, the `openai` client is instrumented by OpenInference; yields what it
    records (its spans: OpenInference sends no logs)."""
    from openinference.instrumentation.openai import OpenAIInstrumentor

    from tests.e2e.test_otlp_logs import providers

    tracer_provider, spans, _, _ = providers(service)
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider)
    try:
        yield spans
    finally:
        instrumentor.uninstrument()


def openinference_run(server: RunningServer, *, shown: bool = True) -> ChatRun:
    login, slug, key = new_agent(server, "openinference", shown)
    with openinference() as spans:
        call_openai()
    export(server, key, slug, spans.get_finished_spans())
    run_id = _finished_run(server, login, slug, key)
    return ChatRun(login, slug, key, run_id, run_id)


def langchain_run(server: RunningServer, *, shown: bool = True) -> ChatRun:
    """A prompt template and a chat model in a chain, through `bench.adapters.langchain`."""
    import bench
    from bench.adapters.langchain import BenchCallbackHandler
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

    login, slug, key = new_agent(server, "langchain", shown)
    agent = bench.observe(api_key=key, agent=slug, endpoint=server.url)
    model = FakeMessagesListChatModel(responses=[AIMessage(content="", tool_calls=[
        {"name": "get_weather", "args": {"city": "Lisbon"}, "id": "call_1"}])])
    prompt = ChatPromptTemplate.from_messages([("system", SYSTEM), ("human", "{question}"),
                                               MessagesPlaceholder("history")])
    history = [AIMessage(content="", tool_calls=[{"name": "history", "args": {"city": "Lisbon"},
                                                  "id": "call_0"}]),
               ToolMessage(content=EARLIER, tool_call_id="call_0")]
    (prompt | model).invoke({"question": QUESTION, "history": history},
                            config={"callbacks": [BenchCallbackHandler(agent)]})
    assert agent.shutdown_sync(timeout=20)
    run_id = _finished_run(server, login, slug, key)
    return ChatRun(login, slug, key, run_id, _model_span(server, login, slug, key, run_id, "chat"))


def _span(name: str, attributes: dict[str, Any]) -> dict[str, Any]:
    start = time.time_ns() - 2_000_000_000
    return {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": uuid.uuid4().hex, "spanId": uuid.uuid4().hex[:16], "name": name,
        "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 400_000_000),
        "attributes": [{"key": k, "value": {"stringValue": v} if isinstance(v, str)
                        else {"intValue": str(v)}} for k, v in attributes.items()]}]}]}]}


VERCEL = {"ai.operationId": "ai.generateText.doGenerate", "ai.model.provider": "openai.chat",
          "ai.model.id": "gpt-4.1-mini", "ai.usage.inputTokens": 100, "ai.usage.outputTokens": 10,
          "ai.prompt.messages": json.dumps([
              {"role": "system", "content": SYSTEM},
              {"role": "user", "content": [{"type": "text", "text": QUESTION}]},
              {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "call_0",
                                                 "toolName": "history",
                                                 "input": {"city": "Lisbon"}}]},
              {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "call_0",
                                            "toolName": "history",
                                            "output": {"type": "text", "value": EARLIER}}]}]),
          "ai.response.toolCalls": json.dumps([{"toolCallType": "function",
                                                "toolCallId": "call_1", "toolName": "get_weather",
                                                "args": '{"city": "Lisbon"}'}])}
MASTRA = {"gen_ai.operation.name": "chat", "mastra.span.type": "model_generation",
          "gen_ai.system": "openai.chat", "gen_ai.request.model": "gpt-4.1-mini",
          "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 10,
          "input": json.dumps({"messages": [{"role": "system", "content": SYSTEM},
                                            {"role": "user", "content": QUESTION}]}),
          "output": json.dumps({"text": "", "toolCalls": [
              {"toolCallId": "call_1", "toolName": "get_weather", "args": {"city": "Lisbon"}}]})}


def attributes_run(server: RunningServer, convention: str, attributes: dict[str, Any],
                   *, shown: bool = True) -> ChatRun:
    """One span carrying `attributes` as the Vercel AI SDK or Mastra exports them."""
    login, slug, key = new_agent(server, convention, shown)
    response = httpx.post(f"{server.url}/v1/traces", json=_span("call", attributes), timeout=30,
                          headers={"X-Bench-Key": key, "X-Bench-Agent": slug})
    assert response.status_code == 200, response.text
    run_id = _finished_run(server, login, slug, key)
    return ChatRun(login, slug, key, run_id, run_id)
