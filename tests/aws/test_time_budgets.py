"""The eval's time budgets add up: a model call inside one ask, the asks inside the function's
timeout, each Task attempt inside its TimeoutSeconds, and every attempt and wait of the
workflow inside Express's five minutes (a timeout Express cannot catch). The numbers are read
from where they act: the translated template, the state machine and the adapter as built from
the function's own environment."""

from __future__ import annotations

import json
import os
from typing import Any
from unittest import mock

import pytest

from tests.aws import cfn

EXPRESS_LIMIT_S = 300
TRANSITIONS_MARGIN_S = 10
"""State transitions, Lambda invocation overheads and cold starts between attempts."""
STORE_MARGIN_S = 5
"""A step's own store reads and writes, besides its model asks."""


def retry_waits(retrier: dict[str, Any]) -> float:
    """The longest a retrier can wait in total (before jitter, which only shortens waits)."""
    interval, rate = retrier.get("IntervalSeconds", 1), retrier.get("BackoffRate", 2.0)
    cap = retrier.get("MaxDelaySeconds", float("inf"))
    return sum(min(interval * rate ** n, cap) for n in range(retrier.get("MaxAttempts", 3)))


def worst_task_s(state: dict[str, Any]) -> float:
    """Every attempt at its timeout, every retrier used up (each counts its own attempts)."""
    retriers = state.get("Retry", [])
    attempts = 1 + sum(r.get("MaxAttempts", 3) for r in retriers)
    return attempts * state["TimeoutSeconds"] + sum(retry_waits(r) for r in retriers)


@pytest.fixture
def eval_function(transformed: dict[str, Any]) -> dict[str, Any]:
    return transformed["Resources"]["EvalFunction"]["Properties"]


def function_settings(transformed: dict[str, Any], function: str) -> Any:
    """The settings `function` reads from its environment in the translated template."""
    from bench_core.settings import Settings

    refs = {name: f"{name}-stand-in" for name in transformed["Resources"]}
    refs.update({"AWS::Region": "us-east-1", "AWS::AccountId": "123456789012",
                 "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com",
                 "AWS::StackName": "bench"})
    environment = cfn.environment(transformed, function, refs)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_")}
    with mock.patch.dict(os.environ, {**clean, **environment}, clear=True):
        return Settings.from_env()


@pytest.fixture
def judge_llm(transformed: dict[str, Any]) -> Any:
    """The judge's LLM adapter as EvalFunction builds it from its template environment."""
    from bench_core.runtime.adapters import open_llm

    settings = function_settings(transformed, "EvalFunction")
    return settings, open_llm(settings.llm)


def one_ask_worst_s(llm: Any) -> float:
    from bench_core.llm.bedrock import BedrockLLM

    assert isinstance(llm, BedrockLLM)
    config = llm._client.meta.config
    assert config.retries["total_max_attempts"] == 1, "botocore retries nothing: ours only"
    per_call = config.connect_timeout + config.read_timeout
    return llm.backoff.attempts * per_call + (llm.backoff.attempts - 1) * llm.backoff.cap_s


def test_one_judgement_fits_the_eval_functions_timeout(
        judge_llm: Any, eval_function: dict[str, Any]) -> None:
    settings, llm = judge_llm
    judgement = settings.judge.max_attempts * one_ask_worst_s(llm)
    assert judgement + STORE_MARGIN_S <= eval_function["Timeout"], (
        f"{settings.judge.max_attempts} asks of up to {one_ask_worst_s(llm)} s")


def test_every_task_attempt_is_bounded_and_the_judge_gets_the_whole_function_timeout(
        eval_function: dict[str, Any]) -> None:
    states = json.loads((cfn.REPO / "statemachines" / "eval.asl.json").read_text())["States"]
    tasks = {name: s for name, s in states.items() if s["Type"] == "Task"}
    assert all("TimeoutSeconds" in s for s in tasks.values()), "an attempt without a bound"
    assert tasks["Judge"]["TimeoutSeconds"] == eval_function["Timeout"]
    assert all(s["TimeoutSeconds"] <= eval_function["Timeout"] for s in tasks.values())


def test_all_retries_of_an_eval_fit_inside_the_express_five_minutes(
        transformed: dict[str, Any]) -> None:
    machine = transformed["Resources"]["EvalStateMachine"]["Properties"]
    assert machine["StateMachineType"] == "EXPRESS"
    states = json.loads((cfn.REPO / "statemachines" / "eval.asl.json").read_text())["States"]
    worst = sum(worst_task_s(s) for s in states.values() if s["Type"] == "Task")
    assert worst + TRANSITIONS_MARGIN_S <= EXPRESS_LIMIT_S, f"worst case {worst} s"


def test_the_template_states_the_budget_it_sets() -> None:
    """The "Time budgets" comment is the one place a reader finds the whole picture: its
    figures are those the checks above use."""
    text = cfn.TEMPLATE.read_text()
    states = json.loads((cfn.REPO / "statemachines" / "eval.asl.json").read_text())["States"]
    worst = sum(worst_task_s(s) for s in states.values() if s["Type"] == "Task")
    assert "# Time budgets" in text
    for figure in ("BENCH_LLM_ATTEMPTS (2)", "BENCH_LLM_TIMEOUT_S 12 s", "connect 2 s",
                   "BENCH_LLM_BACKOFF_CAP_S (2 s)", "BENCH_JUDGE_MAX_ATTEMPTS (3)",
                   "Timeout (100 s)", f"<= {worst:g} s"):
        assert figure in text, figure


def test_a_benchmark_chunk_fits_its_functions_timeout_and_the_grade_state_waits_for_it(
        transformed: dict[str, Any]) -> None:
    """A chunk is CHUNK distinct answers graded at once on PARALLEL threads: one judgement
    long, as the eval's (the same judge settings, from the shared environment)."""
    from bench_core.benchmarks import grading, workflow

    function = transformed["Resources"]["BenchmarkFunction"]["Properties"]
    from bench_core.runtime.adapters import open_llm

    llm = open_llm(function_settings(transformed, "BenchmarkFunction").llm)
    assert workflow.CHUNK <= grading.PARALLEL, "a chunk is one parallel round"
    chunk = grading.MAX_ATTEMPTS * one_ask_worst_s(llm)
    assert chunk + STORE_MARGIN_S <= function["Timeout"], f"a chunk takes up to {chunk} s"
    states = json.loads((cfn.REPO / "statemachines" / "benchmark.asl.json").read_text())["States"]
    assert states["Grade"]["TimeoutSeconds"] == function["Timeout"]
    machine = transformed["Resources"]["BenchmarkStateMachine"]["Properties"]
    assert machine["StateMachineType"] == "STANDARD", "a run of many chunks outlives Express"
