"""The LLM port over Amazon Bedrock's Converse API (Llama 3.3 70B Instruct by default).

The model is called through a cross-region inference profile of the stack's geography
(`us.meta.llama3-3-70b-...`, `eu.amazon.nova-pro-v1:0`, ...; template.yaml's BedrockGeography
and JudgeModel): many models are refused on demand by their bare id. botocore's own retries are
off so that there is one retry policy, ours, which tests drive through botocore's Stubber.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError, ReadTimeoutError
from botocore.exceptions import ConnectionError as BotoConnectionError

from ..ports.llm import Backoff, Completion, LLMError, LLMUnavailable, Message

RETRYABLE_CODES = frozenset({"ThrottlingException", "ServiceUnavailableException",
                             "ModelNotReadyException", "InternalServerException",
                             "ModelTimeoutException"})


CONNECT_TIMEOUT_S = 2.0
"""Reaching the regional endpoint; with the read timeout, what one call may take at most."""


def bedrock_client(timeout_s: float) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client("bedrock-runtime", config=Config(
        read_timeout=timeout_s, connect_timeout=CONNECT_TIMEOUT_S,
        retries={"total_max_attempts": 1}))


class BedrockLLM:
    def __init__(self, model: str, *, timeout_s: float = 60.0, client: Any = None,
                 backoff: Backoff | None = None) -> None:
        self.model = model
        self.label = f"bedrock:{model}"
        self.backoff = backoff or Backoff()
        self._client = client if client is not None else bedrock_client(timeout_s)

    def complete(self, system: str, messages: list[Message], *, max_tokens: int) -> Completion:
        request = {"modelId": self.model, "system": [{"text": system}],
                   "messages": [{"role": m["role"], "content": [{"text": m["content"]}]}
                                for m in messages],
                   "inferenceConfig": {"maxTokens": max_tokens, "temperature": 0.0}}
        for attempt in range(1, self.backoff.attempts + 1):
            try:
                return _completion(self._client.converse(**request))
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                if code not in RETRYABLE_CODES:
                    raise LLMError(f"Bedrock refused {self.model}: {code}: {exc}") from exc
                problem = code
            except (ReadTimeoutError, BotoConnectionError) as exc:
                problem = f"{type(exc).__name__}: {exc}"
            if attempt < self.backoff.attempts:
                self.backoff.wait(attempt)
        raise LLMUnavailable(f"Bedrock {self.model}: {problem} (after {self.backoff.attempts} attempts)")


def _completion(response: dict[str, Any]) -> Completion:
    """The text blocks of Converse's `output.message` and its `usage`."""
    content = response.get("output", {}).get("message", {}).get("content") or []
    usage = response.get("usage") or {}
    return Completion(text="".join(block.get("text", "") for block in content),
                      input_tokens=int(usage.get("inputTokens") or 0),
                      output_tokens=int(usage.get("outputTokens") or 0))
