"""A loopback HTTP server answering like the OpenAI and Anthropic APIs, for the adapter tests.

The bodies have the providers' real shapes (chat completions and their SSE chunks with the
usage chunk `stream_options.include_usage` asks for, Responses API objects and events,
embeddings, Anthropic messages and their SSE events, error bodies), and every answer is
deterministic, so an unwrapped and a wrapped client can be compared result for result.
A request for the model `fail` gets the provider's 400 error.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CREATED = 1_764_691_200
CHAT_MODEL = "gpt-4o-mini-2024-07-18"
CHAT_USAGE = {"prompt_tokens": 1200, "completion_tokens": 30, "total_tokens": 1230,
              "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
              "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                            "accepted_prediction_tokens": 0,
                                            "rejected_prediction_tokens": 0}}
CLAUDE_MODEL = "claude-sonnet-4-5-20250929"
CLAUDE_USAGE = {"input_tokens": 100, "cache_creation_input_tokens": 2000,
                "cache_read_input_tokens": 5000, "output_tokens": 50, "service_tier": "standard"}
TEXT = ["The capital", " of France", " is Paris."]


def chat_completion() -> dict[str, Any]:
    return {"id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "object": "chat.completion",
            "created": CREATED, "model": CHAT_MODEL, "service_tier": "default",
            "system_fingerprint": "fp_44709d6fcb",
            "choices": [{"index": 0, "logprobs": None, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "".join(TEXT),
                                     "refusal": None, "annotations": []}}],
            "usage": CHAT_USAGE}


def chat_chunks(include_usage: bool, tools: bool) -> list[dict[str, Any]]:
    base = {"id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "object": "chat.completion.chunk",
            "created": CREATED, "model": CHAT_MODEL, "service_tier": "default",
            "system_fingerprint": "fp_44709d6fcb", **({"usage": None} if include_usage else {})}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                     "finish_reason": finish}]}

    if tools:
        parts = [{"index": 0, "id": "call_DdmO9pD3xa9XTPNJ32zg2hcA", "type": "function",
                  "function": {"name": "get_weather", "arguments": ""}},
                 {"index": 0, "function": {"arguments": '{"city": '}},
                 {"index": 0, "function": {"arguments": '"Paris"}'}}]
        chunks = [chunk({"role": "assistant", "content": None, "tool_calls": [parts[0]]})]
        chunks += [chunk({"tool_calls": [p]}) for p in parts[1:]]
        chunks.append(chunk({}, "tool_calls"))
    else:
        chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
        chunks += [chunk({"content": piece}) for piece in TEXT]
        chunks.append(chunk({}, "stop"))
    if include_usage:
        chunks.append({**base, "choices": [], "usage": CHAT_USAGE})
    return chunks


def response_object(status: str = "completed") -> dict[str, Any]:
    done = status == "completed"
    return {
        "id": "resp_67ccd2bed1ec8190b14f964abc054267", "object": "response",
        "created_at": CREATED, "status": status, "error": None, "incomplete_details": None,
        "instructions": None, "max_output_tokens": None, "model": "gpt-4.1-2025-04-14",
        "output": [{"type": "message", "id": "msg_67ccd2bf17f0819081ff3bb2cf6508e6",
                    "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": "".join(TEXT),
                                 "annotations": []}]}] if done else [],
        "parallel_tool_calls": True, "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None}, "store": True, "temperature": 1.0,
        "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": [], "top_p": 1.0,
        "truncation": "disabled",
        "usage": {"input_tokens": 36, "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": 87, "output_tokens_details": {"reasoning_tokens": 64},
                  "total_tokens": 123} if done else None,
        "user": None, "metadata": {}}


def response_events() -> list[dict[str, Any]]:
    events = [{"type": "response.created", "response": response_object("in_progress")}]
    events += [{"type": "response.output_text.delta", "item_id": "msg_67ccd2bf17f0819081ff3bb2cf6508e6",
                "output_index": 0, "content_index": 0, "delta": piece, "logprobs": []}
               for piece in TEXT]
    events.append({"type": "response.completed", "response": response_object()})
    return [{**event, "sequence_number": i} for i, event in enumerate(events)]


def embeddings(inputs: Any) -> dict[str, Any]:
    texts = inputs if isinstance(inputs, list) else [inputs]
    return {"object": "list", "model": "text-embedding-3-small",
            "data": [{"object": "embedding", "index": i, "embedding": [0.0023, -0.0093, 0.0158]}
                     for i in range(len(texts))],
            "usage": {"prompt_tokens": 8 * len(texts), "total_tokens": 8 * len(texts)}}


def claude_message(tools: bool = False) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": "".join(TEXT)}]
    if tools:
        content = [{"type": "text", "text": "Let me check."},
                   {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9",
                    "name": "get_weather", "input": {"city": "Paris"}}]
    return {"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
            "model": CLAUDE_MODEL, "content": content,
            "stop_reason": "tool_use" if tools else "end_turn", "stop_sequence": None,
            "usage": CLAUDE_USAGE}


def claude_events(tools: bool) -> list[dict[str, Any]]:
    start = {**claude_message(tools), "content": [], "stop_reason": None,
             "usage": {**CLAUDE_USAGE, "output_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start},
                                    {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}},
                                    {"type": "ping"}]
    pieces = ["Let me check."] if tools else TEXT
    events += [{"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": piece}} for piece in pieces]
    events.append({"type": "content_block_stop", "index": 0})
    if tools:
        events.append({"type": "content_block_start", "index": 1, "content_block": {
            "type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather",
            "input": {}}})
        events += [{"type": "content_block_delta", "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": part}}
                   for part in ('{"city": ', '"Paris"}')]
        events.append({"type": "content_block_stop", "index": 1})
    events += [{"type": "message_delta",
                "delta": {"stop_reason": "tool_use" if tools else "end_turn",
                          "stop_sequence": None},
                "usage": {"output_tokens": CLAUDE_USAGE["output_tokens"]}},
               {"type": "message_stop"}]
    return events


def sse(events: list[dict[str, Any]], named: bool, done: bool = False) -> bytes:
    """Server-sent events as the providers send them: Anthropic and the Responses API name each
    event after its type; chat completions send bare data lines and end with [DONE]."""
    lines = [(f"event: {e['type']}\n" if named else "") + f"data: {json.dumps(e)}\n\n"
             for e in events]
    return ("".join(lines) + ("data: [DONE]\n\n" if done else "")).encode()


OPENAI_ERROR = {"error": {"message": "The model `fail` does not exist or you do not have access "
                                     "to it.", "type": "invalid_request_error", "param": None,
                          "code": "model_not_found"}}
ANTHROPIC_ERROR = {"type": "error", "error": {"type": "invalid_request_error",
                                              "message": "model: fail is not a model"}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        anthropic = self.path.startswith("/v1/messages")
        if request.get("model") == "fail":
            return self._send(400, json.dumps(ANTHROPIC_ERROR if anthropic else OPENAI_ERROR))
        stream, tools = request.get("stream") is True, bool(request.get("tools"))
        if anthropic:
            return (self._send(200, sse(claude_events(tools), named=True), "text/event-stream")
                    if stream else self._send(200, json.dumps(claude_message(tools))))
        if self.path == "/v1/chat/completions":
            include = bool((request.get("stream_options") or {}).get("include_usage"))
            return (self._send(200, sse(chat_chunks(include, tools), named=False, done=True),
                               "text/event-stream")
                    if stream else self._send(200, json.dumps(chat_completion())))
        if self.path == "/v1/responses":
            return (self._send(200, sse(response_events(), named=True), "text/event-stream")
                    if stream else self._send(200, json.dumps(response_object())))
        if self.path == "/v1/embeddings":
            return self._send(200, json.dumps(embeddings(request.get("input"))))
        self._send(404, json.dumps({"error": {"message": "not found", "type": "invalid_request_error"}}))

    def _send(self, status: int, body: str | bytes, content_type: str = "application/json") -> None:
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", "req_fixed")
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def provider_server() -> Iterator[str]:
    """The base URL of a running fake (OpenAI clients add `/v1`, Anthropic's add nothing)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
