"""`pair_verdicts`: keep the judge's agreement with people (`domain.agreement`) as verdicts land.

Whichever of a run's verdicts lands second pairs them: a feedback kept on a judged run, or a
judge's score recorded on a run with feedback. Each side writes first and reads the other
after, so at least one of two that race sees both, and the store counts a run once, in the
cell of its verdicts now (`FeedbackStore.set_agreement`). A run without feedback costs the
eval one read of its (empty) feedback; nothing is written.
"""

from __future__ import annotations

from typing import Protocol

from ..domain.agreement import cell_of, passes, people_pass
from ..domain.feedback import RUN_FEEDBACK_SHOWN
from ..domain.models import Agent, AgentRef, EvalResult
from ..ports.services import WithAgents, WithFeedback, WithIngest


class AgreementPorts(WithAgents, WithIngest, WithFeedback, Protocol):
    """The run's feedback, its judge's result, and where the agreement is counted."""


def pair_verdicts(store: AgreementPorts, ref: AgentRef, run_id: str, *,
                  judged: EvalResult | None = None, agent: Agent | None = None) -> None:
    """Count the run in the agent's agreement table if both the judge and people have given
    it a verdict. `judged`: the result just recorded (else the run's is read); `agent`: the
    agent when the caller has it (its expiry goes on what is written)."""
    scores = [f.score for f in store.feedback.run_feedback(ref, run_id, RUN_FEEDBACK_SHOWN)]
    human = people_pass(scores)
    if human is None:
        return
    if judged is None:
        run = store.ingest.get_task(ref, run_id)
        judged = None if run is None else run.eval
    if judged is None or judged.status != "scored" or judged.score is None:
        return
    agent = agent or store.agents.get_agent(ref)
    if agent is None:
        return
    store.feedback.set_agreement(ref, run_id, cell_of(passes(judged.score), human),
                                 expires_at=agent.expires_at)
