"""The judge: a task in, an `EvalResult` out -- a score only when one was really given.

`ModelJudge` asks an LLM with the `judge` prompt and parses the answer strictly; an answer that
is not the JSON object asked for is asked for again (bounded), and then the task is recorded as
unscored with the reason. `HeuristicJudge` is the offline rule set. Both say who they are in
every result (`judge`), with the prompt version and the tokens spent.
"""

from __future__ import annotations

import json
import math
import re

from ..clock import SYSTEM_CLOCK, Clock
from ..domain.models import EvalResult, TaskState, iso
from ..domain.task_text import as_text, clip
from ..ports.judge import Judge
from ..ports.llm import LLM, Message
from ..settings import JudgeSettings, LLMSettings
from .heuristic import LABEL as HEURISTIC_LABEL
from .heuristic import heuristic_score
from .prompts import load_prompt

FIELD_CHARS = 6000
"""Input and output are each cut to this many characters in the prompt (~1,500 tokens)."""
MAX_ANSWER_TOKENS = 300
_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.S)


class InvalidVerdict(ValueError):
    """The judge's answer is not `{"score": 0..1, "reasoning": "..."}`; the message says why."""


def parse_verdict(text: str) -> tuple[float, str]:
    """(score, reasoning) from a judge's answer, or InvalidVerdict. Strict: one JSON object
    (optionally inside one Markdown code fence) with a number score in 0..1 and a reasoning."""
    body = text.strip()
    fenced = _FENCE.fullmatch(body)
    if fenced:
        body = fenced.group(1)
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise InvalidVerdict(f"the answer is not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise InvalidVerdict("the answer is not a JSON object")
    score, reasoning = data.get("score"), data.get("reasoning")
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise InvalidVerdict(f"score is not a number: {score!r}"[:200])
    if not math.isfinite(score) or not 0 <= score <= 1:
        raise InvalidVerdict(f"score {score} is outside 0..1")
    if not isinstance(reasoning, str) or not reasoning.strip():
        raise InvalidVerdict("reasoning is missing or empty")
    return float(score), reasoning.strip()


class ModelJudge:
    def __init__(self, llm: LLM, *, max_attempts: int, price_per_mtok_usd: float,
                 pinned_prompt: str | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.llm = llm
        self.clock = clock
        self.label = llm.label
        self.max_attempts = max(1, max_attempts)
        self.price = price_per_mtok_usd
        self.pinned = pinned_prompt

    def judge(self, task: TaskState) -> EvalResult:
        """Raises `LLMUnavailable`/`LLMError` when the model cannot be asked at all: that is no
        verdict, and the task stays unjudged for a later try."""
        prompt = load_prompt("judge", self.pinned)
        messages: list[Message] = [{"role": "user", "content": prompt.render(
            "user", name=task.name or "(unnamed)", status=task.status,
            input=as_text(task.input, FIELD_CHARS) or "(none)",
            output=as_text(task.output, FIELD_CHARS) or "(none)")}]
        system = prompt.render("system")
        tokens_in = tokens_out = 0
        problem = ""
        for attempt in range(1, self.max_attempts + 1):
            answer = self.llm.complete(system, messages, max_tokens=MAX_ANSWER_TOKENS)
            tokens_in += answer.input_tokens
            tokens_out += answer.output_tokens
            result = EvalResult(status="unscored", judge=self.label, at=iso(self.clock.now()),
                                prompt_version=prompt.version, input_tokens=tokens_in,
                                output_tokens=tokens_out, attempts=attempt,
                                cost_usd=(tokens_in + tokens_out) * self.price / 1e6)
            try:
                result.score, result.reasoning = parse_verdict(answer.text)
            except InvalidVerdict as exc:
                problem = str(exc)
                messages += [{"role": "assistant", "content": clip(answer.text, 2000) or "(empty)"},
                             {"role": "user", "content": prompt.render("retry", problem=problem)}]
                continue
            result.status = "scored"
            return result
        result.reason = f"no usable answer in {self.max_attempts} attempts; last: {problem}"
        return result


class HeuristicJudge:
    label = HEURISTIC_LABEL

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock

    def judge(self, task: TaskState) -> EvalResult:
        score, reasoning = heuristic_score(task)
        return EvalResult(status="scored", judge=self.label, at=iso(self.clock.now()), score=score,
                          reasoning=reasoning, prompt_version=HEURISTIC_LABEL, attempts=1)


def make_judge(llm: LLM | None, llm_settings: LLMSettings, judge_settings: JudgeSettings,
               clock: Clock = SYSTEM_CLOCK) -> Judge:
    """The judge the settings name, stamping its verdicts by `clock`."""
    if llm is None:
        return HeuristicJudge(clock)
    return ModelJudge(llm, max_attempts=judge_settings.max_attempts,
                      price_per_mtok_usd=llm_settings.price_per_mtok_usd,
                      pinned_prompt=judge_settings.prompt, clock=clock)
