"""The eval's time budgets add up: a model call inside one ask, a judgement's asks inside one
round of judging (`evals.queue.JUDGEMENT`), a round inside the eval function's timeout, and the
function's timeout well inside the queue's visibility timeout, so a delivery still running is
never handed out twice. The numbers are read from where they act: the translated template, the
queue's code and the adapter as built from the function's own environment."""

from __future__ import annotations

import json
import os
from typing import Any
from unittest import mock

import pytest

from tests.aws import cfn

STORE_MARGIN_S = 5
"""A step's own store reads and writes, besides its model asks."""


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


def test_one_round_of_judging_holds_a_judgement_and_fits_the_eval_functions_timeout(
        judge_llm: Any, eval_function: dict[str, Any]) -> None:
    from bench_core.evals import queue
    from bench_core.lambdas.eval_queue import RECORD_MARGIN

    settings, llm = judge_llm
    judgement = settings.judge.max_attempts * one_ask_worst_s(llm)
    assert judgement + STORE_MARGIN_S <= queue.JUDGEMENT.total_seconds(), (
        f"{settings.judge.max_attempts} asks of up to {one_ask_worst_s(llm)} s")
    round_s = (queue.JUDGEMENT + RECORD_MARGIN).total_seconds()
    assert round_s <= eval_function["Timeout"], "not even one round fits a delivery"


def test_a_delivery_is_never_handed_out_twice_while_it_runs(
        transformed: dict[str, Any], eval_function: dict[str, Any]) -> None:
    """AWS's advice for a queue feeding a function: a visibility timeout of six times the
    function's timeout (and at least the function's, or the mapping is refused)."""
    queue = transformed["Resources"]["EvalQueue"]["Properties"]
    assert queue["VisibilityTimeout"] >= 6 * eval_function["Timeout"]


def test_the_template_states_the_budget_it_sets(eval_function: dict[str, Any]) -> None:
    """The "Time budgets" comment is the one place a reader finds the whole picture: its
    figures are those the checks above use."""
    from bench_core.evals import queue

    text = cfn.TEMPLATE.read_text()
    assert "# Time budgets" in text
    for figure in ("BENCH_LLM_ATTEMPTS (2)", "BENCH_LLM_TIMEOUT_S 12 s", "connect 2 s",
                   "BENCH_LLM_BACKOFF_CAP_S (2 s)", "BENCH_JUDGE_MAX_ATTEMPTS (3)",
                   f"Timeout ({eval_function['Timeout']} s)",
                   f"JUDGEMENT ({queue.JUDGEMENT.total_seconds():g} s)",
                   f"VisibilityTimeout ({6 * eval_function['Timeout']:,} s)"):
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


def test_the_hourly_looks_fit_the_cluster_functions_timeout(transformed: dict[str, Any]) -> None:
    """The hourly looks start one only while it and its webhooks' longest delivery fit in
    `LOOKS_BUDGET` (`alerts/watch.py`), which ClusterFunction's timeout holds, with room for
    the ClusterFunction's settings' delivery besides."""
    from bench_core.alerts.delivery import longest_s
    from bench_core.alerts.watch import LOOKS_BUDGET, WATCH_MARGIN

    function = transformed["Resources"]["ClusterFunction"]["Properties"]
    settings = function_settings(transformed, "ClusterFunction")
    one_look = WATCH_MARGIN.total_seconds() + longest_s(settings.reuse)
    assert one_look < LOOKS_BUDGET.total_seconds() < function["Timeout"], one_look
