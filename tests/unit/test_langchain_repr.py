"""LangChain reprs an older client sent are read back as messages, and nothing else is: no
code runs, and text that is not such a repr (or one the SDK cut short) stays as sent."""

from __future__ import annotations

from bench_core.ingest.langchain_repr import MAX_CHARS, from_repr

PROMPT = ("ChatPromptValue(messages=[SystemMessage(content='Be brief.', additional_kwargs={}, "
          "response_metadata={}), HumanMessage(content='Weather in Lisbon?', "
          "additional_kwargs={}, response_metadata={}, id=None)])")


def test_prompt_values_and_messages_become_message_dicts() -> None:
    assert from_repr(PROMPT) == [{"role": "system", "content": "Be brief."},
                                 {"role": "human", "content": "Weather in Lisbon?"}]
    assert from_repr("StringPromptValue(text='Capital of Italy?')") == "Capital of Italy?"
    assert from_repr(
        "AIMessageChunk(content='', tool_calls=[{'name': 'get_weather', 'args': {'city': "
        "'Lisbon'}, 'id': 'c1', 'type': 'tool_call'}], usage_metadata={'input_tokens': 9})"
    ) == {"role": "ai", "content": "", "tool_calls": [
        {"name": "get_weather", "args": {"city": "Lisbon"}, "id": "c1", "type": "tool_call"}]}
    assert from_repr("[ToolMessage(content='sunny', tool_call_id='c1'), "
                     "ChatMessage(content='hm', role='critic')]") == [
        {"role": "tool", "content": "sunny", "tool_call_id": "c1"},
        {"role": "critic", "content": "hm"}]


def test_anything_else_stays_as_sent() -> None:
    kept = ["HumanMessage(content=__import__('os').system('true'))",
            "HumanMessage(content='x', extra=open('/etc/passwd'))",
            "HumanMessage('positional')", "Document(page_content='x')",
            PROMPT[:120] + "... [1,234 chars truncated]", "HumanMessage(content=b'bytes')",
            "Human: hi", {"role": "human"}, 3,
            "HumanMessage(content='" + "x" * MAX_CHARS + "')"]
    for value in kept:
        assert from_repr(value) == value, value
