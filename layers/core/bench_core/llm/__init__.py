"""The LLM port (`base.py`): one chat completion; `openai_compat.py` and `bedrock.py` adapters."""

from .base import (
    LLM,
    Backoff,
    Completion,
    LLMError,
    LLMUnavailable,
    Message,
)

__all__ = ["Message", "Completion", "LLMError", "LLMUnavailable", "LLM", "Backoff"]
