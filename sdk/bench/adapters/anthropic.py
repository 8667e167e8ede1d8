"""Record Anthropic calls as Bench tasks with token evidence::

    from anthropic import Anthropic
    from bench.adapters.anthropic import wrap_anthropic

    client = wrap_anthropic(Anthropic(), agent)
    client.messages.create(model="claude-sonnet-4-5", max_tokens=1024, messages=[...])
    with client.messages.stream(model=..., max_tokens=..., messages=[...]) as stream:
        print(stream.get_final_text())

Covers ``messages.create`` (also ``stream=True``) and ``messages.stream`` on ``Anthropic`` and
``AsyncAnthropic`` (and the Bedrock and Vertex clients). Anthropic counts cache reads and writes
apart from ``input_tokens``; the evidence counts them inside it, as the OpenTelemetry GenAI
conventions do. What each call returns or raises is what it would without Bench; the stream
you iterate is the SDK's own ``MessageStream``. The ``anthropic`` package is not imported here
(only its types, by the type checker).
"""

from __future__ import annotations

import functools
import json
from types import TracebackType
from typing import TYPE_CHECKING, Any, Optional, TypeVar, Union

from bench._client import BenchAgent
from bench.adapters._call import (
    WRAPPED,
    Api,
    Call,
    Outcome,
    guarded,
    observe_stream,
    start_api_call,
    token_counts,
    wrap_method,
)

if TYPE_CHECKING:
    from anthropic.types import (
        Message,
        MessageDeltaUsage,
        RawContentBlockDelta,
        RawMessageStreamEvent,
        Usage,
    )

Client = TypeVar("Client")


def wrap_anthropic(client: Client, agent: BenchAgent) -> Client:
    """Record every ``messages.create`` and ``messages.stream`` call of ``client``; returns it."""
    name = type(client).__name__
    provider = ("aws.bedrock" if "Bedrock" in name else "gcp.vertex_ai" if "Vertex" in name
                else "anthropic")
    api = Api(provider, "chat", _request, read_message, RawEventStream)
    wrap_method(client, "messages.create", agent, api)
    messages = guarded("anthropic client", getattr, client, "messages")
    original = getattr(messages, "stream", None)
    if original is not None and not getattr(original, WRAPPED, False):
        @functools.wraps(original)
        def stream(*args: Any, **kwargs: Any) -> Any:
            return ObservedStreamManager(original(*args, **kwargs), agent, api, kwargs)

        setattr(stream, WRAPPED, True)
        guarded("anthropic client", setattr, messages, "stream", stream)
    return client


def _request(kwargs: dict[str, Any]) -> tuple[Optional[str], Any]:
    if kwargs.get("system") is not None:
        return kwargs.get("model"), {"system": kwargs["system"], "messages": kwargs.get("messages")}
    return kwargs.get("model"), kwargs.get("messages")


_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens",
                 "cache_creation_input_tokens")


def usage_fields(usage: Union[Usage, MessageDeltaUsage]) -> dict[str, Optional[int]]:
    """The counts ``tokens`` reads; ``getattr``, as older ``anthropic`` versions lack some."""
    fields = {name: getattr(usage, name, None) for name in _USAGE_FIELDS}
    fields["thinking_tokens"] = getattr(getattr(usage, "output_tokens_details", None),
                                        "thinking_tokens", None)
    return fields


