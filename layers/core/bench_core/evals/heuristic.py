"""The offline judge, `heuristic-v1`: a few transparent rules over what a task recorded.

Used when no model is configured. Its rules are documented beside the prompts in
`benchmarks/eval-prompts.md`; every score it gives is labelled `heuristic-v1`, so nobody takes
it for a model's judgement.
"""

from __future__ import annotations

import re
from typing import Any

from ..domain.models import TaskState
from ..domain.task_text import as_text, is_empty, is_truncated

LABEL = "heuristic-v1"
_ERRORISH = re.compile(r"\b(error|exception|traceback|failed|cannot|unable to|sorry)\b", re.I)
_WORD = re.compile(r"\w+")


def heuristic_score(task: TaskState) -> tuple[float, str]:
    """(score, reasoning) for a finished task."""
    if task.status == "failed":
        error = as_text(task.output, 160).split("\n")[0]
        return 0.0, f"The task failed{': ' + error if error else ''}."
    score, notes = 1.0, []
    if is_empty(task.output):
        score -= 0.8
        notes.append("the output is empty")
    else:
        if is_truncated(task.output):
            score -= 0.3
            notes.append("the output is truncated")
        if _ERRORISH.search(as_text(task.output, 2000)):
            score -= 0.4
            notes.append("the output reads like an error")
        if overlap(task.input, task.output) >= 0.9:
            score -= 0.4
            notes.append("the output repeats the input")
    score = round(min(1.0, max(0.0, score)), 2)
    if not notes:
        return score, "The task succeeded with a non-empty output; no warning signs."
    return score, f"The task succeeded, but {', and '.join(notes)}."


def overlap(a: Any, b: Any) -> float:
    """Share of the output's words that also occur in the input (0 when either is empty)."""
    words_a = set(_WORD.findall(as_text(a, 4000).lower()))
    words_b = set(_WORD.findall(as_text(b, 4000).lower()))
    if not words_a or not words_b:
        return 0.0
    return len(words_a & words_b) / len(words_b)
