"""Grading an answer for being grounded in the case's sources: the suite's LLM judge (its
`judge_prompt` in eval-prompts.md) when a model is configured, otherwise the offline rule set
`grounding-heuristic-v1`, labelled as such on every grade so nobody mistakes it for a model.

The offline grader checks what can be checked without a model (documented beside the prompts):

- each required fact is *stated* when every one of its term groups occurs in the answer;
- a stated fact is *grounded* when the answer also cites one of the fact's sources, as `[S1]`
  (any bracketed list of ids) or by the source's URL;
- score = half the share of stated facts + half the share of grounded facts, less 0.5 when the
  answer contains a phrase the case lists as contradicting its sources, less 0.2 when it cites
  a source id the case does not have; clamped to 0..1, two decimals.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from ..domain.errors import BenchError
from ..domain.task_text import as_text, clip
from ..evals.judge import InvalidVerdict, parse_verdict
from ..evals.prompts import load_prompt
from ..log import logger
from ..ports.llm import LLM, LLMError, Message
from .suites import Case, Suite

OFFLINE_LABEL = "grounding-heuristic-v1"
ANSWER_CHARS = 8000
MAX_ANSWER_TOKENS = 300
MAX_ATTEMPTS = 3
PARALLEL = 16
"""Concurrent judge calls while grading one run."""
JUDGE_RETRY_AFTER_S = 60
"""What a run whose grading failed or could not start is told to wait before it is sent again."""
_BRACKETS = re.compile(r"\[([^\[\]]{1,200})\]")
_ID_LIKE = re.compile(r"^[A-Za-z]{1,3}\d{1,3}$")


class JudgeUnavailable(BenchError):
    """The judge could not grade (its model unreachable, erroring or misconfigured): the
    grading step fails (retried by the state machine, then the run is marked failed); the
    same submission sent again later resumes it."""

    status = 503


@dataclass(frozen=True)
class Grade:
    score: float
    reasoning: str
    judge: str
    prompt_version: str | None = None
    tokens: int = 0


class Grader(Protocol):
    label: str

    def grade(self, case: Case, output: Any) -> Grade: ...


def cited_ids(text: str, case: Case) -> set[str]:
    """Ids the answer cites: anything inside square brackets, and sources named by URL."""
    found = {token.strip("\"' ").upper()
             for inside in _BRACKETS.findall(text) for token in re.split(r"[,;\s]+", inside)}
    found |= {s.id.upper() for s in case.input.sources if s.url in text}
    return {token for token in found if token}


class OfflineGrader:
    label = OFFLINE_LABEL

    def grade(self, case: Case, output: Any) -> Grade:
        text = as_text(output, 50_000)
        if not text.strip():
            return Grade(0.0, "The answer is empty.", self.label, self.label)
        lowered = " ".join(text.lower().split())
        cited = cited_ids(text, case)
        known = {s.id.upper() for s in case.input.sources}
        stated = [f for f in case.facts
                  if all(any(term.lower() in lowered for term in group) for group in f.terms)]
        grounded = [f for f in stated if any(s.upper() in cited for s in f.sources)]
        n = len(case.facts)
        score = 0.5 * len(stated) / n + 0.5 * len(grounded) / n
        notes = [f"states {len(stated)}/{n} required facts", f"cites a source for {len(grounded)}/{n}"]
        missing = [f.id for f in case.facts if f not in stated]
        if missing:
            notes.append(f"missing {', '.join(missing)}")
        contradicted = [p for p in case.contradictions if p.lower() in lowered]
        if contradicted:
            score -= 0.5
            notes.append(f"contradicts the sources ({clip(contradicted[0], 80)!r})")
        unknown = sorted(t for t in cited - known if _ID_LIKE.match(t))
        if unknown:
            score -= 0.2
            notes.append(f"cites sources that were not given ({', '.join(unknown[:5])})")
        score = round(min(1.0, max(0.0, score)), 2)
        return Grade(score, "The answer " + "; ".join(notes) + ".", self.label, self.label)


def render_sources(case: Case) -> str:
    return "\n\n".join(f"[{s.id}] {s.title} ({s.url})\n{s.text}" for s in case.input.sources)


def render_facts(case: Case) -> str:
    return "\n".join(f"- {f.id}: {f.claim} (cite {' or '.join(f.sources)})" for f in case.facts)


class ModelGrader:
    """The suite's judge prompt on the configured model, parsed strictly (`parse_verdict`);
    an unusable answer is asked for again, then graded 0 with the reason (never a made-up
    score). A model that cannot answer (`LLMError`) fails the whole run (`grade_all`)."""

    def __init__(self, llm: LLM, prompt_name: str) -> None:
        self.llm = llm
        self.label = llm.label
        self.prompt_name = prompt_name

    def grade(self, case: Case, output: Any) -> Grade:
        prompt = load_prompt(self.prompt_name.rsplit("-v", 1)[0], self.prompt_name)
        messages: list[Message] = [{"role": "user", "content": prompt.render(
            "user", question=case.input.question, sources=render_sources(case),
            facts=render_facts(case), answer=as_text(output, ANSWER_CHARS) or "(empty)")}]
        system, tokens, problem = prompt.render("system"), 0, ""
        for _ in range(MAX_ATTEMPTS):
            answer = self.llm.complete(system, messages, max_tokens=MAX_ANSWER_TOKENS)
            tokens += answer.input_tokens + answer.output_tokens
            try:
                score, reasoning = parse_verdict(answer.text)
            except InvalidVerdict as exc:
                problem = str(exc)
                messages += [{"role": "assistant", "content": clip(answer.text, 2000) or "(empty)"},
                             {"role": "user", "content": prompt.render("retry", problem=problem)}]
                continue
            return Grade(score, reasoning, self.label, prompt.version, tokens)
        return Grade(0.0, f"ungraded: no usable judge answer in {MAX_ATTEMPTS} attempts; last: "
                          f"{problem}", self.label, prompt.version, tokens)


def grader_for(llm: LLM | None, suite: Suite) -> Grader:
    return OfflineGrader() if llm is None else ModelGrader(llm, suite.manifest.grading.judge_prompt)


def grade_all(grader: Grader, work: Iterable[tuple[Case, Any, str]]) -> dict[tuple[str, str], Grade]:
    """Grades by (case id, output hash) for each (case, output, output hash): an answer given
    twice (a deterministic agent's repeats) is graded once; model calls run in parallel.
    `JudgeUnavailable` once the model fails one (the grades of this call are dropped)."""
    unique = {(case.id, digest): (case, output) for case, output, digest in work}
    keys = list(unique)
    pool = ThreadPoolExecutor(max_workers=PARALLEL)
    try:
        grades = list(pool.map(lambda k: grader.grade(*unique[k]), keys))
    except LLMError as exc:
        # The model's own error names its endpoint: for the server's log, not the caller.
        logger.warning("benchmark judge failed", extra={"judge": grader.label, "error": str(exc)})
        raise JudgeUnavailable(
            f"the benchmark judge ({grader.label}) is unavailable: submit the run again in a "
            f"minute to resume its grading",
            [{"loc": ["judge"], "msg": "unavailable", "judge": grader.label}],
            headers={"Retry-After": str(JUDGE_RETRY_AFTER_S)}) from exc
    finally:
        pool.shutdown(cancel_futures=True)
    return dict(zip(keys, grades, strict=True))