def tokens(fields: dict[str, Optional[int]]) -> dict[str, Optional[int]]:
    """Anthropic's usage as evidence: the input count includes the cache reads and writes."""
    uncached, read, write = (fields.get(name) for name in (
        "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
    total = None if uncached is None else uncached + (read or 0) + (write or 0)
    return token_counts(input_tokens=total, output_tokens=fields.get("output_tokens"),
                        cache_read_input_tokens=read, cache_creation_input_tokens=write,
                        reasoning_output_tokens=fields.get("thinking_tokens"))


def message_output(blocks: list[dict[str, Any]]) -> Any:
    """The text when the answer is only text, else its blocks (thinking reduced to its type)."""
    if all(block.get("type") == "text" for block in blocks):
        return "".join(block.get("text", "") for block in blocks)
    return [{"type": "thinking"} if block.get("type") in ("thinking", "redacted_thinking")
            else block for block in blocks]


def read_message(message: Message) -> Outcome:
    blocks = [block.model_dump(exclude_none=True) for block in message.content or []]
    return Outcome(output=message_output(blocks), model=message.model,
                   tokens=tokens(usage_fields(message.usage)) if message.usage else None)


class RawEventStream:
    """A streamed message from its raw events: ``message_start`` has the model and the input
    usage, ``message_delta`` the final (cumulative) counts, blocks come in deltas."""

    def __init__(self) -> None:
        self._model: Optional[str] = None
        self._usage: Optional[dict[str, Optional[int]]] = None
        self._blocks: dict[int, dict[str, Any]] = {}

    def add(self, event: RawMessageStreamEvent) -> None:
        if event.type == "message_start":
            self._model = event.message.model
            self._usage = usage_fields(event.message.usage)
        elif event.type == "message_delta" and getattr(event, "usage", None) is not None:
            later = {k: v for k, v in usage_fields(event.usage).items() if v is not None}
            self._usage = {**(self._usage or {}), **later}
        elif event.type == "content_block_start":
            block = event.content_block.model_dump(exclude_none=True)
            if block.get("type") == "tool_use":
                block["input"] = ""
            self._blocks[event.index] = block
        elif event.type == "content_block_delta":
            self._delta(self._blocks.setdefault(event.index, {"type": "text", "text": ""}),
                        event.delta)

    @staticmethod
    def _delta(block: dict[str, Any], delta: RawContentBlockDelta) -> None:
        if delta.type == "text_delta":
            block["text"] = block.get("text", "") + delta.text
        elif delta.type == "input_json_delta":
            block["input"] = block.get("input", "") + delta.partial_json
        elif delta.type == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.thinking

    def outcome(self) -> Outcome:
        blocks = [self._parsed(self._blocks[i]) for i in sorted(self._blocks)]
        return Outcome(output=message_output(blocks), model=self._model,
                       tokens=tokens(self._usage) if self._usage is not None else None)

    @staticmethod
    def _parsed(block: dict[str, Any]) -> dict[str, Any]:
        if block.get("type") == "tool_use" and isinstance(block.get("input"), str):
            try:
                return {**block, "input": json.loads(block["input"] or "{}")}
            except ValueError:
                return block
        return block


class ObservedStreamManager:
    """What ``messages.stream(...)`` returns, recorded: the request is made on entering, so the
    call starts there; entering yields the SDK's own (async) ``MessageStream``, whose raw events
    are observed; leaving ends the call if reading did not."""

    def __init__(self, manager: Any, agent: BenchAgent, api: Api, kwargs: dict[str, Any]) -> None:
        self._manager = manager
        self._agent = agent
        self._api = api
        self._kwargs = kwargs
        self._call: Optional[Call] = None
        self._reader = RawEventStream()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._manager, name)

    def _begin(self) -> None:
        self._call = start_api_call(self._agent, self._api, self._kwargs, stream=True)

    def _entered(self, stream: Any) -> Any:
        raw = getattr(stream, "_raw_stream", None)
        if self._call is not None and raw is not None:
            guarded("stream", observe_stream, raw, self._call, self._reader)
        return stream

    def _failed(self, exc: BaseException) -> None:
        if self._call is not None:
            self._call.end(error=exc)

    def _left(self) -> None:
        if self._call is not None:
            self._call.end(guarded("stream outcome", self._reader.outcome))

    def __enter__(self) -> Any:
        self._begin()
        try:
            stream = self._manager.__enter__()
        except BaseException as exc:
            self._failed(exc)
            raise
        return self._entered(stream)

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> Any:
        try:
            return self._manager.__exit__(exc_type, exc, tb)
        finally:
            self._left()

    async def __aenter__(self) -> Any:
        self._begin()
        try:
            stream = await self._manager.__aenter__()
        except BaseException as exc:
            self._failed(exc)
            raise
        return self._entered(stream)

    async def __aexit__(self, exc_type: Optional[type[BaseException]],
                        exc: Optional[BaseException], tb: Optional[TracebackType]) -> Any:
        try:
            return await self._manager.__aexit__(exc_type, exc, tb)
        finally:
            self._left()
