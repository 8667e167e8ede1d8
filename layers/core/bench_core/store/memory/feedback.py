"""Feedback from people in memory (`bench_core.domain.feedback`): by agent, run and feedback id,
as SQLite's primary key; the first sent under an id is kept. The judge's agreement with people:
each labelled run's cell, counted as read (memory holds no history worth counters)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ...domain.agreement import AgreementTable, Cell
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

    def set_agreement(self, ref: AgentRef, run_id: str, cell: Cell | None, *,
                      expires_at: str | None = None) -> None:
        with self.memory.locked() as tables:
            runs = tables.agreement.setdefault(ref, {})
            if cell is not None or run_id not in runs:
                runs[run_id] = cell

    def run_marks(self, ref: AgentRef, run_ids: Sequence[str]) -> dict[str, Cell | None]:
        with self.memory.locked() as tables:
            runs = tables.agreement.get(ref, {})
            return {run_id: runs[run_id] for run_id in run_ids if run_id in runs}

    def label_set(self, ref: AgentRef) -> list[str] | None:
        with self.memory.locked() as tables:
            labels = tables.label_sets.get(ref)
        return None if labels is None else list(labels)

    def set_label_set(self, ref: AgentRef, labels: list[str] | None, *,
                      expires_at: str | None = None) -> None:
        with self.memory.locked() as tables:
            if labels:
                tables.label_sets[ref] = tuple(labels)
            else:
                tables.label_sets.pop(ref, None)

    def has_feedback(self, ref: AgentRef) -> bool:
        with self.memory.locked() as tables:
            return any(tables.feedback.get(ref, {}).values())

    def agreement_tables(self, refs: Sequence[AgentRef]) -> dict[AgentRef, AgreementTable]:
        with self.memory.locked() as tables:
            return {ref: AgreementTable.of(Counter(
                        cell for cell in tables.agreement.get(ref, {}).values() if cell))
                    for ref in refs}
