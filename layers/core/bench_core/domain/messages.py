"""A model call's input and output as a conversation: messages by role, each a list of parts
(text, reasoning, tool calls with their arguments, tool results, named attachments), read from
whatever convention stored them:

- OpenTelemetry GenAI: `{"role", "parts": [{"type": "text" | "tool_call" |
  "tool_call_response" | "reasoning" | "blob" | "uri" | "file", ...}]}`, the input wrapped as
  `{"system_instructions", "messages"}` when instructions came apart; the older log events'
  `{"role", "content", "tool_calls"}` and `gen_ai.choice`'s `{"index", "message"}`;
- OpenInference's flattened `llm.*_messages` (`ingest.otlp.conventions`): `content`,
  `contents.<i>.message_content.*`, `tool_calls.<i>.tool_call.*`, `tool_call_id`;
- OpenAI and Anthropic messages (the SDK adapters, Vercel AI's and Mastra's prompts): content as
  text or a list of typed blocks (`text`, `image_url`, `tool_use`, `tool_result`, `tool-call`,
  `tool-result`, `image`, `file`...), `tool_calls` as OpenAI or LangChain spell them;
- LangChain messages (`{"role": "human" | "ai" | "system" | "tool", "content", "tool_calls"}`),
  `{"messages": [...]}` prompts, and answers given as text, `{"text", "toolCalls"}` or
  `{"content", "tool_calls"}`.

What is not recognised is not a conversation (`conversation` answers None) and is shown as
stored. Attachments are named (file name, address or media type), never inlined: their data can
be megabytes of base64. Pure: the caller hands in what the privacy gate lets its viewer see.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool", "other"]
PartKind = Literal["text", "reasoning", "tool_call", "tool_result", "attachment"]
Side = Literal["input", "output"]

ROLES: dict[str, Role] = {
    "system": "system", "developer": "system", "user": "user", "human": "user",
    "assistant": "assistant", "ai": "assistant", "model": "assistant", "tool": "tool",
    "function": "tool", "ipython": "tool"}
"""Role names as conventions spell them (LangChain's `human`/`ai`, Gemini's `model`, OpenAI's
`developer` and `function`), each to the role a chat shows."""
_TEXT = ("text", "content", "input_text", "output_text")
_REASONING = ("reasoning", "thinking", "redacted_thinking")
_CALLS = ("tool_call", "tool-call", "tool_use", "function_call", "server_tool_use")
_RESULTS = ("tool_call_response", "tool-result", "tool_result", "function_call_output",
            "function_response")
_ATTACHMENTS = {"image": "image", "image_url": "image", "input_image": "image", "blob": "file",
                "uri": "file", "file": "file", "input_file": "file", "document": "file",
                "input_audio": "audio", "audio": "audio", "video": "video"}
"""Block types that carry a file, and what the chat calls it unless its media type says."""
_BLOCKS = frozenset({*_TEXT, *_REASONING, *_CALLS, *_RESULTS, *_ATTACHMENTS})


@dataclass(frozen=True)
class Part:
    """One piece of a message. `text` is the text, the reasoning, a call's arguments or a
    result (JSON pretty-printed where it is JSON), or an attachment's name; `name` a tool's
    name or an attachment's kind; `call_id` ties a result to its call."""

    kind: PartKind
    text: str
    name: str | None = None
    call_id: str | None = None


@dataclass(frozen=True)
class Message:
    role: Role
    parts: tuple[Part, ...]
    side: Side
    label: str
    """The role as sent (`human`, `developer`...), for the reader."""
    finish_reason: str | None = None


def conversation(input: Any, output: Any) -> list[Message] | None:
    """The messages of a model call's `input` then `output` (pass None for a side the viewer
    may not see), or None when neither side holds a conversation. An output that is plain text
    (or a tool-call list) answers an input that is one."""
    asked = _messages(input, "input")
    answered = _messages(output, "output")
    if asked is None and answered is None:
        return None
    if answered is None:
        answered = _answer(output)
    return [*(asked or []), *(answered or [])]


