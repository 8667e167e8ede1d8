"""`record_feedback`: a person's verdict on a run, from its owner (the run page, an owner key)
or from the agent itself (its key, passing on what its users said); `set_label_set`: the
owner's vocabulary of labels, which every feedback's label is then checked against.

Only who owns the agent may give it: for anyone else the agent is not found, as every owner
action answers (`domain.privacy`), so a key of another account learns nothing. Feedback goes
on a run, its root task: an unknown run, or a span's id, is not found. Feedback on a judged run
counts in the judge's agreement with people (`agreement.py`)."""

from __future__ import annotations

import uuid
from typing import Protocol

from ..domain.errors import BadRequest, NotFound
from ..domain.feedback import MAX_LABELS, THUMBS, Feedback, Kind, SpanVerdict, unknown_label
from ..domain.models import AgentRef, iso
from ..domain.privacy import Viewer
from ..ports.services import WithAgents, WithClock, WithFeedback, WithIngest
from .agreement import pair_verdicts


class FeedbackPorts(WithAgents, WithIngest, WithFeedback, WithClock, Protocol):
    """The agent and its run to check, and where feedback is kept."""


def record_feedback(store: FeedbackPorts, ref: AgentRef, viewer: Viewer, run_id: str, *,
                    feedback_id: str | None, score: float | None, thumbs: str | None,
                    label: str | None, comment: str | None) -> tuple[Feedback, bool]:
    """Keep the feedback (a thumbs, else a score) on the run; the feedback kept and whether it
    is new (False: one with its id was kept before, and is answered unchanged)."""
    agent = store.agents.get_agent(ref)
    if agent is None or not viewer.owns(agent):
        raise NotFound("agent not found")
    run = store.ingest.get_task(ref, run_id)
    if run is None or run.parent_task_id is not None:
        raise NotFound("run not found: feedback goes on a run (its root task's id)")
    problem = None if label is None else unknown_label(label, store.feedback.label_set(ref))
    if problem is not None:
        raise BadRequest(f"invalid feedback: {problem}",
                         [{"loc": ["body", "label"], "msg": problem, "type": "label_not_in_set"}])
    kind: Kind = "thumbs" if thumbs is not None else "score"
    given = Feedback(feedback_id=feedback_id or uuid.uuid4().hex, run_id=run.task_id, kind=kind,
                     score=THUMBS[thumbs] if thumbs is not None else float(score or 0.0),
                     label=label, comment=comment or None,
                     source="agent" if viewer.agent_slug is not None else "owner",
                     created_at=iso(store.clock.now()))
    kept = store.feedback.add_feedback(ref, given, expires_at=agent.expires_at)
    if kept is not None:
        return kept, False
    pair_verdicts(store, ref, run.task_id, agent=agent)
    return given, True


def set_label_set(store: FeedbackPorts, ref: AgentRef, viewer: Viewer, labels: list[str]
                  ) -> list[str]:
    """Replace the agent's label set (the owner's session or owner key only; an empty one
    clears it: any label goes); the set kept, duplicates dropped, in the order given."""
    agent = store.agents.get_agent(ref)
    if agent is None or not viewer.owns_account(ref.login):
        raise NotFound("agent not found")
    kept = list(dict.fromkeys(labels))
    if len(kept) > MAX_LABELS:
        raise BadRequest(f"a label set holds at most {MAX_LABELS} labels, not {len(kept)}")
    store.feedback.set_label_set(ref, kept or None, expires_at=agent.expires_at)
    return kept


NOT_SEEN = "gen_ai.evaluation.result on a span Bench has not stored: export the trace first"


def record_span_verdicts(store: FeedbackPorts, ref: AgentRef, viewer: Viewer,
                         verdicts: list[SpanVerdict]) -> tuple[int, dict[str, int]]:
    """Keep verdicts on spans (OTLP evaluation events) as feedback on each span's run; how many
    were kept (new or resent) and why the others were not: reason → count. A label the agent's
    label set does not hold is dropped, the verdict kept."""
    labels = store.feedback.label_set(ref) if any(v.label for v in verdicts) else None
    refused: dict[str, int]
    kept, refused = 0, {}
    for verdict in verdicts:
        span = store.ingest.get_task(ref, verdict.task_id)
        if span is None:
            refused[NOT_SEEN] = refused.get(NOT_SEEN, 0) + 1
            continue
        label = None if unknown_label(verdict.label, labels) else verdict.label
        record_feedback(store, ref, viewer, span.run_id or span.task_id,
                        feedback_id=verdict.feedback_id, score=verdict.score,
                        thumbs=verdict.thumbs, label=label, comment=verdict.comment)
        kept += 1
    return kept, refused
