"""`wrap_anthropic` with the real `anthropic` package, its HTTP transport pointed at a loopback
server answering in Anthropic's response shapes (tests/sdk/fake_providers.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import bench
import pytest
from anthropic.lib.streaming import AsyncMessageStream, MessageStream
from bench.adapters.anthropic import wrap_anthropic

from tests.sdk.conftest import MemoryTransport
from tests.sdk.fake_providers import CLAUDE_MODEL, TEXT, provider_server
from tests.sdk.test_adapters_openai import recorded

REQUEST = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": "Be brief.",
           "messages": [{"role": "user", "content": "What is the capital of France?"}]}
TOOLS = [{"name": "get_weather", "description": "Weather now",
          "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
EVIDENCE = {"label": "evidence", "provider": "anthropic", "model": CLAUDE_MODEL,
            "operation": "chat", "input_tokens": 100 + 5000 + 2000, "output_tokens": 50,
            "cache_read_input_tokens": 5000, "cache_creation_input_tokens": 2000,
            "reasoning_output_tokens": None, "cost_usd": None, "price_source": None}
"""Anthropic counts cache reads and writes apart from input_tokens; evidence counts them in."""


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with provider_server() as url:
        yield url


def clients(base_url: str, agent: bench.BenchAgent, cls: type = anthropic.Anthropic
            ) -> tuple[Any, Any]:
    plain = cls(api_key="sk-ant-test", base_url=base_url, max_retries=0)
    return plain, wrap_anthropic(cls(api_key="sk-ant-test", base_url=base_url, max_retries=0),
                                 agent)


def test_a_message_is_a_subtask_with_evidence(base_url: str, make_agent: Callable[..., Any],
                                              memory: MemoryTransport) -> None:
    agent = make_agent()
    plain, wrapped = clients(base_url, agent)
    expected = plain.messages.create(**REQUEST)
    with agent.span("answer") as task:
        got = wrapped.messages.create(**REQUEST)
    assert type(got) is type(expected) and got == expected
    call = recorded(agent, memory)["chat claude-sonnet-4-5"]
    assert call["start"]["parent_task_id"] == task.task_id
    assert call["start"]["input"] == {"system": "Be brief.", "messages": REQUEST["messages"]}
    assert call["evidence"]["data"] == EVIDENCE
    assert call["end"]["status"] == "success" and call["end"]["output"] == "".join(TEXT)
    assert call["end"]["data"]["provider"] == "anthropic"


def test_a_streamed_create_is_recorded_from_its_events(base_url: str,
                                                       make_agent: Callable[..., Any],
                                                       memory: MemoryTransport) -> None:
    agent = make_agent()
    plain, wrapped = clients(base_url, agent)
    expected = list(plain.messages.create(**REQUEST, stream=True))
    stream = wrapped.messages.create(**REQUEST, stream=True)
    assert type(stream) is anthropic.Stream
    assert list(stream) == expected
    call = recorded(agent, memory)["chat claude-sonnet-4-5"]
    assert call["evidence"]["data"] == EVIDENCE
    assert call["end"]["output"] == "".join(TEXT) and call["end"]["data"]["stream"] is True


@pytest.mark.parametrize("tools", [False, True])
def test_messages_stream_yields_the_sdks_own_stream(base_url: str, make_agent: Callable[..., Any],
                                                    memory: MemoryTransport, tools: bool) -> None:
    agent = make_agent()
    plain, wrapped = clients(base_url, agent)
    request = {**REQUEST, **({"tools": TOOLS} if tools else {})}
    with plain.messages.stream(**request) as stream:
        expected = stream.get_final_message()
    with agent.span("answer") as task, wrapped.messages.stream(**request) as stream:
        assert type(stream) is MessageStream
        got = stream.get_final_message()
    assert got == expected
    call = recorded(agent, memory)["chat claude-sonnet-4-5"]
    assert call["start"]["parent_task_id"] == task.task_id
    assert call["evidence"]["data"] == EVIDENCE
    if tools:
        assert call["end"]["output"] == [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather",
             "input": {"city": "Paris"}}]
    else:
        assert call["end"]["output"] == "".join(TEXT)


def test_a_stream_left_unread_still_ends_its_task(base_url: str, make_agent: Callable[..., Any],
                                                  memory: MemoryTransport) -> None:
    agent = make_agent()
    _, wrapped = clients(base_url, agent)
    with wrapped.messages.stream(**REQUEST):
        pass
    end = recorded(agent, memory)["chat claude-sonnet-4-5"]["end"]
    assert end["status"] == "success" and end["data"]["usage_reported"] is False


def test_errors_are_raised_unchanged_and_fail_the_task(base_url: str,
                                                       make_agent: Callable[..., Any],
                                                       memory: MemoryTransport) -> None:
    agent = make_agent()
    plain, wrapped = clients(base_url, agent)
    bad = {**REQUEST, "model": "fail"}
    with pytest.raises(anthropic.BadRequestError) as expected:
        plain.messages.create(**bad)
    with pytest.raises(anthropic.BadRequestError) as got:
        wrapped.messages.create(**bad)
    assert (got.value.status_code, got.value.body) == (expected.value.status_code,
                                                       expected.value.body)
    with pytest.raises(anthropic.BadRequestError), wrapped.messages.stream(**bad):
        pass
    assert agent.flush_sync(timeout=10)
    ends = [e for e in memory.events if e["kind"] == "task.end"]
    assert [e["status"] for e in ends] == ["failed", "failed"]
    assert all("is not a model" in e["output"] for e in ends)


def test_async_clients_are_recorded_the_same_way(base_url: str, make_agent: Callable[..., Any],
                                                 memory: MemoryTransport) -> None:
    agent = make_agent()
    plain, wrapped = clients(base_url, agent, anthropic.AsyncAnthropic)

    async def run() -> str:
        async with agent.span("plan") as task:
            assert await wrapped.messages.create(**REQUEST) == await plain.messages.create(
                **REQUEST)
            expected = [e async for e in await plain.messages.create(**REQUEST, stream=True)]
            assert [e async for e in await wrapped.messages.create(**REQUEST, stream=True)] == \
                expected
            async with wrapped.messages.stream(**REQUEST) as stream:
                assert type(stream) is AsyncMessageStream
                assert await stream.get_final_text() == "".join(TEXT)
        return task.task_id

    parent = asyncio.run(run())
    assert agent.flush_sync(timeout=10)
    calls = [e for e in memory.events if e["kind"] == "task.end" and e["name"] != "plan"]
    evidence = [e["data"] for e in memory.events if e["kind"] == "task.log"]
    assert len(calls) == 3 and {e["parent_task_id"] for e in calls} == {parent}
    assert evidence == [EVIDENCE] * 3
