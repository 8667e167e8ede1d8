"""The Judge port: a finished task in, an `EvalResult` out (`evals/judge.py` makes one: a model's
through the LLM port, or the offline heuristic), asked by the eval workflow's steps."""

from __future__ import annotations

from typing import Protocol

from ..domain.models import EvalResult, TaskState


class Judge(Protocol):
    label: str
    """Who judged, as recorded with every result (`heuristic-v1`, an LLM's label)."""

    def judge(self, task: TaskState) -> EvalResult: ...