def _messages(value: Any, side: Side) -> list[Message] | None:
    if isinstance(value, dict):
        if isinstance(value.get("messages"), list | str):
            system = value.get("system_instructions", value.get("system"))
            head = [] if system is None else [_message({"role": "system", "content": system},
                                                       side)]
            asked = value["messages"]  # Mastra 1.x: the agent's prompt, as text
            rest = ([_message({"role": "user", "content": asked}, side)] if isinstance(asked, str)
                    else _messages(asked, side) or [])
            prompt = value.get("prompt")
            tail = [_message({"role": "user", "content": prompt}, side)] if prompt else []
            return [*head, *rest, *tail]
        if isinstance(value.get("prompt"), str) and set(value) <= {"system", "prompt"}:
            return _messages({**value, "messages": []}, side)
        if _is_message(_unwrapped(value)):
            value = [value]  # one message, an OpenAI choice or a `gen_ai.choice` event's body
    if not isinstance(value, list) or not value:
        return None
    items = [_unwrapped(v) for v in value]
    if not all(isinstance(v, dict) and _is_message(v) for v in items):
        return None
    return [_message(v, side) for v in items]


def _unwrapped(value: Any) -> Any:
    """A choice's message (`{"index", "finish_reason", "message"}`) with its finish reason."""
    if isinstance(value, dict) and isinstance(value.get("message"), dict):
        return {**value["message"], "finish_reason": value.get("finish_reason")}
    return value


def _is_message(value: dict[str, Any]) -> bool:
    role = value.get("role", value.get("type"))
    return isinstance(role, str) and role.lower() in ROLES and (
        "content" in value or "parts" in value or "role" in value
        or any(k.startswith(("tool_calls", "contents.")) for k in value))


def _message(value: dict[str, Any], side: Side) -> Message:
    label = str(value.get("role", value.get("type")))
    role = ROLES.get(label.lower(), "other")
    parts = [*_content(value.get("parts")), *_content(value.get("content")),
             *_flat_contents(value), *_calls(value.get("tool_calls")), *_flat_calls(value)]
    call_id = value.get("tool_call_id")
    if role == "tool" and not any(p.kind == "tool_result" for p in parts):
        result = "\n".join(p.text for p in parts if p.kind == "text")
        parts = [Part("tool_result", result, _str(value.get("name")), _str(call_id)),
                 *(p for p in parts if p.kind != "text")]
    finish = value.get("finish_reason")
    return Message(role, tuple(parts), side, label, finish if isinstance(finish, str) else None)


