"""Which span attributes say what, in the conventions producers use: OpenTelemetry GenAI
(gen-ai 1.42, with the deprecated names producers still send), OpenInference (Phoenix's `llm.*`,
`input.value`, `openinference.span.kind`), the Vercel AI SDK's `ai.*`, and Mastra's AI tracing
as @mastra/otel-exporter sends it (GenAI names, with content in `mastra.<span type>.input` and
`.output` on 1.x and in bare `input`/`output` on 0.x). Each list holds the current GenAI name
first; the first present wins.

A span that sums the usage of the model calls beneath it (an agent invocation, an AI SDK
`ai.generateText` around its `ai.generateText.doGenerate` steps, an OpenInference AGENT or
CHAIN) is an aggregate: its usage is not evidence, or every call would count twice.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...domain.sessions import USER_ATTRIBUTES

OPERATION = "gen_ai.operation.name"
AGGREGATE_OPERATIONS = frozenset({"invoke_agent", "invoke_workflow"})
AGGREGATE_KINDS = frozenset({"AGENT", "CHAIN"})
"""OpenInference span kinds that stand for a whole run or a step of one, not one model call."""
AI_SDK_CALLS = re.compile(r"^ai\.\w+\.do(Generate|Stream)$|^ai\.(embed|embedMany)\.doEmbed$")
"""AI SDK operation ids of one provider call; the other `ai.*` operations wrap them."""

TOKENS = {
    "input_tokens": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens",
                     "llm.token_count.prompt", "ai.usage.inputTokens", "ai.usage.promptTokens"),
    "output_tokens": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
                      "llm.token_count.completion", "ai.usage.outputTokens",
                      "ai.usage.completionTokens"),
    "cache_read_input_tokens": ("gen_ai.usage.cache_read.input_tokens",
                                "gen_ai.usage.cache_read_input_tokens",
                                "llm.token_count.prompt_details.cache_read",
                                "ai.usage.cachedInputTokens"),
    "cache_creation_input_tokens": ("gen_ai.usage.cache_creation.input_tokens",
                                    "gen_ai.usage.cache_creation_input_tokens",
                                    "llm.token_count.prompt_details.cache_write"),
    "reasoning_output_tokens": ("gen_ai.usage.reasoning.output_tokens",
                                "llm.token_count.completion_details.reasoning",
                                "ai.usage.reasoningTokens"),
}
"""Evidence token fields and the attributes that carry them."""
PROVIDER = ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system",
            "ai.model.provider")
DOTTED_PROVIDERS = frozenset({"aws.bedrock", "azure.ai.inference", "azure.ai.openai",
                              "gcp.gemini", "gcp.gen_ai", "gcp.vertex_ai", "ibm.watsonx.ai"})
"""GenAI provider names with a dot; in an AI SDK provider id (`openai.chat`, which Mastra passes
on) the part after the dot names the provider's API instead."""
MASTRA_SPAN_TYPE = "mastra.span.type"
MODEL = ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name", "ai.response.model",
         "ai.model.id")
TOOL_NAME = ("gen_ai.tool.name", "tool.name", "ai.toolCall.name")
SESSION = ("session.id", "gen_ai.conversation.id", "langfuse.session.id",
           "ai.telemetry.metadata.sessionId", "ai.telemetry.metadata.session_id")
"""The conversation a span's run is part of (`domain.sessions`): OTel's and OpenInference's
`session.id`, GenAI's conversation, Langfuse's, the Vercel AI SDK's telemetry metadata."""
USER = USER_ATTRIBUTES
"""Who the run was for (`domain.sessions.USER_ATTRIBUTES`, which the privacy gate hides)."""

INPUT_ATTRIBUTES = ("gen_ai.input.messages", "gen_ai.tool.call.arguments",
                    "gen_ai.retrieval.query.text", "gen_ai.memory.query.text", "input.value",
                    "ai.prompt.messages", "ai.prompt", "ai.toolCall.args", "ai.value",
                    "ai.values")
