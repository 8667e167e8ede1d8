"""A benchmark run as stored: the server's summary and every attempt's evidence."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

AttemptStatus = Literal["ok", "error", "timeout"]
RunStatus = Literal["pending", "grading", "done", "failed"]
"""A run is stored `pending` on submission, `grading` once a chunk of its attempts is graded,
then `done` (summarised, listed and ranked) or `failed` (the judge stayed unavailable)."""
LABEL = "benchmark evidence"
"""How every benchmark result is labelled, apart from the owner's telemetry."""


class Attempt(BaseModel):
    """One run of the agent on one case, and its grade."""

    case_id: str
    repeat: int
    status: AttemptStatus
    input: Any
    output: Any
    output_hash: str
    error: str | None = None
    duration_ms: float
    cost_usd: float | None = None
    started_at: str | None = None
    score: float | None = None
    """None until graded (the run is pending or grading)."""
    passed: bool = False
    judge: str = ""
    prompt_version: str | None = None
    reasoning: str = ""
    judge_tokens: int = 0

    @property
    def graded(self) -> bool:
        return self.score is not None


class RunRecord(BaseModel):
    run_id: str
    login: str
    slug: str
    suite: str
    """The suite id, `<name>-v<version>`."""
    suite_hash: str
    submitted_at: str
    repeats: int
    judge: str
    summary: dict[str, Any]
    """Recomputed by the server from the attempts (`aggregate.summarize`); empty until done."""
    attempts: list[Attempt] = []
    status: RunStatus = "done"
    graded: int = 0
    total: int = 0
    """Progress while grading: distinct answers graded, of those to grade."""
    error: str | None = None
    """Why grading failed (status `failed`)."""

    def without_attempts(self) -> RunRecord:
        return self.model_copy(update={"attempts": []})

    @property
    def rank_key(self) -> str:
        """Sorts best first: higher pass rate, then higher pass^k, then earlier; unique per
        agent (one ranked run per agent and suite)."""
        s = self.summary
        return (f"{_inverted(s['pass_rate'])}#{_inverted(s['pass_hat_k'])}#{self.submitted_at}"
                f"#{self.login}#{self.slug}")


def _inverted(fraction: float | None) -> str:
    return f"{round((1 - (fraction or 0.0)) * 1_000_000):07d}"
