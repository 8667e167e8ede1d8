"""The Bedrock adapters against botocore's Stubber, with the real response shapes (moto has no
Bedrock runtime): Converse for the judge, InvokeModel with Titan V2 for embeddings."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import boto3
import numpy as np
import pytest
from bench_core.embed.bedrock import BedrockEmbedder
from bench_core.llm import Backoff, LLMError, LLMUnavailable
from bench_core.llm.bedrock import BedrockLLM
from bench_core.runtime.config import BEDROCK_JUDGE_MODEL
from botocore.response import StreamingBody
from botocore.stub import Stubber

ASK = [{"role": "user", "content": "Grade this."}]


def converse_response(text: str, tokens_in: int = 410, tokens_out: int = 27) -> dict[str, Any]:
    """What Converse returns for Llama 3.3 70B (shape as documented for the Converse API)."""
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": tokens_in, "outputTokens": tokens_out,
                  "totalTokens": tokens_in + tokens_out},
        "metrics": {"latencyMs": 812},
    }


@pytest.fixture
def runtime() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client("bedrock-runtime", region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def llm(client: Any, sleeps: list[float]) -> BedrockLLM:
    return BedrockLLM(BEDROCK_JUDGE_MODEL, client=client,
                      backoff=Backoff(attempts=3, sleep=sleeps.append))


EXPECTED_REQUEST = {
    "modelId": "us.meta.llama3-3-70b-instruct-v1:0",
    "system": [{"text": "You judge."}],
    "messages": [{"role": "user", "content": [{"text": "Grade this."}]}],
    "inferenceConfig": {"maxTokens": 300, "temperature": 0.0},
}


def test_converse_through_the_inference_profile_returns_text_and_usage(runtime) -> None:
    client, stubber = runtime
    stubber.add_response("converse", converse_response('{"score": 1, "reasoning": "ok"}'),
                         EXPECTED_REQUEST)
    completion = llm(client, []).complete("You judge.", ASK, max_tokens=300)
    assert completion.text == '{"score": 1, "reasoning": "ok"}'
    assert (completion.input_tokens, completion.output_tokens) == (410, 27)
    assert llm(client, []).label == "bedrock:us.meta.llama3-3-70b-instruct-v1:0"


def test_throttling_is_retried_with_backoff(runtime) -> None:
    client, stubber = runtime
    stubber.add_client_error("converse", "ThrottlingException", "Too many requests",
                             http_status_code=429, expected_params=EXPECTED_REQUEST)
    stubber.add_client_error("converse", "ServiceUnavailableException", "busy",
                             http_status_code=503, expected_params=EXPECTED_REQUEST)
    stubber.add_response("converse", converse_response("fine"), EXPECTED_REQUEST)
    sleeps: list[float] = []
    assert llm(client, sleeps).complete("You judge.", ASK, max_tokens=300).text == "fine"
    assert len(sleeps) == 2


def test_throttling_past_the_retries_is_unavailable(runtime) -> None:
    client, stubber = runtime
    for _ in range(3):
        stubber.add_client_error("converse", "ThrottlingException", "slow down",
                                 http_status_code=429, expected_params=EXPECTED_REQUEST)
    with pytest.raises(LLMUnavailable, match="ThrottlingException"):
        llm(client, []).complete("You judge.", ASK, max_tokens=300)


@pytest.mark.parametrize("code", ["ValidationException", "AccessDeniedException",
                                  "ResourceNotFoundException"])
def test_a_refused_call_is_an_error_without_retries(runtime, code: str) -> None:
    client, stubber = runtime
    stubber.add_client_error("converse", code, "nope", http_status_code=400,
                             expected_params=EXPECTED_REQUEST)
    sleeps: list[float] = []
    with pytest.raises(LLMError) as raised:
        llm(client, sleeps).complete("You judge.", ASK, max_tokens=300)
    assert not isinstance(raised.value, LLMUnavailable) and code in str(raised.value)
    assert sleeps == []


# ---- Titan Text Embeddings V2 -------------------------------------------------------------------


def titan_response(vector: list[float]) -> dict[str, Any]:
    body = json.dumps({"embedding": vector, "inputTextTokenCount": 7}).encode()
    return {"body": StreamingBody(io.BytesIO(body), len(body)), "contentType": "application/json"}


def test_titan_embeddings_are_requested_per_text_and_come_back_unit_length(runtime) -> None:
    client, stubber = runtime
    for vector, text in (([3.0, 4.0], "timeout"), ([0.0, 2.0], "rate limit")):
        stubber.add_response("invoke_model", titan_response(vector), {
            "modelId": "amazon.titan-embed-text-v2:0", "contentType": "application/json",
            "accept": "application/json",
            "body": json.dumps({"inputText": text, "dimensions": 2, "normalize": True})})
    embedder = BedrockEmbedder("amazon.titan-embed-text-v2:0", dimensions=2, client=client,
                               workers=1)
    vectors = embedder.embed(["timeout", "rate limit"])
    assert vectors.shape == (2, 2)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert np.allclose(vectors[0], [0.6, 0.8])
    assert embedder.label == "bedrock:amazon.titan-embed-text-v2:0"
