"""`pair_verdicts`: keep the judge's agreement with people (`domain.agreement`) as verdicts land.

Whichever of a run's verdicts lands second pairs them: a feedback kept on a judged run, or a
judge's score recorded on a run with feedback. Each side writes first and reads the other
after, so at least one of two that race sees both, and the store counts a run once, in the
cell of its verdicts now (`FeedbackStore.set_agreement`). An eval of an agent never given
feedback costs one read (`FeedbackStore.has_feedback`) for all its runs; nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from ..domain.agreement import cell_of, passes, people_pass
from ..domain.errors import TooManyRequests
from ..domain.feedback import RUN_FEEDBACK_SHOWN
from ..domain.models import Agent, AgentRef, EvalResult
from ..log import logger
from ..ports.services import WithAgents, WithFeedback, WithIngest


class AgreementPorts(WithAgents, WithIngest, WithFeedback, Protocol):
    """The run's feedback, its judge's result, and where the agreement is counted."""


def pair_verdicts(store: AgreementPorts, ref: AgentRef, run_id: str, *,
                  judged: EvalResult | None = None, agent: Agent | None = None) -> None:
    """Count the run in the agent's agreement table if both the judge and people have given
    it a verdict; mark it labelled (for the annotation queue) if only people have. `judged`:
    the result just recorded (else the run's is read); `agent`: the agent when the caller has
    it (its expiry goes on what is written)."""
    scores = [f.score for f in store.feedback.run_feedback(ref, run_id, RUN_FEEDBACK_SHOWN)]
    human = people_pass(scores)
    if human is None:
        return
    if judged is None:
        run = store.ingest.get_task(ref, run_id)
        judged = None if run is None else run.eval
    agent = agent or store.agents.get_agent(ref)
    if agent is None:
        return
    score = judged.score if judged is not None and judged.status == "scored" else None
    cell = None if score is None else cell_of(passes(score), human)
    store.feedback.set_agreement(ref, run_id, cell, expires_at=agent.expires_at)


def pair_judged(store: AgreementPorts, ref: AgentRef, recorded: Mapping[str, EvalResult]) -> None:
    """After an eval recorded these results (by run id): pair each scored run that people have
    given feedback on, if the agent has any. A run its verdicts could not be counted for
    (the store too busy) is logged and left: failing here would have the eval's message
    delivered again and the runs judged (and paid for) twice; the next verdict on the run
    counts it."""
    scored = {run_id: result for run_id, result in recorded.items() if result.status == "scored"}
    if not scored or not store.feedback.has_feedback(ref):
        return
    for run_id, result in scored.items():
        try:
            pair_verdicts(store, ref, run_id, judged=result)
        except TooManyRequests:
            logger.warning("judge agreement not counted", extra={"agent": ref.path,
                                                                 "run": run_id})
