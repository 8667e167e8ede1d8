"""A run's feedback from people as a viewer may see it (`domain.privacy.feedback_view`): each
one, and what they add up to (how many, the mean score, thumbs up and down), for the run page
and its JSON twin; the agent's label set (names, no content: whoever sees the agent may)."""

from __future__ import annotations

from typing import Any

from ..domain.feedback import RUN_FEEDBACK_SHOWN
from ..domain.models import Agent, AgentRef
from ..domain.privacy import Sight, Viewer, feedback_view
from ..ports.services import WithFeedback


def run_feedback(store: WithFeedback, agent: Agent, viewer: Viewer, run_id: str
                 ) -> dict[str, Any]:
    kept = store.feedback.run_feedback(agent.ref, run_id, RUN_FEEDBACK_SHOWN)
    sight = Sight.of(agent, viewer)
    return {"count": len(kept),
            "mean_score": sum(f.score for f in kept) / len(kept) if kept else None,
            "up": sum(f.thumbs == "up" for f in kept),
            "down": sum(f.thumbs == "down" for f in kept),
            "items": [feedback_view(f, sight) for f in kept]}


def label_set(store: WithFeedback, ref: AgentRef) -> list[str]:
    """The agent's labels, in its owner's order (none: any label goes)."""
    return store.feedback.label_set(ref) or []