OUTPUT_ATTRIBUTES = ("gen_ai.output.messages", "gen_ai.tool.call.result",
                     "gen_ai.retrieval.documents", "gen_ai.memory.records", "output.value",
                     "ai.response.text", "ai.response.object", "ai.response.toolCalls",
                     "ai.toolCall.result")
BARE_CONTENT = ("input", "output")
"""Mastra 0.x puts every span's content in attributes named just so (and again, on model and
tool spans, in `gen_ai.prompt`/`gen_ai.completion` and `gen_ai.tool.input`/`.output`)."""
MASTRA_CONTENT = re.compile(r"^mastra\.\w+\.(input|output)$")
"""Mastra 1.x: the content of a span that is not a model call or a tool, by span type."""
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
OPENINFERENCE_MESSAGES = {"input": "llm.input_messages.", "output": "llm.output_messages."}
"""OpenInference flattens message lists: `llm.input_messages.0.message.content`."""
CONTENT_PREFIXES = ("gen_ai.input.", "gen_ai.output.", SYSTEM_INSTRUCTIONS, "gen_ai.tool.call.",
                    "gen_ai.tool.definitions", "gen_ai.retrieval.", "gen_ai.memory.query.",
                    "gen_ai.memory.records", "gen_ai.prompt", "gen_ai.completion", "input.",
                    "output.", "llm.input_messages", "llm.output_messages", "llm.prompts",
                    "ai.prompt", "ai.response.text", "ai.response.object", "ai.response.toolCalls",
                    "ai.toolCall.args", "ai.toolCall.result", "ai.value", "ai.values",
                    "ai.embedding", "gen_ai.tool.input", "gen_ai.tool.output")
"""Attributes that may hold what went in or came out (with `BARE_CONTENT` and
`MASTRA_CONTENT`: see `is_content`); never copied into metadata."""


SAFE_ATTRIBUTES = frozenset({
    # OpenTelemetry GenAI (and the general conventions its spans carry)
    OPERATION, "gen_ai.provider.name", "gen_ai.system", "gen_ai.request.model",
    "gen_ai.response.model", "gen_ai.response.id", "gen_ai.response.finish_reasons",
    "gen_ai.request.max_tokens", "gen_ai.request.temperature", "gen_ai.request.top_p",
    "gen_ai.request.top_k", "gen_ai.request.frequency_penalty", "gen_ai.request.presence_penalty",
    "gen_ai.request.seed", "gen_ai.request.choice.count", "gen_ai.request.encoding_formats",
    "gen_ai.conversation.id", "gen_ai.agent.id", "gen_ai.agent.name", "gen_ai.tool.name",
    "gen_ai.tool.type", "gen_ai.data_source.id", "gen_ai.embeddings.dimension.count",
    "gen_ai.openai.request.service_tier", "gen_ai.openai.response.service_tier",
    "gen_ai.openai.response.system_fingerprint", "error.type", "server.address", "server.port",
    "http.status_code", "http.response.status_code", "http.method", "http.request.method",
    "service.name", "service.version", "session.id", "thread.id", "thread.name",
    "code.function", "code.function.name", "code.namespace", "code.lineno", "code.line.number",
    # OpenInference
    "openinference.span.kind", "llm.model_name", "llm.provider", "llm.system", "tool.name",
    "embedding.model_name", "reranker.model_name",
    # the Vercel AI SDK, Mastra
    "ai.operationId", "operation.name", "resource.name", "ai.model.id", "ai.model.provider",
    "ai.response.id", "ai.response.model", "ai.response.finishReason", "ai.toolCall.name",
    "ai.toolCall.id", "ai.telemetry.functionId", MASTRA_SPAN_TYPE,
    # OpenLLMetry (Traceloop), Langfuse, Pydantic AI
    "traceloop.span.kind", "traceloop.entity.name", "traceloop.workflow.name",
    "llm.request.type", "llm.is_streaming", "langfuse.observation.type",
    "langfuse.observation.level", "agent_name", "model_name",
})
"""Span attributes that hold names, numbers and ids, never what went in or came out: what
everyone may see of a span's attributes (each only with a public value, `privacy.public_value`)
where its owner hides inputs or outputs. Every other attribute is content: instrumentations
put prompts and results in names no list can foresee (`llm.prompt_template.variables`,
`traceloop.entity.input`, `langfuse.observation.input`, `pydantic_ai.all_messages`)."""
SAFE_PREFIXES = ("gen_ai.usage.", "llm.token_count.", "llm.usage.", "ai.usage.")
"""Attribute families of token counts."""


