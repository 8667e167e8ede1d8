"""The LLM port: every adapter (OpenAI-compatible, Bedrock) passes this one suite, against its
scripted provider (`model_doubles`). What only one provider does (its request shape, its error
codes, Retry-After, timeouts) is in that adapter's own file."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from bench_core.ports.llm import LLMError, LLMUnavailable

from tests.contract.model_doubles import ATTEMPTS, BUSY, MODELS, REFUSED, ScriptedModel, says

ASK = [{"role": "user", "content": "Grade this."}]


@pytest.fixture(params=sorted(MODELS))
def model(request: pytest.FixtureRequest) -> Iterator[ScriptedModel]:
    with MODELS[request.param]() as scripted:
        yield scripted


def test_an_answer_comes_back_with_its_token_usage(model: ScriptedModel) -> None:
    model.script(says('{"score": 1, "reasoning": "ok"}', usage=(321, 12)))
    completion = model.llm.complete("You judge.", ASK, max_tokens=50)
    assert completion.text == '{"score": 1, "reasoning": "ok"}'
    assert (completion.input_tokens, completion.output_tokens) == (321, 12)
    assert (model.calls, model.sleeps) == (1, [])


def test_a_busy_model_is_asked_again_after_a_backoff(model: ScriptedModel) -> None:
    model.script(BUSY, BUSY, says("fine"))
    assert model.llm.complete("s", ASK, max_tokens=5).text == "fine"
    assert model.calls == 3 and len(model.sleeps) == 2


def test_a_model_that_stays_busy_is_unavailable_after_bounded_retries(model: ScriptedModel) -> None:
    model.script(*[BUSY] * ATTEMPTS)
    with pytest.raises(LLMUnavailable):
        model.llm.complete("s", ASK, max_tokens=5)
    assert model.calls == ATTEMPTS and len(model.sleeps) == ATTEMPTS - 1


def test_a_refused_request_is_an_error_never_retried(model: ScriptedModel) -> None:
    model.script(REFUSED)
    with pytest.raises(LLMError) as raised:
        model.llm.complete("s", ASK, max_tokens=5)
    assert not isinstance(raised.value, LLMUnavailable)
    assert (model.calls, model.sleeps) == (1, [])


def test_the_label_names_the_provider_and_the_model(model: ScriptedModel) -> None:
    provider, _, name = model.llm.label.partition(":")
    assert provider == model.name and name
