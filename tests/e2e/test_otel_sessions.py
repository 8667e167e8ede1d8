"""The real OpenTelemetry SDK and OTLP/HTTP exporter: a multi-turn agent whose model calls carry
GenAI's `gen_ai.conversation.id` (its root `invoke_agent` spans do not) and whose roots carry
`enduser.id` makes one session of its turns, in order, with the user shown to visitors only as
a pseudonym and kept out of the spans' attributes they see."""

from __future__ import annotations

import json
import uuid

import httpx
from bench_core.domain.models import AgentRef
from bench_core.domain.privacy import pseudonym
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.conftest import RunningServer

QUESTIONS = ("Book a flight to Lisbon", "Make it Friday", "Window seat, please")


def chat_turns(server: RunningServer, key: str, conversation: str) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "Travel Desk"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
        endpoint=f"{server.url}/v1/traces", headers={"X-Bench-Key": key})))
    tracer = provider.get_tracer("travel-desk")
    for question in QUESTIONS:
        with tracer.start_as_current_span("invoke_agent travel-desk", attributes={
                "gen_ai.operation.name": "invoke_agent", "enduser.id": "traveller-42"}), \
                tracer.start_as_current_span("chat gpt-4.1-mini", attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4.1-mini",
                    "gen_ai.conversation.id": conversation,
                    "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 20,
                    "gen_ai.input.messages": json.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": question}]}]),
                    "gen_ai.output.messages": json.dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": "Done."}]}])}):
            pass
    provider.shutdown()


def test_the_conversation_id_makes_one_session_of_the_turns(bench_server: RunningServer) -> None:
    login = "x" + uuid.uuid4().hex[:10]
    key = bench_server.create_key(login)
    bench_server.showing_content(login, "travel-desk")
    conversation = f"conv-{uuid.uuid4().hex[:8]}"
    chat_turns(bench_server, key, conversation)
    path = f"/api/agents/{login}/travel-desk/sessions/{conversation}"
    answer = bench_server.get(path)
    assert answer["run_count"] == 3 and answer["successes"] == 3
    assert [run["name"] for run in answer["runs"]] == ["invoke_agent travel-desk"] * 3
    asked = [run["messages"][0]["parts"][0]["text"] for run in answer["runs"]]
    assert asked == list(QUESTIONS), "each turn from its model call, in order"
    assert answer["tokens"] == 3 * 120
    assert answer["user"] == pseudonym(AgentRef(login, "travel-desk"), "traveller-42")
    assert bench_server.get(path, key)["user"] == "traveller-42"
    listed = bench_server.get(f"/api/agents/{login}/travel-desk/sessions")["sessions"]
    assert [s["session_id"] for s in listed] == [conversation]
    run = answer["runs"][0]["run_id"]
    seen = httpx.get(f"{bench_server.url}/api/agents/{login}/travel-desk/runs/{run}").text
    assert "traveller-42" not in seen, "no attribute or field shows the raw user to a visitor"
