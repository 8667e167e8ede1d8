"""Record OpenAI calls as Bench tasks with token evidence::

    from openai import OpenAI
    from bench.adapters.openai import wrap_openai

    client = wrap_openai(OpenAI(), agent)
    with agent.span("answer"):
        client.chat.completions.create(model="gpt-4o", messages=[...])   # a subtask of "answer"

Covers ``chat.completions.create`` (also ``stream=True``: usage comes from the final chunk,
which OpenAI sends only when the request asks for it with ``stream_options={"include_usage":
True}``; the adapter never changes the request), ``responses.create`` (streamed or not) and
``embeddings.create``, on ``OpenAI``, ``AsyncOpenAI`` and the Azure clients. What each call
returns or raises is exactly what it would without Bench; a stream is the SDK's own object.
The ``openai`` package is not imported here (only its types, by the type checker): any client
of that shape works.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, TypeVar, Union

from bench._client import BenchAgent
from bench.adapters._call import Api, Outcome, token_counts, wrap_method

if TYPE_CHECKING:
    from openai.types import CompletionUsage, CreateEmbeddingResponse
    from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessage
    from openai.types.create_embedding_response import Usage as EmbeddingUsage
    from openai.types.responses import Response, ResponseStreamEvent, ResponseUsage

Client = TypeVar("Client")


def wrap_openai(client: Client, agent: BenchAgent) -> Client:
    """Record every call ``client`` makes through the covered methods; returns ``client``.

    Calls are recorded as subtasks of the task running where they are made (or as runs of their
    own outside any task). Clients derived later with ``with_options`` are not wrapped."""
    provider = "azure.ai.openai" if "Azure" in type(client).__name__ else "openai"
    wrap_method(client, "chat.completions.create", agent,
                Api(provider, "chat", _chat_request, read_chat, ChatStream))
    wrap_method(client, "responses.create", agent,
                Api(provider, "chat", _responses_request, read_response, ResponseStream))
    wrap_method(client, "embeddings.create", agent,
                Api(provider, "embeddings", _embeddings_request, read_embeddings))
    return client


def _chat_request(kwargs: dict[str, Any]) -> tuple[Optional[str], Any]:
    return kwargs.get("model"), kwargs.get("messages")


def _responses_request(kwargs: dict[str, Any]) -> tuple[Optional[str], Any]:
    if kwargs.get("instructions") is not None:
        return kwargs.get("model"), {"instructions": kwargs["instructions"],
                                     "input": kwargs.get("input")}
    return kwargs.get("model"), kwargs.get("input")


def _embeddings_request(kwargs: dict[str, Any]) -> tuple[Optional[str], Any]:
    return kwargs.get("model"), kwargs.get("input")


def usage_tokens(usage: Union[CompletionUsage, ResponseUsage, EmbeddingUsage, None]
                 ) -> Optional[dict[str, Optional[int]]]:
    """Chat Completions (``prompt_tokens``...) or Responses (``input_tokens``...) usage; both
    count cached tokens inside the input and reasoning tokens inside the output. The details
    are read with ``getattr``: older ``openai`` versions do not have them."""
    if usage is None:
        return None
    prompt = getattr(usage, "prompt_tokens", None)
    chat = prompt is not None
    input_details = getattr(usage, "prompt_tokens_details" if chat else "input_tokens_details",
                            None)
    output_details = getattr(usage, "completion_tokens_details" if chat
                             else "output_tokens_details", None)
    return token_counts(
        input_tokens=prompt if chat else getattr(usage, "input_tokens", None),
        output_tokens=getattr(usage, "completion_tokens" if chat else "output_tokens", None),
        cache_read_input_tokens=getattr(input_details, "cached_tokens", None),
        reasoning_output_tokens=getattr(output_details, "reasoning_tokens", None))


def _message(message: ChatCompletionMessage) -> Any:
    return message.model_dump(exclude_none=True) if hasattr(message, "model_dump") else message


def read_chat(completion: ChatCompletion) -> Outcome:
    choices = completion.choices or []
    return Outcome(output=_message(choices[0].message) if choices else None,
                   model=completion.model, tokens=usage_tokens(completion.usage))


def read_response(response: Response) -> Outcome:
    return Outcome(output=getattr(response, "output_text", None), model=response.model,
                   tokens=usage_tokens(response.usage))


def read_embeddings(response: CreateEmbeddingResponse) -> Outcome:
    """The shape of what came back, not the vectors themselves."""
    data = response.data or []
    return Outcome(output={"embeddings": len(data),
                           "dimensions": len(data[0].embedding) if data else 0},
                   model=response.model, tokens=usage_tokens(response.usage))


class ChatStream:
    """A streamed chat completion: the first choice's text and tool calls, the model, and the
    usage of the final chunk (present only when the request asked for it)."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._tools: dict[int, dict[str, Any]] = {}
        self._model: Optional[str] = None
        self._usage: Optional[CompletionUsage] = None

    def add(self, chunk: ChatCompletionChunk) -> None:
        self._model = getattr(chunk, "model", None) or self._model
        if getattr(chunk, "usage", None) is not None:
            self._usage = chunk.usage
        for choice in getattr(chunk, "choices", None) or []:
            if choice.index != 0:
                continue
            if choice.delta.content:
                self._text.append(choice.delta.content)
            for call in choice.delta.tool_calls or []:
                tool = self._tools.setdefault(call.index, {"id": None, "type": "function",
                                                           "function": {"name": "",
                                                                        "arguments": ""}})
                tool["id"] = call.id or tool["id"]
                if call.function is not None:
                    tool["function"]["name"] += call.function.name or ""
                    tool["function"]["arguments"] += call.function.arguments or ""

    def outcome(self) -> Outcome:
        output: dict[str, Any] = {"role": "assistant", "content": "".join(self._text) or None}
        if self._tools:
            output["tool_calls"] = [self._tools[i] for i in sorted(self._tools)]
        return Outcome(output=output, model=self._model, tokens=usage_tokens(self._usage))


class ResponseStream:
    """A streamed Responses API call: its final ``response.*`` event holds the whole response."""

    def __init__(self) -> None:
        self._response: Optional[Response] = None
        self._text: list[str] = []

    def add(self, event: ResponseStreamEvent) -> None:
        if event.type == "response.output_text.delta":
            self._text.append(event.delta)
        elif event.type in ("response.completed", "response.incomplete", "response.failed"):
            self._response = event.response

    def outcome(self) -> Outcome:
        if self._response is not None:
            return read_response(self._response)
        return Outcome(output="".join(self._text) or None)
