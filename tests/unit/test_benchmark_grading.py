"""Grading answers for grounding: the labelled offline rules, and the model judge's strict
parsing with its bounded retries."""

from __future__ import annotations

import threading
from typing import Any

from bench_core.benchmarks.grading import OFFLINE_LABEL, Grade, ModelGrader, OfflineGrader, cited_ids, grade_all
from bench_core.benchmarks.suites import Case, load_suite
from bench_core.ports.llm import Completion, Message

from tests.benchmark_support import SUITE


def wal_case() -> Case:
    case = load_suite(SUITE).suite.case("sqlite-wal-concurrency")
    assert case is not None
    return case


FULL = ("In WAL mode readers do not block the writer and the writer does not block readers [S1], "
        "but there is only one writer at a time [S1]. A checkpoint copies the log back into the "
        "database [S2], automatically at 1000 pages by default [S2].")


def test_an_answer_stating_and_citing_every_fact_scores_one() -> None:
    grade = OfflineGrader().grade(wal_case(), FULL)
    assert grade == Grade(1.0, grade.reasoning, OFFLINE_LABEL, OFFLINE_LABEL)
    assert "states 4/4" in grade.reasoning and "cites a source for 4/4" in grade.reasoning


def test_uncited_facts_earn_half_and_missing_facts_nothing() -> None:
    uncited = FULL.replace(" [S1]", "").replace(" [S2]", "")
    assert OfflineGrader().grade(wal_case(), uncited).score == 0.5
    missing = "A checkpoint copies the log back into the database [S2]."
    grade = OfflineGrader().grade(wal_case(), missing)
    assert grade.score == 0.25 and "missing F1, F2, F4" in grade.reasoning


def test_a_fact_is_grounded_only_by_one_of_its_own_sources() -> None:
    """Checkpoint facts need S2: citing only S1 leaves them ungrounded (citations are matched
    per answer, not per sentence: the rule set is a heuristic, labelled as one)."""
    grade = OfflineGrader().grade(wal_case(), FULL.replace("[S2]", "[S1]"))
    assert grade.score == 0.75 and "cites a source for 2/4" in grade.reasoning


def test_citing_a_source_that_was_not_given_costs_a_fifth() -> None:
    grade = OfflineGrader().grade(wal_case(), FULL + " See also [S9].")
    assert grade.score == 0.8 and "cites sources that were not given (S9)" in grade.reasoning


def test_a_contradiction_costs_half_the_score() -> None:
    grade = OfflineGrader().grade(wal_case(), FULL + " Note that multiple writers at the same time are fine.")
    assert grade.score == 0.5 and "contradicts the sources" in grade.reasoning


def test_citations_by_url_and_in_structured_answers_count() -> None:
    case = wal_case()
    assert cited_ids(f"see {case.input.sources[1].url}", case) == {"S2"}
    assert cited_ids('{"citations": ["S1", "s2"]}', case) == {"S1", "S2"}
    assert OfflineGrader().grade(case, {"answer": FULL.replace("[S1]", "").replace("[S2]", ""),
                                        "citations": ["S1", "S2"]}).score == 1.0


def test_empty_answers_score_zero() -> None:
    for empty in ("", None, "   "):
        assert OfflineGrader().grade(wal_case(), empty).score == 0.0


class ScriptedLLM:
    label = "scripted:judge"

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.prompts: list[list[Message]] = []

    def complete(self, system: str, messages: list[Message], *, max_tokens: int) -> Completion:
        assert "grounding judge" in system
        self.prompts.append(list(messages))
        return Completion(self.answers.pop(0), 100, 20)


def test_the_model_judge_sees_sources_facts_and_answer_and_is_parsed_strictly() -> None:
    llm = ScriptedLLM("not json", '{"score": 0.9, "reasoning": "All facts, cited."}')
    grade = ModelGrader(llm, "grounding-v1").grade(wal_case(), FULL)
    assert (grade.score, grade.reasoning, grade.judge, grade.tokens) == (0.9, "All facts, cited.", llm.label, 240)
    assert grade.prompt_version is not None and grade.prompt_version.startswith("grounding-v1#")
    first = llm.prompts[0][0]["content"]
    assert "[S2] Checkpoints and the WAL file" in first and "F4:" in first and FULL in first
    assert "could not be used" in llm.prompts[1][-1]["content"]


def test_a_judge_that_never_answers_usably_grades_zero_with_the_reason() -> None:
    grade = ModelGrader(ScriptedLLM("x", "y", '{"score": 7}'), "grounding-v1").grade(wal_case(), FULL)
    assert grade.score == 0.0 and grade.reasoning.startswith("ungraded: no usable judge answer in 3")


def test_a_repeated_answer_is_graded_once() -> None:
    calls: list[Any] = []
    lock = threading.Lock()

    class Counting(OfflineGrader):
        def grade(self, case: Case, output: Any) -> Grade:
            with lock:
                calls.append(output)
            return super().grade(case, output)

    case = wal_case()
    grades = grade_all(Counting(), [(case, FULL, "h1"), (case, FULL, "h1"), (case, "other", "h2")])
    assert len(calls) == 2 and grades[(case.id, "h1")].score == 1.0
