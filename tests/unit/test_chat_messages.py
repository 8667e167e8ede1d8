"""`domain.messages.conversation` reads each convention Bench stores into the same messages:
roles, text, tool calls with their arguments, tool results and named attachments. The shapes
are the ones the ingest adapters store (`ingest/otlp/conventions.py`, `ingest/otlp/content.py`,
the SDK's adapters), as captured from the real instrumentations."""

from __future__ import annotations

from typing import Any

from bench_core.domain.messages import Message, Part, conversation


def shape(messages: list[Message] | None) -> list[tuple[str, str, list[tuple[str, ...]]]]:
    assert messages is not None
    return [(m.role, m.side, [_part(p) for p in m.parts]) for m in messages]


def _part(p: Part) -> tuple[str, ...]:
    return tuple(x for x in (p.kind, p.name, p.call_id, p.text) if x is not None)


ARGS = '{\n  "city": "Lisbon"\n}'


def test_otel_genai_parts_with_instructions_tool_calls_and_results() -> None:
    """openai-v2 2.4b0 (span attributes and log events store the same)."""
    asked = {"system_instructions": [{"type": "text", "content": "Be brief."}], "messages": [
        {"role": "user", "parts": [{"type": "text", "content": "Weather?"},
                                   {"type": "uri", "modality": "image", "uri": "https://x/y.png"}]},
        {"role": "assistant", "parts": [{"arguments": {}, "name": "lookup", "id": "call_0",
                                         "type": "tool_call"}]},
        {"role": "tool", "parts": [{"response": "Lisbon", "id": "call_0",
                                    "type": "tool_call_response"}]}]}
    answered = [{"role": "assistant", "finish_reason": "tool_calls", "parts": [
        {"arguments": {"city": "Lisbon"}, "name": "get_weather", "id": "call_1",
         "type": "tool_call"}]}]
    chat = conversation(asked, answered)
    assert shape(chat) == [
        ("system", "input", [("text", "Be brief.")]),
        ("user", "input", [("text", "Weather?"), ("attachment", "image", "https://x/y.png")]),
        ("assistant", "input", [("tool_call", "lookup", "call_0", "{}")]),
        ("tool", "input", [("tool_result", "call_0", "Lisbon")]),
        ("assistant", "output", [("tool_call", "get_weather", "call_1", ARGS)])]
    assert chat is not None and chat[-1].finish_reason == "tool_calls"


def test_older_genai_events_and_a_choice() -> None:
    asked = [{"role": "system", "content": "Be brief."},
             {"role": "assistant", "tool_calls": [{"id": "c0", "type": "function", "function": {
                 "name": "lookup", "arguments": '{"city": "Lisbon"}'}}]},
             {"role": "tool", "id": "c0", "content": "sunny"}]
    answered = [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "Sunny."}}]
    assert shape(conversation(asked, answered)) == [
        ("system", "input", [("text", "Be brief.")]),
        ("assistant", "input", [("tool_call", "lookup", "c0", ARGS)]),
        ("tool", "input", [("tool_result", "sunny")]),
        ("assistant", "output", [("text", "Sunny.")])]


def test_openinference_flattened_messages() -> None:
    """openinference-instrumentation-openai 0.1.66, as `conventions._flattened` stores it."""
    asked = [{"role": "system", "content": "Be brief."},
             {"role": "user", "contents.0.message_content.type": "text",
              "contents.0.message_content.text": "Weather?",
              "contents.1.message_content.type": "image",
              "contents.1.message_content.image.image.url": "data:image/png;base64,AAAA"},
             {"role": "tool", "tool_call_id": "call_0", "content": "Lisbon"}]
    answered = [{"role": "assistant", "tool_calls.0.tool_call.id": "call_1",
                 "tool_calls.0.tool_call.function.name": "get_weather",
                 "tool_calls.0.tool_call.function.arguments": '{"city": "Lisbon"}'}]
    assert shape(conversation(asked, answered)) == [
        ("system", "input", [("text", "Be brief.")]),
        ("user", "input", [("text", "Weather?"), ("attachment", "image", "image/png")]),
        ("tool", "input", [("tool_result", "call_0", "Lisbon")]),
        ("assistant", "output", [("tool_call", "get_weather", "call_1", ARGS)])]


def test_vercel_ai_prompt_messages_and_its_tool_call_answer() -> None:
    asked = [{"role": "system", "content": "You answer weather questions."},
             {"role": "user", "content": [{"type": "text", "text": "Weather in Lisbon?"},
                                          {"type": "file", "mediaType": "application/pdf",
                                           "filename": "forecast.pdf", "data": "JVBERi0x"}]},
             {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "t1",
                                                "toolName": "weather",
                                                "input": {"city": "Lisbon"}}]},
             {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "t1",
                                           "toolName": "weather",
                                           "output": {"type": "json", "value": "sunny"}}]}]
    chat = shape(conversation(asked, [{"toolCallType": "function", "toolCallId": "t2",
                                       "toolName": "weather", "args": '{"city": "Lisbon"}'}]))
    assert chat[1] == ("user", "input", [("text", "Weather in Lisbon?"),
                                         ("attachment", "file", "forecast.pdf")])
    assert chat[2] == ("assistant", "input", [("tool_call", "weather", "t1", ARGS)])
    assert chat[3][2][0][:3] == ("tool_result", "weather", "t1") and "sunny" in chat[3][2][0][3]
    assert chat[4] == ("assistant", "output", [("tool_call", "weather", "t2", ARGS)])
    assert shape(conversation({"system": "Be kind.", "prompt": "Hi"}, "Hello.")) == [
        ("system", "input", [("text", "Be kind.")]), ("user", "input", [("text", "Hi")]),
        ("assistant", "output", [("text", "Hello.")])]


