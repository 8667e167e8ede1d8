"""The Bedrock adapters against botocore's Stubber, with the real response shapes (moto has no
Bedrock runtime): Converse for the judge, InvokeModel with Titan V2 for embeddings. What is
particular to Bedrock; the shared suites are test_llm_contract.py and test_embedder_contract.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from bench_core.embed.bedrock import BedrockEmbedder
from bench_core.llm.bedrock import BedrockLLM
from bench_core.ports.llm import Backoff, LLMError, LLMUnavailable
from bench_core.settings import BEDROCK_JUDGE_MODEL
from botocore.stub import Stubber

from tests.contract.model_doubles import bedrock_runtime, converse_response, titan_response

ASK = [{"role": "user", "content": "Grade this."}]


@pytest.fixture
def runtime() -> Iterator[tuple[Any, Stubber]]:
    client = bedrock_runtime()
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
