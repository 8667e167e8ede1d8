"""Content that is neither an input nor an output, over real HTTP on both stores: cost fields
that are not numbers and span attributes not known to be safe reach no one but the owner while
either switch is on (run JSON, span detail, tasks, events, agent detail, live feed, MCP); the
numbers, names and ids known to be safe stay public."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
from bench_core.domain.models import AgentMeta, CleanEvent
from bench_core.domain.privacy import HIDDEN
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.conftest import RunningServer
from tests.factories import batch, ev, task_events, ts
from tests.http.test_ingest_http import new_login, post
from tests.http.test_live import next_events, watch
from tests.http.test_mcp import call
from tests.http.test_privacy_defaults import patch


def surfaces(login: str, slug: str, task_id: str) -> list[str]:
    """Every address that shows a task of the agent, with what it holds."""
    path = f"{login}/{slug}"
    return [f"/api/agents/{path}", f"/api/agents/{path}/tasks",
            f"/api/agents/{path}/tasks/{task_id}", f"/api/agents/{path}/events",
            f"/api/agents/{path}/runs/{task_id}", f"/u/{path}/runs/{task_id}?span={task_id}",
            f"/u/{path}"]


def get(server: RunningServer, path: str, key: str | None = None) -> httpx.Response:
    headers = {"X-Bench-Key": key} if key else {}
    response = httpx.get(server.url + path, headers=headers, timeout=30)
    assert response.status_code == 200, (path, response.text[:300])
    return response


def live_events(server: RunningServer, channel: str, send: Callable[[], None]) -> str:
    """What an anonymous watcher of `channel` receives while `send()` runs, up to the last
    task's end, as text."""
    async def watch_while_sending() -> str:
        seen: list[dict[str, Any]] = []
        async with watch(server, channel) as ws:
            json.loads(await ws.recv())  # hello
            await asyncio.to_thread(send)
            while sum(e["kind"] == "task.end" for e in seen) < 1:
                seen += (await next_events(ws))["events"]
        return json.dumps(seen)

    return asyncio.run(watch_while_sending())


# ---- cost fields ---------------------------------------------------------------------------

COST_SECRETS = ("secret-cost-text", "secret-cost-object", "secret-breakdown-source",
                "secret-breakdown-note", "secret-stored-before")


def cost_events(task_id: str) -> list[dict[str, Any]]:
    """A task whose cost logs hold text and an object where a number belongs, and whose
    breakdown carries free text beside its amounts."""
    start, end = task_events(task_id, input={"q": "x"}, output="y")
    logs = [ev("task.log", task_id, name="search", data={"label": "cost",
                                                         "cost_usd": "secret-cost-text"}),
            ev("task.log", task_id, name="search",
               data={"label": "cost", "cost_usd": {"note": "secret-cost-object"},
                     "cost_details": {"source": "manual"}})]
    end["cost_usd"] = 0.002
    end["cost_breakdown"] = [
        {"source": "secret-breakdown-source", "amount_usd": 0.002, "tokens": 12},
        {"note": "secret-breakdown-note", "amount_usd": "0.001"}]
    return [start, *logs, end]


def a_cost_log_stored_before_typing(server: RunningServer, login: str, slug: str,
                                    task_id: str) -> None:
    """A cost log as a store holds it from before ingest typed cost fields: text as its amount."""
    event_id, at = f"{task_id}-old-cost", ts()
    body = {"id": event_id, "kind": "task.log", "ts": at, "task_id": task_id, "name": "search",
            "data": {"label": "cost", "cost_usd": "secret-stored-before"}}
    server.store.ingest.ingest(login, AgentMeta(slug=slug),
                               [CleanEvent(id=event_id, kind="task.log", ts=at, task_id=task_id,
                                    body=body)])


def test_cost_fields_that_are_not_numbers_are_content(server_on_each_store: RunningServer
                                                      ) -> None:
    server = server_on_each_store
    login = new_login()
    key = server.create_key(login)
    assert post(server, batch("coster", task_events("first")), key).status_code == 200

    def send() -> None:
        r = post(server, batch("coster", cost_events("t1")), key)
        assert r.status_code == 200, r.text
    feed = live_events(server, f"{login}/coster", send)
    a_cost_log_stored_before_typing(server, login, "coster", "t1")

    assert not any(secret in feed for secret in COST_SECRETS), feed
    for path in surfaces(login, "coster", "t1"):
        text = get(server, path).text
        assert not any(secret in text for secret in COST_SECRETS), path
    task = get(server, f"/api/agents/{login}/coster/tasks/t1").json()
    assert task["cost_usd"] == 0.002 and task["content_hidden"] is True
    assert task["cost_breakdown"] == [{"amount_usd": 0.002, "tokens": 12}, {}]
    costs = [e["data"] for e in task["events"] if e["kind"] == "task.log"]
    assert costs == [{"label": "cost", "cost_usd": None}] * 3

    owner = get(server, f"/api/agents/{login}/coster/tasks/t1", key).json()
    text = json.dumps(owner)
    assert all(secret in text for secret in COST_SECRETS)
    details = [e["data"]["cost_details"] for e in owner["events"]
               if e["kind"] == "task.log" and "cost_details" in e["data"]]
    assert details == [{"cost_usd": "secret-cost-text"},
                       {"source": "manual", "cost_usd": {"note": "secret-cost-object"}}]
    assert owner["cost_usd"] == 0.002, "text is never summed as a cost"


