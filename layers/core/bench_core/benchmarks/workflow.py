"""BenchmarkWorkflow: a run stored `pending` (`runs.submit_run`) graded in the background, a
chunk per step, so that no step outlives a Lambda timeout and every chunk's grades are kept:

    grade ──more──▶ grade ──▶ … ──▶ done          any step failing past its retries ──▶ fail

- `grade` grades the next `CHUNK` distinct answers (an answer given twice is graded once), in
  parallel, and saves them with the run's progress (`graded` of `total`); the last chunk also
  grades the attempts that raised or timed out (0, with the reason), recomputes the summary and
  marks the run `done`, which lists and ranks it. A judge that cannot answer raises
  `JudgeUnavailable` and saves nothing of that chunk: the caller retries with backoff.
- `fail` marks the run `failed` with the reason; submitting it again resumes its grading.

The local runner (`workflows/local.py`) runs the steps in a loop; on AWS the Task states of
`statemachines/benchmark.asl.json` call exactly `STEPS`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

from ..domain.benchmark_records import Attempt, RunRecord
from ..log import logger
from ..ports.services import WithBenchmarks, WithLLM, WithSettings
from ..ports.workflows import State, benchmark_start
from . import aggregate
from .grading import PARALLEL, Grade, Grader, grade_all, grader_for
from .suites import Case, Suite, load_suite

DONE = "done"
CHUNK = PARALLEL
"""Distinct answers per step: one parallel round of judge calls, so a step takes as long as one
judgement (template.yaml, Time budgets)."""


class GradePorts(WithLLM, WithSettings, Protocol):
    """What grading uses: the store's benchmark runs, the judge's model (None: the offline
    grader)."""

    @property
    def store(self) -> WithBenchmarks: ...


def to_grade(attempts: Sequence[Attempt]) -> dict[tuple[str, str], list[int]]:
    """The positions of the answered attempts by (case id, output hash), in order."""
    found: dict[tuple[str, str], list[int]] = {}
    for i, a in enumerate(attempts):
        if a.status == "ok":
            found.setdefault((a.case_id, a.output_hash), []).append(i)
    return found


def graded(attempt: Attempt, grade: Grade, threshold: float) -> Attempt:
    return attempt.model_copy(update={
        "score": grade.score, "passed": attempt.status == "ok" and grade.score >= threshold,
        "judge": grade.judge, "prompt_version": grade.prompt_version,
        "reasoning": grade.reasoning, "judge_tokens": grade.tokens})


def failed_grade(attempt: Attempt, judge: str) -> Grade:
    what = "timed out" if attempt.status == "timeout" else "raised an error"
    detail = f": {attempt.error[:200]}" if attempt.error else ""
    return Grade(0.0, f"The agent {what}{detail}; not graded.", judge)


def _loaded(ports: GradePorts, state: State) -> tuple[RunRecord, Suite, Grader] | None:
    run = ports.store.benchmarks.get_benchmark_run(str(state.get("run_id", "")))
    if run is None or run.status in ("done", "failed"):
        return None
    suite = load_suite(run.suite).suite
    return run, suite, grader_for(ports.llm, suite)


def grade(ports: GradePorts, state: State) -> State:
    """Grade the next chunk; `next` is `grade` again until the run is done."""
    loaded = _loaded(ports, state)
    if loaded is None:
        return {**state, "next": DONE}
    run, suite, grader = loaded
    threshold = suite.manifest.grading.pass_threshold
    work = to_grade(run.attempts)
    chunk = [k for k, at in work.items() if not run.attempts[at[0]].graded][:CHUNK]
    # every attempt's case was checked against the suite when the run was submitted
    grades = grade_all(grader, ((cast(Case, suite.case(c)), run.attempts[work[(c, h)][0]].output, h)
                                for c, h in chunk))
    attempts, positions = list(run.attempts), []
    for key in chunk:
        for i in work[key]:
            attempts[i] = graded(attempts[i], grades[key], threshold)
            positions.append(i)
    count = sum(attempts[at[0]].graded for at in work.values())
    if count < len(work):
        run = run.model_copy(update={"attempts": attempts, "status": "grading", "graded": count,
                                     "total": len(work)})
        ports.store.benchmarks.save_benchmark_grades(run, positions)
        return {**state, "next": "grade", "graded": count, "total": len(work)}
    for i, a in enumerate(attempts):
        if a.status != "ok":
            attempts[i] = graded(a, failed_grade(a, grader.label), threshold)
            positions.append(i)
    done = run.model_copy(update={
        "attempts": attempts, "status": "done", "graded": count, "total": len(work),
        "judge": grader.label,
        "summary": aggregate.summarize(attempts, [c.id for c in suite.cases], run.repeats)})
    ports.store.benchmarks.save_benchmark_grades(done, positions)
    ports.store.benchmarks.update_benchmark_run(done)
    return {**state, "next": DONE, "graded": count, "total": len(work)}


def fail(ports: GradePorts, state: State) -> State:
    """Mark the run failed, saying why (`state["error"]`, as a state machine's Catch puts it)."""
    loaded = _loaded(ports, state)
    if loaded is None:
        return {**state, "next": DONE}
    run, _, grader = loaded
    kind = str((state.get("error") or {}).get("Error") or "an error")
    reason = (f"the benchmark judge ({grader.label}) was unavailable" if kind == "JudgeUnavailable"
              else f"grading failed ({kind})")
    ports.store.benchmarks.update_benchmark_run(run.model_copy(update={
        "status": "failed", "error": f"{reason}: submit the run again to resume its grading"}))
    return {**state, "next": DONE}


STEPS: dict[str, Callable[[Any, State], State]] = {"grade": grade, "fail": fail}
"""The steps in order; the Task states of the benchmark state machine call exactly these."""


def run_grading(ports: GradePorts, run_id: str) -> State:
    """Every chunk in this process (the local worker pool); a failing step fails the run."""
    state = benchmark_start(run_id)
    try:
        while state["next"] != DONE:
            state = grade(ports, state)
    except Exception as exc:
        logger.warning("benchmark grading failed", extra={"run_id": run_id, "error": repr(exc)})
        return fail(ports, {**state, "error": {"Error": type(exc).__name__}})
    return state