def test_mastra_1x_agent_prompt_and_its_answer() -> None:
    chat = conversation({"system_instructions": "You answer weather questions.",
                         "messages": "What is the weather in Lisbon?"},
                        {"text": "Sunny.", "files": []})
    assert shape(chat) == [("system", "input", [("text", "You answer weather questions.")]),
                           ("user", "input", [("text", "What is the weather in Lisbon?")]),
                           ("assistant", "output", [("text", "Sunny.")])]


def test_mastra_prompt_and_text_answer() -> None:
    chat = conversation({"messages": [{"role": "user", "content": "Weather in Lisbon?"}]},
                        {"text": "Sunny.", "files": []})
    assert shape(chat) == [("user", "input", [("text", "Weather in Lisbon?")]),
                           ("assistant", "output", [("text", "Sunny.")])]


def test_anthropic_and_openai_sdk_blocks() -> None:
    asked = [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j"}},
        {"type": "tool_result", "tool_use_id": "tu1", "content": "42"}]},
             {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"},
                                               {"type": "tool_use", "id": "tu2", "name": "calc",
                                                "input": {"x": 1}}]}]
    assert shape(conversation(asked, None)) == [
        ("user", "input", [("attachment", "image", "image/jpeg"),
                           ("tool_result", "tu1", "42")]),
        ("assistant", "input", [("reasoning", "hm"),
                                ("tool_call", "calc", "tu2", '{\n  "x": 1\n}')])]


def test_the_sdk_adapters_requests_and_answers() -> None:
    """`bench.adapters.anthropic` stores `{"system", "messages"}` and the answer's text or
    blocks; `bench.adapters.openai` the messages and the answer's message."""
    anthropic = conversation(
        {"system": [{"type": "text", "text": "Be brief."}],
         "messages": [{"role": "user", "content": "Weather?"}]},
        [{"type": "thinking"}, {"type": "text", "text": "Checking."},
         {"type": "tool_use", "id": "tu1", "name": "get_weather", "input": {"city": "Lisbon"}}])
    assert shape(anthropic) == [
        ("system", "input", [("text", "Be brief.")]), ("user", "input", [("text", "Weather?")]),
        ("assistant", "output", [("reasoning", ""), ("text", "Checking."),
                                 ("tool_call", "get_weather", "tu1", ARGS)])]
    openai = conversation([{"role": "user", "content": "Weather?"}],
                          {"role": "assistant", "content": "Sunny.", "refusal": None})
    assert shape(openai) == [("user", "input", [("text", "Weather?")]),
                             ("assistant", "output", [("text", "Sunny.")])]


def test_langchain_messages_and_answers() -> None:
    asked = [{"role": "system", "content": "Be brief."}, {"role": "human", "content": "Hi"},
             {"role": "ai", "content": "", "tool_calls": [
                 {"name": "lookup", "args": {"city": "Lisbon"}, "id": "lc1", "type": "tool_call"}]},
             {"role": "tool", "content": "sunny", "tool_call_id": "lc1", "name": "lookup"}]
    chat = conversation(asked, {"content": "", "tool_calls": [
        {"name": "lookup", "args": {"city": "Porto"}, "id": "lc2", "type": "tool_call"}]})
    assert [m.label for m in chat or []] == ["system", "human", "ai", "tool", "assistant"]
    assert shape(chat)[2:] == [
        ("assistant", "input", [("tool_call", "lookup", "lc1", ARGS)]),
        ("tool", "input", [("tool_result", "lookup", "lc1", "sunny")]),
        ("assistant", "output", [("tool_call", "lookup", "lc2", ARGS.replace("Lisbon", "Porto"))])]


def test_what_is_not_a_conversation_is_none() -> None:
    not_chats: list[tuple[Any, Any]] = [
        ("Weather in Lisbon?", {"text": "Sunny."}), ({"city": "Lisbon"}, "sunny"), (None, None),
        ([{"page_content": "x"}], None), ([{"type": "function", "function": {"name": "f"}}], None),
        ("[hidden by owner]", "[hidden by owner]")]
    for asked, answered in not_chats:
        assert conversation(asked, answered) is None, (asked, answered)
    assert shape(conversation(None, [{"role": "assistant", "parts": []}])) == [
        ("assistant", "output", [])]