# ---- span attributes -----------------------------------------------------------------------

ATTRIBUTE_SECRETS = {
    "llm.prompt_template.variables": '{"city": "secret-template-variable"}',
    "traceloop.entity.input": '{"query": "secret-traceloop-input"}',
    "langfuse.observation.input": "secret-langfuse-input",
    "pydantic_ai.all_messages": '[{"role": "user", "content": "secret-pydantic-message"}]',
    "all_messages_events": '[{"content": "secret-all-messages-event"}]',
    "gen_ai.agent.name": "secret agent name, free text under a name's key",
    "gen_ai.input.messages": '[{"role": "user", "content": "secret-input-message"}]',
}
"""Attributes instrumentations fill with prompts and messages (and an input Bench maps)."""
SAFE = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 30, "http.status_code": 200}


def export_chat(server: RunningServer, key: str, slug: str, answer: str) -> str:
    """One chat span through the real OpenTelemetry SDK and its OTLP/HTTP (protobuf)
    exporter; its task id."""
    provider = TracerProvider(resource=Resource.create({"service.name": slug}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
        endpoint=server.url + "/v1/traces", headers={"X-Bench-Key": key, "X-Bench-Agent": slug})))
    with provider.get_tracer("tests").start_as_current_span("chat gpt-4o", attributes={
            **ATTRIBUTE_SECRETS, **SAFE,  # first: a live summary previews 240 characters
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "content": answer}])}
    ) as span:
        context = span.get_span_context()
    provider.shutdown()
    return f"{context.trace_id:032x}-{context.span_id:016x}"


def secrets_in(text: str) -> list[str]:
    return [word for word in ("secret-template-variable", "secret-traceloop-input",
                              "secret-langfuse-input", "secret-pydantic-message",
                              "secret-all-messages-event", "secret agent name",
                              "secret-input-message") if word in text]


def test_span_attributes_not_known_to_be_safe_are_hidden_with_inputs(
        server_on_each_store: RunningServer) -> None:
    server, login = server_on_each_store, new_login()
    key = server.create_key(login)
    export_chat(server, key, "otel-chat", "first answer")  # made hiding both; show outputs
    patch(server, f"{login}/otel-chat", key, hide_outputs=False)

    task_ids: list[str] = []
    feed = live_events(server, f"{login}/otel-chat", lambda: task_ids.append(
        export_chat(server, key, "otel-chat", "the shown answer")))
    task_id, = task_ids

    assert secrets_in(feed) == [], feed
    for path in surfaces(login, "otel-chat", task_id):
        assert secrets_in(get(server, path).text) == [], path
    mcp = call(server, "get_agent", {"login": login, "slug": "otel-chat"})
    assert not mcp.is_error and secrets_in(json.dumps(mcp.structured_content)) == []

    span, = get(server, f"/api/agents/{login}/otel-chat/runs/{task_id}").json()["spans"]
    assert span["output"] == [{"role": "assistant", "content": "the shown answer"}]
    assert span["input"] == HIDDEN and span["content_hidden"] is True
    trace_id, span_id = task_id.split("-")
    assert span["metadata"] == {"trace_id": trace_id, "span_id": span_id,
                                "service": "otel-chat", "attributes": SAFE,
                                "other_attributes": HIDDEN}

    for path in (f"/api/agents/{login}/otel-chat/runs/{task_id}",
                 f"/api/agents/{login}/otel-chat/tasks/{task_id}"):
        assert len(secrets_in(get(server, path, key).text)) == len(ATTRIBUTE_SECRETS), path
    owned, = get(server, f"/api/agents/{login}/otel-chat/runs/{task_id}", key).json()["spans"]
    assert owned["metadata"]["attributes"]["traceloop.entity.input"] == \
        ATTRIBUTE_SECRETS["traceloop.entity.input"]
