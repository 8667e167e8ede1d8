"""`wrap_openai` with the real `openai` package, its HTTP transport pointed at a loopback server
answering in OpenAI's response shapes (tests/sdk/fake_providers.py)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import bench
import openai
import pytest
from bench.adapters.openai import wrap_openai

from tests.conftest import RunningServer
from tests.sdk.conftest import FAST, MemoryTransport
from tests.sdk.fake_providers import CHAT_MODEL, TEXT, provider_server

MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with provider_server() as url:
        yield url + "/v1"


def clients(base_url: str, agent: bench.BenchAgent, cls: type = openai.OpenAI) -> tuple[Any, Any]:
    """The same client twice: as it comes, and wrapped."""
    plain = cls(api_key="sk-test", base_url=base_url, max_retries=0)
    return plain, wrap_openai(cls(api_key="sk-test", base_url=base_url, max_retries=0), agent)


def recorded(agent: bench.BenchAgent, memory: MemoryTransport) -> dict[str, dict[str, Any]]:
    """Task name → its start, evidence and end events."""
    assert agent.flush_sync(timeout=10)
    tasks: dict[str, dict[str, Any]] = {}
    for event in memory.events:
        part = {"task.start": "start", "task.end": "end"}.get(event["kind"])
        if event["kind"] == "task.log" and event["data"].get("label") == "evidence":
            part = "evidence"
        if part:
            tasks.setdefault(event["name"], {})[part] = event
    return tasks


def test_a_chat_completion_is_a_subtask_with_evidence(base_url: str, make_agent: Callable[..., Any],
                                                      memory: MemoryTransport) -> None:
    agent = make_agent()
    plain, wrapped = clients(base_url, agent)
    expected = plain.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    with agent.span("answer") as task:
        got = wrapped.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    assert type(got) is type(expected) and got == expected
    call = recorded(agent, memory)["chat gpt-4o-mini"]
    assert call["start"]["parent_task_id"] == task.task_id
    assert call["start"]["input"] == MESSAGES
    assert call["evidence"]["data"] == {
        "label": "evidence", "provider": "openai", "model": CHAT_MODEL, "operation": "chat",
        "input_tokens": 1200, "output_tokens": 30, "cache_read_input_tokens": 1024,
        "cache_creation_input_tokens": None, "reasoning_output_tokens": 0, "cost_usd": None,
        "price_source": None}
    end = call["end"]
    assert end["status"] == "success" and end["cost_usd"] == 0
    assert end["output"]["content"] == "".join(TEXT)
    assert end["data"]["usage_reported"] is True and end["data"]["stream"] is False
    assert end["duration_ms"] >= 0


def test_a_streamed_chat_takes_its_usage_from_the_final_chunk(
        base_url: str, make_agent: Callable[..., Any], memory: MemoryTransport) -> None:
    agent = make_agent()
    plain, wrapped = clients(base_url, agent)
    options = {"model": "gpt-4o-mini", "messages": MESSAGES, "stream": True,
               "stream_options": {"include_usage": True}}
    expected = list(plain.chat.completions.create(**options))
    stream = wrapped.chat.completions.create(**options)
    assert type(stream) is openai.Stream
    with stream:
        got = list(stream)
    assert got == expected and expected[-1].usage is not None
    call = recorded(agent, memory)["chat gpt-4o-mini"]
    assert (call["evidence"]["data"]["input_tokens"], call["evidence"]["data"]["output_tokens"]
            ) == (1200, 30)
    assert call["end"]["output"] == {"role": "assistant", "content": "".join(TEXT)}
    assert call["end"]["data"]["stream"] is True
    assert call["end"]["data"]["time_to_first_chunk_ms"] >= 0


def test_a_stream_without_include_usage_is_not_changed_and_has_no_evidence(
        base_url: str, make_agent: Callable[..., Any], memory: MemoryTransport) -> None:
    agent = make_agent()
    plain, wrapped = clients(base_url, agent)
    options = {"model": "gpt-4o-mini", "messages": MESSAGES, "stream": True}
    expected = list(plain.chat.completions.create(**options))
    got = list(wrapped.chat.completions.create(**options))
    assert got == expected and all(chunk.choices for chunk in got)
    call = recorded(agent, memory)["chat gpt-4o-mini"]
    assert "evidence" not in call
    assert call["end"]["output"]["content"] == "".join(TEXT)
    assert call["end"]["data"]["usage_reported"] is False


def test_streamed_tool_calls_are_put_together(base_url: str, make_agent: Callable[..., Any],
                                              memory: MemoryTransport) -> None:
    agent = make_agent()
    _, wrapped = clients(base_url, agent)
    for _ in wrapped.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True,
                                             tools=TOOLS, stream_options={"include_usage": True}):
        pass
    output = recorded(agent, memory)["chat gpt-4o-mini"]["end"]["output"]
    assert output["tool_calls"] == [{"id": "call_DdmO9pD3xa9XTPNJ32zg2hcA", "type": "function",
                                     "function": {"name": "get_weather",
                                                  "arguments": '{"city": "Paris"}'}}]


def test_a_stream_read_halfway_ends_its_task_when_closed(
        base_url: str, make_agent: Callable[..., Any], memory: MemoryTransport) -> None:
    agent = make_agent()
    _, wrapped = clients(base_url, agent)
    stream = wrapped.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)
    next(iter(stream))
    stream._iterator.close()  # what dropping the stream does at collection
    end = recorded(agent, memory)["chat gpt-4o-mini"]["end"]
    assert end["status"] == "success"


@pytest.mark.parametrize("stream", [False, True])
def test_responses_are_recorded_streamed_or_not(base_url: str, make_agent: Callable[..., Any],
                                                memory: MemoryTransport, stream: bool) -> None:
    agent = make_agent()
    plain, wrapped = clients(base_url, agent)
    options = {"model": "gpt-4.1", "input": "Say hello", "instructions": "Be brief",
               "stream": stream}
    expected = plain.responses.create(**options)
    got = wrapped.responses.create(**options)
    if stream:
        expected, got = list(expected), list(got)
    assert got == expected
    call = recorded(agent, memory)["chat gpt-4.1"]
    assert call["start"]["input"] == {"instructions": "Be brief", "input": "Say hello"}
    evidence = call["evidence"]["data"]
    assert (evidence["model"], evidence["input_tokens"], evidence["output_tokens"],
            evidence["reasoning_output_tokens"], evidence["cache_read_input_tokens"]
            ) == ("gpt-4.1-2025-04-14", 36, 87, 64, 0)
    assert call["end"]["output"] == "".join(TEXT)


def test_embeddings_record_input_tokens_and_the_shape_of_the_result(
        base_url: str, make_agent: Callable[..., Any], memory: MemoryTransport) -> None:
    agent = make_agent()
    plain, wrapped = clients(base_url, agent)
    texts = ["a", "b"]
    assert wrapped.embeddings.create(model="text-embedding-3-small", input=texts) == \
        plain.embeddings.create(model="text-embedding-3-small", input=texts)
    call = recorded(agent, memory)["embeddings text-embedding-3-small"]
    assert (call["evidence"]["data"]["input_tokens"], call["evidence"]["data"]["output_tokens"]
            ) == (16, None)
    assert call["end"]["output"] == {"embeddings": 2, "dimensions": 3}


def test_an_api_error_is_raised_unchanged_and_fails_the_task(
        base_url: str, make_agent: Callable[..., Any], memory: MemoryTransport) -> None:
    agent = make_agent()
    plain, wrapped = clients(base_url, agent)
    with pytest.raises(openai.BadRequestError) as expected:
        plain.chat.completions.create(model="fail", messages=MESSAGES)
    with pytest.raises(openai.BadRequestError) as got:
        wrapped.chat.completions.create(model="fail", messages=MESSAGES)
    assert (got.value.status_code, got.value.body, str(got.value)) == (
        expected.value.status_code, expected.value.body, str(expected.value))
    end = recorded(agent, memory)["chat fail"]["end"]
    assert end["status"] == "failed" and "does not exist" in end["output"]


def test_async_clients_are_recorded_the_same_way(base_url: str, make_agent: Callable[..., Any],
                                                 memory: MemoryTransport) -> None:
    agent = make_agent()
    plain, wrapped = clients(base_url, agent, openai.AsyncOpenAI)

    async def both(make: Callable[[Any], Any]) -> tuple[Any, Any]:
        return await make(plain), await make(wrapped)

    async def run() -> None:
        async with agent.span("plan") as task:
            expected, got = await both(lambda c: c.chat.completions.create(
                model="gpt-4o-mini", messages=MESSAGES))
            assert got == expected
            options = {"model": "gpt-4o", "messages": MESSAGES, "stream": True,
                       "stream_options": {"include_usage": True}}
            streams = await both(lambda c: c.chat.completions.create(**options))
            assert type(streams[1]) is openai.AsyncStream
            assert [c async for c in streams[1]] == [c async for c in streams[0]]
            expected, got = await both(lambda c: c.embeddings.create(
                model="text-embedding-3-small", input="a"))
            assert got == expected
            with pytest.raises(openai.BadRequestError):
                await wrapped.chat.completions.create(model="fail", messages=MESSAGES)
        return task.task_id

    parent = asyncio.run(run())
    calls = recorded(agent, memory)
    assert {calls[n]["start"]["parent_task_id"] for n in (
        "chat gpt-4o-mini", "chat gpt-4o", "embeddings text-embedding-3-small")} == {parent}
    assert calls["chat gpt-4o"]["evidence"]["data"]["output_tokens"] == 30
    assert calls["chat fail"]["end"]["status"] == "failed"


def test_a_call_outside_any_task_is_a_run_and_wrapping_twice_records_once(
        base_url: str, make_agent: Callable[..., Any], memory: MemoryTransport) -> None:
    agent = make_agent()
    _, wrapped = clients(base_url, agent)
    wrap_openai(wrapped, agent)
    wrapped.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    assert agent.flush_sync(timeout=10)
    starts = [e for e in memory.events if e["kind"] == "task.start"]
    assert len(starts) == 1 and starts[0]["parent_task_id"] is None


def test_a_recording_failure_never_reaches_the_call(base_url: str, make_agent: Callable[..., Any],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any) -> Any:
        raise RuntimeError("adapter bug")

    monkeypatch.setattr("bench.adapters.openai.read_chat", broken)
    monkeypatch.setattr("bench.adapters.openai.ChatStream.add", broken)
    agent = make_agent()
    plain, wrapped = clients(base_url, agent)
    assert wrapped.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES) == \
        plain.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    options = {"model": "gpt-4o-mini", "messages": MESSAGES, "stream": True}
    assert list(wrapped.chat.completions.create(**options)) == \
        list(plain.chat.completions.create(**options))


def test_the_server_prices_the_evidence(base_url: str, bench_server: RunningServer) -> None:
    """Adapter → /ingest → Bench's price table: the SDK ships no prices."""
    login = "adopenai" + uuid.uuid4().hex[:8]
    key = bench_server.create_key(login)
    agent = bench.BenchAgent(key, "priced", endpoint=bench_server.url, sender_config=FAST)
    _, wrapped = clients(base_url, agent)
    with agent.span("answer") as task:
        wrapped.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    assert agent.shutdown_sync(timeout=10)
    from bench_core.domain.models import AgentRef

    ref = AgentRef(login, "priced")
    parent = bench_server.store.ingest.get_task(ref, task.task_id)
    expected = ((1200 - 1024) * 0.15 + 1024 * 0.075 + 30 * 0.6) / 1e6
    assert parent.evidence.cost_usd == pytest.approx(expected)
    assert parent.cost_usd == 0
    assert bench_server.get(f"/api/agents/{login}/priced")["evidence_cost_usd_total"] == \
        pytest.approx(expected)
