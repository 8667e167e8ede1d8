"""LangChain prompts and messages that arrived as Python reprs, read back as messages.

The original client's LangChain handler (`bench-langchain` 0.1.0) and SDKs before 0.2 hand a
chain step's `ChatPromptValue` to the SDK's JSON encoder, which stores what it cannot encode as
its repr: `ChatPromptValue(messages=[SystemMessage(content='Be brief.', ...), ...])`. Such a
value is parsed (never evaluated: only calls of the known LangChain classes with literal
arguments are read) into the message dicts the SDK's adapter sends today
(`{"role": "human", "content": ...}`); anything else, a repr cut short by the SDK's cap
included, stays the text it was.
"""

from __future__ import annotations

import ast
import re
from typing import Any

_MESSAGES = {"HumanMessage": "human", "AIMessage": "ai", "SystemMessage": "system",
             "ToolMessage": "tool", "FunctionMessage": "function", "ChatMessage": None}
"""Message classes (and their `Chunk`s) and the role each stands for; a `ChatMessage` names
its own."""
_LOOKS_LIKE = re.compile(r"^\[?(?:ChatPromptValue|StringPromptValue|(?:Human|AI|System|Tool|"
                         r"Function|Chat)Message(?:Chunk)?)\(")
MAX_CHARS = 20_000
"""Longer text is never a repr the SDK sent (it cuts a repr at 2,000 characters), so it is not
parsed: a request cannot make ingest parse megabytes of Python."""
_KEPT = ("tool_calls", "tool_call_id", "name")
"""Message fields kept besides role and content: what a chat shows; the rest (ids, response
metadata, usage) is LangChain's bookkeeping."""


class _NotARepr(ValueError):
    pass


def from_repr(value: Any) -> Any:
    """`value` with a LangChain prompt or message repr read as messages (a `StringPromptValue`
    as its text); any other value as it is."""
    if not isinstance(value, str) or len(value) > MAX_CHARS or _LOOKS_LIKE.match(value) is None:
        return value
    try:
        return _value(ast.parse(value, mode="eval").body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return value


def _value(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant) and (node.value is None
                                           or isinstance(node.value, str | int | float)):
        return node.value
    if isinstance(node, ast.List | ast.Tuple):
        return [_value(item) for item in node.elts]
    if isinstance(node, ast.Dict) and all(key is not None for key in node.keys):
        return {_key(key): _value(item) for key, item in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args:
        return _object(node.func.id, {k.arg: _value(k.value) for k in node.keywords if k.arg})
    raise _NotARepr(type(node).__name__)


def _key(node: ast.expr | None) -> str:
    key = _value(node) if node is not None else None
    if not isinstance(key, str):
        raise _NotARepr("a key that is not text")
    return key


def _object(name: str, fields: dict[str, Any]) -> Any:
    if name == "ChatPromptValue" and isinstance(fields.get("messages"), list):
        return fields["messages"]
    if name == "StringPromptValue" and isinstance(fields.get("text"), str):
        return fields["text"]
    base = name.removesuffix("Chunk")
    if base not in _MESSAGES:
        raise _NotARepr(name)
    role = _MESSAGES[base] or fields.get("role")
    message = {"role": role, "content": fields.get("content", "")}
    message.update({k: fields[k] for k in _KEPT if fields.get(k)})
    return message
