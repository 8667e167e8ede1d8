"""The judge's pieces: the strict verdict parser, the offline heuristic, the prompts file."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_core.domain.field_limits import TRUNCATED
from bench_core.domain.models import TaskState
from bench_core.evals.heuristic import heuristic_score
from bench_core.evals.judge import InvalidVerdict, parse_verdict
from bench_core.evals.prompts import PromptError, load_prompt, prompts_path

REPO = Path(__file__).resolve().parents[2]


def task(status: str = "success", output: object = "Paris is the capital.", input: object = None) -> TaskState:
    return TaskState(task_id="t", name="qa", status=status, output=output,
                     input=input if input is not None else {"q": "capital of France?"},
                     ended_at="2026-12-02T16:00:00.000Z")


@pytest.mark.parametrize("text, expected", [
    ('{"score": 0.75, "reasoning": "Mostly right."}', (0.75, "Mostly right.")),
    ('  {"score": 1, "reasoning": " ok "}\n', (1.0, "ok")),
    ('```json\n{"score": 0, "reasoning": "Wrong."}\n```', (0.0, "Wrong.")),
])
def test_valid_verdicts(text: str, expected: tuple[float, str]) -> None:
    assert parse_verdict(text) == expected


@pytest.mark.parametrize("text", [
    "", "0.8", "Score: 0.8", '{"score": 0.8, "reasoning": "x"} and more text',
    '{"score": NaN, "reasoning": "x"}', '{"score": 1.01, "reasoning": "x"}',
    '{"score": null, "reasoning": "x"}', '{"score": 0.5, "reasoning": ""}',
    'Here you go: ```json\n{"score": 0.5, "reasoning": "x"}\n```',
])
def test_anything_else_is_invalid(text: str) -> None:
    with pytest.raises(InvalidVerdict):
        parse_verdict(text)


@pytest.mark.parametrize("case, expected_score, words", [
    (task(), 1.0, "no warning signs"),
    (task(status="failed", output="TimeoutError: upstream"), 0.0, "TimeoutError"),
    (task(output=""), 0.2, "empty"),
    (task(output={TRUNCATED: True, "original_bytes": 99999, "preview": "[1, 2"}), 0.7, "truncated"),
    (task(output="Sorry, I cannot help with that."), 0.6, "error"),
    (task(output="capital of France?"), 0.6, "repeats the input"),
])
def test_heuristic_rules(case: TaskState, expected_score: float, words: str) -> None:
    score, reasoning = heuristic_score(case)
    assert score == expected_score and words in reasoning


def test_the_prompts_come_from_the_benchmarks_file_with_a_content_version(tmp_path: Path,
                                                                          monkeypatch) -> None:
    assert prompts_path() == REPO / "benchmarks" / "eval-prompts.md"
    shipped = load_prompt("judge")
    assert set(shipped.sections) >= {"system", "user", "retry"}
    edited = tmp_path / "eval-prompts.md"
    edited.write_text((REPO / "benchmarks" / "eval-prompts.md").read_text()
                      .replace("You are Bench's task judge.", "You are a careful judge."))
    monkeypatch.setenv("BENCH_EVAL_PROMPTS", str(edited))
    changed = load_prompt("judge")
    assert changed.version.split("#")[0] == shipped.version.split("#")[0]
    assert changed.version != shipped.version
    assert "careful judge" in changed.render("system")


def test_the_newest_version_wins_unless_one_is_pinned(tmp_path: Path) -> None:
    path = tmp_path / "p.md"
    path.write_text("# x\n\n## judge-v1\n\n### system\n\n```text\nold\n```\n\n"
                    "## judge-v2\n\n### system\n\n```text\nnew {{name}}\n```\n")
    assert load_prompt("judge", path=path).number == 2
    assert load_prompt("judge", "judge-v1", path=path).render("system") == "old"
    with pytest.raises(PromptError, match="no value"):
        load_prompt("judge", path=path).render("system")
    with pytest.raises(PromptError, match="no judge-v3"):
        load_prompt("judge", "judge-v3", path=path)
    with pytest.raises(PromptError, match="no '### user'"):
        load_prompt("judge", path=path).render("user")
