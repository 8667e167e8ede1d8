"""The Judge port: the offline heuristic and the model judge over every LLM adapter give the same
kind of result for a finished task, labelled with who judged it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest
from bench_core.domain.models import EvalResult, TaskState
from bench_core.evals.judge import HeuristicJudge, ModelJudge
from bench_core.ports.judge import Judge

from tests.contract.model_doubles import MODELS, says

JUDGES = ["heuristic", *(f"model over {name}" for name in sorted(MODELS))]


@pytest.fixture(params=JUDGES)
def judge(request: pytest.FixtureRequest) -> Iterator[Judge]:
    if request.param == "heuristic":
        yield HeuristicJudge()
        return
    with MODELS[request.param.removeprefix("model over ")]() as model:
        model.script(says('{"score": 0.75, "reasoning": "Correct, a little long."}'))
        yield ModelJudge(model.llm, max_attempts=3, price_per_mtok_usd=0.0)


def finished(status: str = "success", output: object = "Paris") -> TaskState:
    return TaskState(task_id="t1", name="search", status=status,  # type: ignore[arg-type]
                     input={"q": "capital of France"}, output=output,
                     ended_at="2026-12-02T16:00:00.000Z")


def test_a_finished_task_gets_a_score_with_reasoning_labelled_by_its_judge(judge: Judge) -> None:
    result = judge.judge(finished())
    assert result.status == "scored" and result.score is not None and 0 <= result.score <= 1
    assert result.reasoning and result.reasoning.strip()
    assert result.judge == judge.label and result.prompt_version
    assert result.attempts >= 1
    assert datetime.fromisoformat(result.at.replace("Z", "+00:00"))


def test_a_result_survives_the_stores_format(judge: Judge) -> None:
    result = judge.judge(finished())
    assert EvalResult.from_dict(result.to_dict()) == result
