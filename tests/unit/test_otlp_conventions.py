"""The attribute conventions OTLP spans arrive in (bench_core.ingest.otlp.conventions),
GenAI content log events (content), and how content folds into a task in any order (folding)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from bench_core.domain.folding import fold_task, merge_content
from bench_core.domain.models import CleanEvent
from bench_core.ingest.otlp.content import group_content
from bench_core.ingest.otlp.log_decode import LogRecord
from bench_core.settings import Limits

from tests.unit.test_otlp_mapping import SPAN, TRACE, by_kind, span

NOW = datetime(2026, 12, 2, 16, tzinfo=UTC)


def test_openinference_llm_spans_give_messages_tokens_model_and_provider() -> None:
    events = by_kind(span(**{
        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o", "llm.provider": "openai",
        "llm.token_count.prompt": 100, "llm.token_count.completion": 20,
        "llm.token_count.prompt_details.cache_read": 40,
        "llm.input_messages.1.message.role": "user", "llm.input_messages.1.message.content": "b",
        "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": "a",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "c",
        "input.value": '{"ignored": "the messages say it better"}'}))
    assert events["task.start"]["input"] == [{"role": "system", "content": "a"},
                                             {"role": "user", "content": "b"}]
    assert events["task.end"]["output"] == [{"role": "assistant", "content": "c"}]
    evidence = events["task.log"]["data"]
    assert (evidence["provider"], evidence["model"]) == ("openai", "gpt-4o")
    assert (evidence["input_tokens"], evidence["output_tokens"],
            evidence["cache_read_input_tokens"]) == (100, 20, 40)
    assert evidence["cost_usd"] > 0
    assert not any(k.startswith("llm.input") for k in events["task.end"]["data"]["attributes"])


def test_openinference_values_keep_their_mime_type_and_agents_are_not_evidence() -> None:
    events = by_kind(span(**{"openinference.span.kind": "AGENT", "input.value": "[not json]",
                             "input.mime_type": "text/plain", "output.value": '{"a": 1}',
                             "output.mime_type": "application/json",
                             "llm.token_count.prompt": 500, "tool.name": "search"}))
    assert events["task.start"]["input"] == "[not json]"
    assert events["task.end"]["output"] == {"a": 1}
    assert "task.log" not in events  # an AGENT sums the LLM spans below it
    assert events["task.start"]["name"] == "chat gpt-4o search"


def test_ai_sdk_wrappers_are_not_evidence_and_their_steps_are() -> None:
    step = by_kind(span(**{"ai.operationId": "ai.generateText.doGenerate",
                           "ai.model.provider": "anthropic.messages",
                           "gen_ai.system": "anthropic.messages",
                           "ai.model.id": "claude-sonnet-4-5", "ai.usage.inputTokens": 10,
                           "ai.usage.outputTokens": 2, "ai.prompt.messages": '[{"role": "user"}]',
                           "ai.response.text": "hi"}))
    assert step["task.log"]["data"]["provider"] == "anthropic"
    assert step["task.log"]["data"]["model"] == "claude-sonnet-4-5"
    assert step["task.start"]["input"] == [{"role": "user"}]
    assert step["task.end"]["output"] == "hi"
    wrapper = by_kind(span(**{"ai.operationId": "ai.streamText", "ai.usage.inputTokens": 10,
                              "ai.prompt": '{"prompt": "x"}'}))
    assert "task.log" not in wrapper and wrapper["task.start"]["input"] == {"prompt": "x"}


# Mastra's spans as @mastra/otel-exporter sends them (captured from 1.4.0 and 0.3.3).


def test_mastra_1x_content_by_span_type_is_input_and_output_never_metadata() -> None:
    run = by_kind(span(**{
        "gen_ai.operation.name": "invoke_agent", "mastra.span.type": "agent_run",
        "mastra.agent_run.input": "Weather in Lisbon?",
        "mastra.agent_run.output": '{"text": "Sunny.", "files": []}',
        "gen_ai.system_instructions": "You answer weather questions.",
        "gen_ai.agent.name": "weather", "mastra.metadata.runId": "r-1"}))
    assert run["task.start"]["input"] == {"system_instructions": "You answer weather questions.",
                                          "messages": "Weather in Lisbon?"}
    assert run["task.end"]["output"] == {"text": "Sunny.", "files": []}
    assert run["task.end"]["data"]["attributes"] == {
        "gen_ai.operation.name": "invoke_agent", "mastra.span.type": "agent_run",
        "gen_ai.agent.name": "weather", "mastra.metadata.runId": "r-1"}
    step = by_kind(span(**{"mastra.span.type": "model_step",
                           "mastra.model_step.input": '[{"role": "user", "content": "hi"}]',
                           "mastra.model_step.step_index": 0}))
    assert step["task.start"]["input"] == [{"role": "user", "content": "hi"}]
    assert step["task.end"]["data"]["attributes"]["mastra.model_step.step_index"] == 0


def test_mastra_model_calls_are_evidence_with_the_provider_not_its_api() -> None:
    call = by_kind(span(**{
        "gen_ai.operation.name": "chat", "mastra.span.type": "model_inference",
        "gen_ai.provider.name": "openai.chat", "gen_ai.request.model": "gpt-4.1-mini",
        "gen_ai.usage.input_tokens": 1000, "gen_ai.usage.output_tokens": 50,
        "gen_ai.output.messages": '[{"role": "assistant", "parts": []}]'}))
    evidence = call["task.log"]["data"]
    assert (evidence["provider"], evidence["model"]) == ("openai", "gpt-4.1-mini")
    assert evidence["cost_usd"] == pytest.approx((1000 * 0.4 + 50 * 1.6) / 1e6)
    bedrock = by_kind(span(**{"mastra.span.type": "model_inference",
                              "gen_ai.provider.name": "aws.bedrock",
                              "gen_ai.usage.input_tokens": 10}))
    assert bedrock["task.log"]["data"]["provider"] == "aws.bedrock"  # a GenAI name, kept


def test_mastra_0x_bare_input_and_output_are_content() -> None:
    prompt = '{"messages": [{"role": "user", "content": "Weather in Lisbon?"}]}'
    call = by_kind(span(**{
        "gen_ai.operation.name": "chat", "mastra.span.type": "model_generation",
        "input": prompt, "gen_ai.prompt": prompt, "output": '{"text": "Sunny."}',
        "gen_ai.completion": '{"text": "Sunny."}', "gen_ai.system": "openai.chat",
        "gen_ai.request.model": "gpt-4.1-mini", "gen_ai.usage.input_tokens": 2200,
        "gen_ai.usage.output_tokens": 80, "runId": "r-1"}))
    assert call["task.start"]["input"] == {"messages": [{"role": "user",
                                                         "content": "Weather in Lisbon?"}]}
    assert call["task.end"]["output"] == {"text": "Sunny."}
    assert call["task.log"]["data"]["provider"] == "openai"
    assert call["task.log"]["data"]["input_tokens"] == 2200
    tool = by_kind(span(**{"gen_ai.operation.name": "tool.execute", "mastra.span.type": "tool_call",
                           "input": '{"city": "Lisbon"}', "gen_ai.tool.input": '{"city": "Lisbon"}',
                           "output": "sunny", "gen_ai.tool.output": "sunny",
                           "gen_ai.tool.name": "weather"}))
    assert (tool["task.start"]["input"], tool["task.end"]["output"]) == ({"city": "Lisbon"}, "sunny")
    for event in (call, tool):
        assert not {"input", "output", "gen_ai.prompt", "gen_ai.completion", "gen_ai.tool.input",
                    "gen_ai.tool.output"} & set(event["task.end"]["data"]["attributes"])


def record(name: str, body: Any = None, **attributes: Any) -> LogRecord:
    return LogRecord(TRACE, SPAN, 1, name, body, attributes, {})


def test_per_message_events_without_content_attach_nothing() -> None:
    [content], refused = group_content([
        record("gen_ai.user.message", {"role": "user"}),
        record("gen_ai.choice", {"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant"}}),
        record("app.log", "an ordinary line")])
    assert refused == {} and content.event(Limits().max_field_bytes, NOW) is None


def test_the_details_event_carries_instructions_input_and_output() -> None:
    [content], _ = group_content([record(
        "gen_ai.client.inference.operation.details",
        **{"gen_ai.system_instructions": '[{"type": "text", "content": "Be brief."}]',
           "gen_ai.input.messages": [{"role": "user", "parts": []}],
           "gen_ai.output.messages": '[{"role": "assistant", "parts": []}]'})])
    event = content.event(Limits().max_field_bytes, NOW)
    assert event is not None and event.kind == "task.content"
    assert event.body["input"] == {"system_instructions": [{"type": "text", "content": "Be brief."}],
                                   "messages": [{"role": "user", "parts": []}]}
    assert event.body["output"] == [{"role": "assistant", "parts": []}]
    [again], _ = group_content([record(
        "gen_ai.client.inference.operation.details",
        **{"gen_ai.system_instructions": '[{"type": "text", "content": "Be brief."}]',
           "gen_ai.input.messages": [{"role": "user", "parts": []}],
           "gen_ai.output.messages": '[{"role": "assistant", "parts": []}]'})])
    assert again.event(Limits().max_field_bytes, NOW).id == event.id  # same content, same id


def ev(kind: str, **body: Any) -> CleanEvent:
    return CleanEvent(id=kind, kind=kind, ts="2026-01-01T00:00:00.000Z", task_id="t",
                      body={"kind": kind, "task_id": "t", **body})


def test_content_folds_in_whatever_order_it_arrives() -> None:
    start, end = ev("task.start", name="chat", input=None), ev("task.end", status="success",
                                                               output=None)
    content = ev("task.content", input=[{"role": "user"}], output=["ok"])
    for order in ([start, content, end], [content, start, end], [start, end, content]):
        task = fold_task(None, "t", order)
        assert (task.input, task.output, task.status) == ([{"role": "user"}], ["ok"], "success")
    failed = fold_task(None, "t", [content, ev("task.end", status="failed", output="boom")])
    assert failed.output == "boom"


def test_merged_content_adds_only_what_is_missing() -> None:
    assert merge_content(None, [1]) == [1]
    assert merge_content([1, 2], [2, 3]) == [1, 2, 3]
    assert merge_content("span text", ["event"]) == "span text"
