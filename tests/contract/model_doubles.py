"""Scripted stand-ins for the model providers behind the LLM and Embedder ports, one per adapter,
so one shared suite drives them all: the OpenAI-compatible adapter against a real loopback
server (`tests.fake_openai`), the Bedrock adapters against botocore's Stubber with the shapes
Bedrock answers in (moto has no Bedrock runtime)."""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
import numpy as np
from bench_core.embed.bedrock import BedrockEmbedder
from bench_core.llm.bedrock import BedrockLLM
from bench_core.llm.openai_compat import OpenAICompatLLM
from bench_core.ports.llm import LLM, Backoff
from bench_core.settings import BEDROCK_JUDGE_MODEL
from botocore.response import StreamingBody
from botocore.stub import Stubber

from tests.fake_openai import Reply, answer, fake_openai

ATTEMPTS = 3
"""Every scripted model's backoff: the suite's bounded-retry tests count on it."""


@dataclass(frozen=True)
class Step:
    """One scripted answer: a completion (`text`, token usage), or a failure that is worth
    retrying (`busy`) or not (`refused`)."""

    text: str | None = None
    usage: tuple[int, int] = (120, 30)
    busy: bool = False
    refused: bool = False


BUSY = Step(busy=True)
REFUSED = Step(refused=True)


def says(text: str, usage: tuple[int, int] = (120, 30)) -> Step:
    return Step(text=text, usage=usage)


@dataclass
class ScriptedModel:
    """An LLM adapter wired to a scripted provider: `script` what it answers next, then read
    how many requests reached the provider and how long the adapter backed off."""

    name: str
    llm: LLM
    _script: Any
    _calls: Any
    sleeps: list[float] = field(default_factory=list)

    def script(self, *steps: Step) -> None:
        self._script(steps)

    @property
    def calls(self) -> int:
        return int(self._calls())


def _openai_reply(step: Step) -> Reply:
    if step.busy:
        return Reply(status=503)
    if step.refused:
        return Reply(status=401)
    return answer(step.text or "", usage=step.usage)


@contextmanager
def openai_compat_model() -> Iterator[ScriptedModel]:
    with fake_openai() as server:
        sleeps: list[float] = []
        llm = OpenAICompatLLM(server.url, "llama3.3", timeout_s=5.0,
                              backoff=Backoff(attempts=ATTEMPTS, sleep=sleeps.append))
        yield ScriptedModel("openai_compat", llm,
                            lambda steps: server.script(*map(_openai_reply, steps)),
                            lambda: len(server.requests), sleeps)


def bedrock_runtime() -> Any:
    return boto3.client("bedrock-runtime", region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing")


def converse_response(text: str, tokens_in: int = 410, tokens_out: int = 27) -> dict[str, Any]:
    """What Converse returns for Llama 3.3 70B (shape as documented for the Converse API)."""
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": tokens_in, "outputTokens": tokens_out,
                  "totalTokens": tokens_in + tokens_out},
        "metrics": {"latencyMs": 812},
    }


@contextmanager
def bedrock_model() -> Iterator[ScriptedModel]:
    client = bedrock_runtime()
    calls: list[dict[str, Any]] = []
    client.meta.events.register("provide-client-params.bedrock-runtime.Converse",
                                lambda params, **_: calls.append(params))

    def script(steps: tuple[Step, ...]) -> None:
        for step in steps:
            if step.busy:
                stubber.add_client_error("converse", "ThrottlingException", "slow down",
                                         http_status_code=429)
            elif step.refused:
                stubber.add_client_error("converse", "AccessDeniedException", "no access",
                                         http_status_code=403)
            else:
                stubber.add_response("converse", converse_response(step.text or "", *step.usage))

    with Stubber(client) as stubber:
        sleeps: list[float] = []
        llm = BedrockLLM(BEDROCK_JUDGE_MODEL, client=client,
                         backoff=Backoff(attempts=ATTEMPTS, sleep=sleeps.append))
        yield ScriptedModel("bedrock", llm, script, lambda: len(calls), sleeps)
        stubber.assert_no_pending_responses()


MODELS = {"openai_compat": openai_compat_model, "bedrock": bedrock_model}


# ---- embeddings -----------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")


def word_vector(text: str, dimensions: int) -> list[float]:
    """A stand-in for Titan's embedding: hashed bag of words, so texts sharing words are close."""
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dimensions] += 1.0
    return vector if any(vector) else [1.0] + [0.0] * (dimensions - 1)


def titan_response(vector: list[float]) -> dict[str, Any]:
    body = json.dumps({"embedding": vector, "inputTextTokenCount": 7}).encode()
    return {"body": StreamingBody(io.BytesIO(body), len(body)), "contentType": "application/json"}


@dataclass
class StubbedTitan:
    """A Bedrock embedder on a Stubber that answers each text it is told about, in order."""

    embedder: BedrockEmbedder
    stubber: Stubber

    def expect(self, texts: list[str]) -> None:
        dimensions = self.embedder.dimensions
        for text in texts:
            self.stubber.add_response("invoke_model", titan_response(word_vector(text, dimensions)), {
                "modelId": self.embedder.model, "contentType": "application/json",
                "accept": "application/json",
                "body": json.dumps({"inputText": text or "(empty)", "dimensions": dimensions,
                                    "normalize": True})})


@contextmanager
def titan_embedder(dimensions: int = 64) -> Iterator[StubbedTitan]:
    client = bedrock_runtime()
    with Stubber(client) as stubber:
        # One worker: the Stubber answers in the order calls arrive.
        yield StubbedTitan(BedrockEmbedder("amazon.titan-embed-text-v2:0", dimensions=dimensions,
                                           client=client, workers=1), stubber)
        stubber.assert_no_pending_responses()


def unit_or_zero_rows(vectors: np.ndarray) -> bool:
    norms = np.linalg.norm(vectors, axis=1)
    return bool(np.all(np.isclose(norms, 1.0, atol=1e-5) | np.isclose(norms, 0.0)))
