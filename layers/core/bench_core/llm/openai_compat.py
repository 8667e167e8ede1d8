"""The LLM port over any OpenAI-compatible `/v1/chat/completions` (Ollama, vLLM, llama.cpp...).

Temperature 0, one choice. 429 (honouring `Retry-After`), 5xx, timeouts and refused connections
are retried with backoff, then reported as `LLMUnavailable`; other 4xx are configuration errors.
"""

from __future__ import annotations

from typing import Any

import httpx

from ..ports.llm import Backoff, Completion, LLMError, LLMUnavailable, Message

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class OpenAICompatLLM:
    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 timeout_s: float = 60.0, backoff: Backoff | None = None,
                 transport: httpx.BaseTransport | None = None) -> None:
        base = base_url.rstrip("/")
        self.url = base if base.endswith("/chat/completions") else base + "/chat/completions"
        self.model = model
        self.label = f"openai_compat:{model}"
        self.backoff = backoff or Backoff()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout_s, headers=headers, transport=transport)

    def complete(self, system: str, messages: list[Message], *, max_tokens: int) -> Completion:
        body = {"model": self.model, "temperature": 0, "max_tokens": max_tokens, "stream": False,
                "messages": [{"role": "system", "content": system}, *messages]}
        for attempt in range(1, self.backoff.attempts + 1):
            try:
                response = self._client.post(self.url, json=body)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                problem, retry_after = f"{type(exc).__name__}: {exc}", None
            else:
                if response.status_code == 200:
                    return _completion(response)
                if response.status_code not in RETRYABLE_STATUS:
                    raise LLMError(f"{self.url} answered {response.status_code}: {response.text[:300]}")
                problem = f"{self.url} answered {response.status_code}"
                retry_after = _retry_after(response)
            if attempt < self.backoff.attempts:
                self.backoff.wait(attempt, retry_after)
        raise LLMUnavailable(f"{problem} (after {self.backoff.attempts} attempts)")

    def close(self) -> None:
        self._client.close()


def _completion(response: httpx.Response) -> Completion:
    try:
        data: Any = response.json()
        text = data["choices"][0]["message"]["content"]
        usage = data.get("usage") or {}
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise LLMError(f"not a chat completion response: {response.text[:300]}") from exc
    return Completion(text=text if isinstance(text, str) else "",
                      input_tokens=int(usage.get("prompt_tokens") or 0),
                      output_tokens=int(usage.get("completion_tokens") or 0))


def _retry_after(response: httpx.Response) -> float | None:
    raw = response.headers.get("retry-after", "")
    try:
        return max(0.0, float(raw))
    except ValueError:
        return None
