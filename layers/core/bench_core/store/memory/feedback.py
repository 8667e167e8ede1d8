"""Feedback from people in memory (`bench_core.domain.feedback`): by agent, run and feedback id,
as SQLite's primary key; the first sent under an id is kept."""

from __future__ import annotations

from ...domain.feedback import Feedback, in_shown_order
from ...domain.models import AgentRef
from .state import Concern


class MemoryFeedback(Concern):
    def add_feedback(self, ref: AgentRef, feedback: Feedback, *,
                     expires_at: str | None = None) -> Feedback | None:
        with self.memory.locked() as tables:
            kept = tables.feedback.setdefault(ref, {}).setdefault(feedback.run_id, {})
            if feedback.feedback_id in kept:
                return kept[feedback.feedback_id]
            kept[feedback.feedback_id] = feedback
        return None

    def run_feedback(self, ref: AgentRef, run_id: str, limit: int) -> list[Feedback]:
        with self.memory.locked() as tables:
            kept = tables.feedback.get(ref, {}).get(run_id, {})
            first = [kept[i] for i in sorted(kept)[:limit]]
        return in_shown_order(first)