def _content(value: Any) -> list[Part]:
    """Parts from content as text, one block or a list of blocks."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [Part("text", value)]
    if isinstance(value, list):
        return [part for block in value for part in _content(block)]
    if isinstance(value, dict):
        return [_block(value)]
    return [Part("text", _shown(value))]


def _block(block: dict[str, Any]) -> Part:
    kind = block.get("type")
    if kind in _CALLS or (kind is None and "arguments" in block and "name" in block):
        return Part("tool_call", _shown(_first(block, "arguments", "args", "input")),
                    _str(block.get("name", block.get("toolName"))),
                    _str(_first(block, "id", "toolCallId", "call_id")))
    if kind in _RESULTS:
        return Part("tool_result", _shown(_first(block, "response", "result", "output",
                                                 "content")),
                    _str(block.get("name", block.get("toolName"))),
                    _str(_first(block, "id", "toolCallId", "tool_use_id", "call_id")))
    if kind in _REASONING:
        return Part("reasoning", _shown(_first(block, "content", "text", "thinking")))
    if kind in _ATTACHMENTS:
        return _attachment(block, _ATTACHMENTS[kind])
    if kind in _TEXT or kind is None:
        text = _first(block, "text", "content")
        if text is not None:
            return Part("text", _shown(text))
    return Part("text", _shown(block))


def _attachment(block: dict[str, Any], kind: str) -> Part:
    """A file named by what identifies it to a reader, never by its data."""
    media = _str(_first(block, "mime_type", "mimeType", "mediaType", "media_type"))
    source: dict[str, Any] = block["source"] if isinstance(block.get("source"), dict) else {}
    nested: dict[str, Any] = {}
    for key in ("image_url", "file", "input_audio"):
        if isinstance(block.get(key), dict):
            nested.update(block[key])
    names = (block.get("filename"), nested.get("filename"), block.get("uri"),
             nested.get("url"), block.get("image_url"), source.get("url"), block.get("file_id"),
             nested.get("file_id"))
    name = next((n for n in names if isinstance(n, str) and n and not n.startswith("data:")),
                None)
    if name is None:
        url = next((u for u in (nested.get("url"), block.get("image_url")) if isinstance(u, str)),
                   "")
        inline = url[5:].split(";", 1)[0] if url.startswith("data:") else None
        name = media or _str(source.get("media_type")) or inline or "unnamed"
    modality = _str(block.get("modality")) or (media.split("/", 1)[0] if media else kind)
    return Part("attachment", name, modality if modality in ("image", "audio", "video") else kind)


def _calls(value: Any) -> list[Part]:
    """`tool_calls` as OpenAI (`function: {name, arguments}`) or LangChain (`name`, `args`)
    spell them."""
    if not isinstance(value, list):
        return []
    parts = []
    for call in value:
        if not isinstance(call, dict):
            continue
        function: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) \
            else call
        parts.append(Part("tool_call", _shown(_first(function, "arguments", "args", "input")),
                          _str(function.get("name", call.get("toolName"))),
                          _str(_first(call, "id", "toolCallId"))))
    return parts


def _flat_contents(value: dict[str, Any]) -> list[Part]:
    """OpenInference's `contents.<i>.message_content.{type, text, image.image.url}`."""
    blocks = _flat(value, "contents.", "message_content.")
    return [_attachment({"image_url": b.get("image.image.url")}, "image")
            if b.get("type") == "image" else Part("text", _shown(b.get("text", "")))
            for b in blocks]


def _flat_calls(value: dict[str, Any]) -> list[Part]:
    """OpenInference's `tool_calls.<i>.tool_call.{id, function.name, function.arguments}`."""
    return [Part("tool_call", _shown(b.get("function.arguments")), _str(b.get("function.name")),
                 _str(b.get("id"))) for b in _flat(value, "tool_calls.", "tool_call.")]


def _flat(value: dict[str, Any], prefix: str, inner: str) -> list[dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    for key, item in value.items():
        if not key.startswith(prefix):
            continue
        index, _, rest = key[len(prefix):].partition(".")
        if index.isdigit():
            found.setdefault(int(index), {})[rest.removeprefix(inner)] = item
    return [found[i] for i in sorted(found)]


def _answer(output: Any) -> list[Message] | None:
    """An answer that is not a message list: text, `{"text", "toolCalls"}` (AI SDK, Mastra),
    `{"content", "tool_calls"}` (LangChain), a list of AI SDK tool calls or of content blocks
    (the SDK's Anthropic adapter)."""
    if isinstance(output, str) and output:
        return [Message("assistant", (Part("text", output),), "output", "assistant")]
    if isinstance(output, list) and output and all(
            isinstance(c, dict) and "toolName" in c for c in output):
        output = {"toolCalls": output}
    elif isinstance(output, list) and output and all(
            isinstance(b, dict) and b.get("type") in _BLOCKS for b in output):
        output = {"content": output}  # an Anthropic answer's content blocks
    if not isinstance(output, dict):
        return None
    text = output.get("text", output.get("content"))
    calls = _calls(output.get("toolCalls", output.get("tool_calls")))
    parts = [*_content(text if isinstance(text, str | list) else None), *calls]
    if not parts:
        return None
    return [Message("assistant", tuple(parts), "output", "assistant",
                    _str(output.get("finishReason", output.get("finish_reason"))))]


def _first(value: dict[str, Any], *names: str) -> Any:
    for name in names:
        if value.get(name) is not None:
            return value[name]
    return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _shown(value: Any) -> str:
    """Text as it is; JSON text and data pretty-printed."""
    if value is None:
        return ""
    if isinstance(value, str):
        if value[:1] not in ("{", "["):
            return value
        try:
            value = json.loads(value)
        except ValueError:
            return str(value)
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)
