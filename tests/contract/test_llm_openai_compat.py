"""The OpenAI-compatible adapter, and the judge on top of it, against a real loopback server:
what is particular to this provider (the shared LLM suite is test_llm_contract.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from bench_core.domain.models import TaskState
from bench_core.evals.judge import ModelJudge
from bench_core.llm.openai_compat import OpenAICompatLLM
from bench_core.ports.llm import Backoff, LLMError, LLMUnavailable

from tests.fake_openai import FakeOpenAI, Reply, answer, fake_openai, verdict

ASK = [{"role": "user", "content": "Grade this."}]


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with fake_openai() as fake:
        yield fake


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def client(server: FakeOpenAI, sleeps: Sleeps, **options: object) -> OpenAICompatLLM:
    options.setdefault("timeout_s", 5.0)
    return OpenAICompatLLM(server.url, "llama3.3", backoff=Backoff(attempts=3, sleep=sleeps),
                           **options)  # type: ignore[arg-type]


def finished_task(**fields: object) -> TaskState:
    return TaskState(task_id="t1", name="search", status="success", input={"q": "capital of France"},
                     output="Paris", ended_at="2026-12-02T16:00:00.000Z", **fields)  # type: ignore[arg-type]


def test_the_request_is_a_chat_completion_with_the_system_prompt_first_and_the_key(
        server: FakeOpenAI, sleeps: Sleeps) -> None:
    server.script(answer("hello"))
    client(server, sleeps, api_key="sk-test").complete("Be brief.", ASK, max_tokens=50)
    (request,) = server.requests
    assert request["model"] == "llama3.3" and request["temperature"] == 0
    assert request["max_tokens"] == 50
    assert request["messages"] == [{"role": "system", "content": "Be brief."}, *ASK]
    assert server.headers[0]["authorization"] == "Bearer sk-test"
    assert sleeps == []


def test_429_is_retried_honouring_retry_after(server: FakeOpenAI, sleeps: Sleeps) -> None:
    server.script(Reply(status=429, headers={"Retry-After": "3"}), answer("ok"))
    assert client(server, sleeps).complete("s", ASK, max_tokens=5).text == "ok"
    assert len(server.requests) == 2
    assert sleeps == [3.0]


@pytest.mark.parametrize("status", [429, 500, 503])
def test_a_model_that_stays_busy_is_unavailable_after_bounded_retries(
        server: FakeOpenAI, sleeps: Sleeps, status: int) -> None:
    server.script(Reply(status=status))
    with pytest.raises(LLMUnavailable, match=f"answered {status}"):
        client(server, sleeps).complete("s", ASK, max_tokens=5)
    assert len(server.requests) == 3
    assert len(sleeps) == 2


def test_a_timeout_is_retried_then_reported_unavailable(server: FakeOpenAI, sleeps: Sleeps) -> None:
    server.script(Reply(text="late", delay_s=1.0))
    with pytest.raises(LLMUnavailable, match="Timeout"):
        client(server, sleeps, timeout_s=0.2).complete("s", ASK, max_tokens=5)
    assert len(server.requests) == 3


def test_a_timeout_followed_by_an_answer_succeeds(server: FakeOpenAI, sleeps: Sleeps) -> None:
    server.script(Reply(text="late", delay_s=1.0), answer("on time"))
    assert client(server, sleeps, timeout_s=0.2).complete("s", ASK, max_tokens=5).text == "on time"


def test_a_body_that_is_not_a_completion_is_an_error(server: FakeOpenAI, sleeps: Sleeps) -> None:
    server.script(Reply(raw="<html>proxy error</html>"))
    with pytest.raises(LLMError, match="not a chat completion"):
        client(server, sleeps).complete("s", ASK, max_tokens=5)


def test_a_connection_refused_is_unavailable(sleeps: Sleeps) -> None:
    with fake_openai() as fake:
        url = fake.url
    llm = OpenAICompatLLM(url, "m", backoff=Backoff(attempts=2, sleep=sleeps), timeout_s=2)
    with pytest.raises(LLMUnavailable):
        llm.complete("s", ASK, max_tokens=5)


# ---- the judge over this adapter ----------------------------------------------------------------


def judge(server: FakeOpenAI, sleeps: Sleeps, price: float = 0.0) -> ModelJudge:
    return ModelJudge(client(server, sleeps), max_attempts=3, price_per_mtok_usd=price)


def test_the_judge_records_score_reasoning_judge_prompt_version_and_tokens(
        server: FakeOpenAI, sleeps: Sleeps) -> None:
    server.script(verdict(0.9, "Correct and direct."))
    result = judge(server, sleeps, price=0.72).judge(finished_task())
    assert (result.status, result.score, result.reasoning) == ("scored", 0.9, "Correct and direct.")
    assert result.judge == "openai_compat:llama3.3"
    assert result.prompt_version and result.prompt_version.startswith("judge-v")
    assert (result.input_tokens, result.output_tokens, result.attempts) == (120, 30, 1)
    assert result.cost_usd == pytest.approx(150 * 0.72 / 1e6)
    prompt = server.requests[0]["messages"][-1]["content"]
    assert "capital of France" in prompt and "Paris" in prompt and "success" in prompt


def test_malformed_json_is_asked_again_and_then_scored(server: FakeOpenAI, sleeps: Sleeps) -> None:
    server.script(answer("Sure! The score is 0.7 because..."), verdict(0.7))
    result = judge(server, sleeps).judge(finished_task())
    assert (result.status, result.score, result.attempts) == ("scored", 0.7, 2)
    assert (result.input_tokens, result.output_tokens) == (240, 60)
    retry = server.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": "Sure! The score is 0.7 because..."}
    assert "not valid JSON" in retry[-1]["content"]


@pytest.mark.parametrize("reply, reason", [
    (json.dumps({"score": 1.5, "reasoning": "great"}), "outside 0..1"),
    (json.dumps({"score": -0.1, "reasoning": "bad"}), "outside 0..1"),
    (json.dumps({"score": "high", "reasoning": "x"}), "not a number"),
    (json.dumps({"score": True, "reasoning": "x"}), "not a number"),
    (json.dumps({"score": 0.5}), "reasoning"),
    (json.dumps([0.5]), "not a JSON object"),
    ("{'score': 0.5}", "not valid JSON"),
])
def test_answers_that_stay_invalid_end_unscored_with_the_reason_never_a_score(
        server: FakeOpenAI, sleeps: Sleeps, reply: str, reason: str) -> None:
    server.script(answer(reply))
    result = judge(server, sleeps).judge(finished_task())
    assert result.status == "unscored" and result.score is None
    assert reason in (result.reason or "")
    assert result.attempts == 3 and len(server.requests) == 3
    assert result.input_tokens == 360


def test_a_fenced_json_answer_is_accepted(server: FakeOpenAI, sleeps: Sleeps) -> None:
    server.script(answer('```json\n{"score": 0.25, "reasoning": "Half wrong."}\n```'))
    assert judge(server, sleeps).judge(finished_task()).score == 0.25


def test_an_unavailable_model_gives_no_result_at_all(server: FakeOpenAI, sleeps: Sleeps) -> None:
    server.script(Reply(status=429))
    with pytest.raises(LLMUnavailable):
        judge(server, sleeps).judge(finished_task())
