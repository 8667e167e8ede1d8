"""The LLM port: one chat completion, behind three adapters (adapters in `llm/`).

- `llm/bedrock.py` `BedrockLLM`: Bedrock's Converse API (Llama 3.3 70B through its inference profile).
- `llm/openai_compat.py` `OpenAICompatLLM`: any OpenAI-compatible `/v1/chat/completions` (Ollama, vLLM).
- none: no model at all; the judge is then `evals/heuristic.py` and clusters are described by their
  terms. `open_llm` returns None for it, so callers cannot mistake a heuristic for a model.

Adapters retry throttling, timeouts and 5xx with backoff themselves and raise `LLMUnavailable`
once those retries are spent, so a caller (a worker, a Step Functions Retry) can try later.
Token usage comes back with every answer: it is what judging costs.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol, TypedDict


class Message(TypedDict):
    role: Literal["user", "assistant"]
    content: str


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int
    output_tokens: int


class LLMError(Exception):
    """The model could not be asked (refused request, bad configuration)."""


class LLMUnavailable(LLMError):
    """The model is there but not answering now (throttled, timed out, 5xx): try again later."""


class LLM(Protocol):
    label: str
    """Who answers, as recorded with every result: `bedrock:<model>`, `openai_compat:<model>`."""

    def complete(self, system: str, messages: list[Message], *, max_tokens: int) -> Completion: ...


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with full jitter; `sleep` is injectable so tests do not wait."""

    attempts: int = 4
    base_s: float = 0.5
    cap_s: float = 8.0
    sleep: Callable[[float], object] = time.sleep

    def wait(self, attempt: int, retry_after: float | None = None) -> None:
        """Sleep before retry number `attempt` (1-based); a server's Retry-After wins if longer."""
        delay = random.uniform(0, min(self.cap_s, self.base_s * 2 ** (attempt - 1)))
        self.sleep(min(self.cap_s, max(delay, retry_after or 0.0)))