def is_safe(name: str) -> bool:
    """Whether attribute `name` is known to hold a name, a number or an id (`SAFE_ATTRIBUTES`)."""
    return name in SAFE_ATTRIBUTES or name.startswith(SAFE_PREFIXES)


def is_content(name: str) -> bool:
    """Whether attribute `name` may hold what went in or came out of the span."""
    return (name.startswith(CONTENT_PREFIXES) or name in BARE_CONTENT
            or MASTRA_CONTENT.match(name) is not None)


def is_aggregate(attrs: dict[str, Any]) -> bool:
    operation_id = attrs.get("ai.operationId")
    if isinstance(operation_id, str) and operation_id.startswith("ai."):
        return AI_SDK_CALLS.match(operation_id) is None
    return (attrs.get(OPERATION) in AGGREGATE_OPERATIONS
            or attrs.get("openinference.span.kind") in AGGREGATE_KINDS)


def first(attrs: dict[str, Any], names: tuple[str, ...]) -> Any:
    for name in names:
        value = attrs.get(name)
        if value is not None:
            return value
    return None


def provider(attrs: dict[str, Any]) -> Any:
    """The provider; AI SDK provider ids (`openai.chat`, `openai.responses`, on the AI SDK's
    spans and Mastra's) name the API too."""
    value = first(attrs, PROVIDER)
    sdk_id = attrs.get("ai.model.provider") == value or MASTRA_SPAN_TYPE in attrs
    if isinstance(value, str) and sdk_id and value not in DOTTED_PROVIDERS:
        return value.split(".", 1)[0]
    return value


def content(attrs: dict[str, Any], side: str) -> Any:
    """What went in (`side` "input") or came out ("output"), as data where it is JSON."""
    names = INPUT_ATTRIBUTES if side == "input" else OUTPUT_ATTRIBUTES
    for name in names[:names.index(f"{side}.value")]:
        if attrs.get(name) is not None:
            return structured(attrs[name])
    messages = _flattened(attrs, OPENINFERENCE_MESSAGES[side])
    if messages:
        return messages
    mime = attrs.get(f"{side}.mime_type")
    value = attrs.get(f"{side}.value")
    if value is not None:
        return value if mime not in (None, "application/json") else structured(value)
    value = first(attrs, (*names[names.index(f"{side}.value") + 1:], *_mastra(attrs, side)))
    return None if value is None else structured(value)


def _mastra(attrs: dict[str, Any], side: str) -> tuple[str, ...]:
    """Where Mastra puts a span's content: `mastra.<span type>.<side>` (1.x), `<side>` (0.x)."""
    kind = attrs.get(MASTRA_SPAN_TYPE)
    return (f"mastra.{kind}.{side}", side) if isinstance(kind, str) else (side,)


def structured(value: Any) -> Any:
    """JSON text (spans often carry content so) as data; anything else as it is."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _flattened(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """`prefix` + `<i>.message.<field>` attributes as a list of messages, in index order."""
    if f"{prefix}0.message.role" not in attrs and f"{prefix}0.message.content" not in attrs:
        return []  # no list here: spare every other span the scan of its attributes
    messages: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        index, _, rest = key[len(prefix):].partition(".")
        if not index.isdigit():
            continue
        field = rest.removeprefix("message.")
        messages.setdefault(int(index), {})[field] = value
    return [messages[i] for i in sorted(messages)]
