"""Feedback from people on a run: a thumbs up or down, or a score from 0 to 1, with an optional
label and comment, given by the agent's owner (on the run page or with an owner key) or by the
agent itself with its key (passing on what its users said: `agent.feedback` in the SDK).

A person's score sits beside the judge's: the same 0-1 scale, thumbs read as 1 and 0. Each
feedback has an id its sender chose, so sending it again (a retry, a resent form) keeps one.
The score, its kind and the label are shown like the judge's score; the comment is content
(`domain.privacy.feedback_view`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

LABEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 ._:-]{0,63}$"
"""A label is a short name (`correct`, `wrong-tool`, `off topic`): what the leaderboard-safe
parts of a page may show, never free text."""
MAX_LABELS = 50
"""Labels an agent's label set holds at most: the owner's vocabulary for verdicts (`correct`,
`wrong-tool`); once set, a feedback's label must be one of them."""
MAX_COMMENT_CHARS = 4000
RUN_FEEDBACK_SHOWN = 100
"""Feedback read per run at most: a run's page and JSON show the first this many by id."""
THUMBS = {"up": 1.0, "down": 0.0}

Kind = Literal["thumbs", "score"]
Source = Literal["owner", "agent"]


class Feedback(BaseModel):
    """One person's verdict on one run, as stored."""

    model_config = ConfigDict(frozen=True)

    feedback_id: str
    run_id: str
    kind: Kind
    score: float = Field(ge=0, le=1)
    """Thumbs up is 1, down 0."""
    label: str | None = None
    comment: str | None = None
    source: Source
    """Who sent it: the owner (a session or an owner key), or the agent (its key)."""
    created_at: str

    @property
    def thumbs(self) -> str | None:
        if self.kind != "thumbs":
            return None
        return "up" if self.score >= 0.5 else "down"


def in_shown_order(feedback: list[Feedback]) -> list[Feedback]:
    """Oldest first (ties by id), as every store answers a run's feedback."""
    return sorted(feedback, key=lambda f: (f.created_at, f.feedback_id))


def unknown_label(label: str | None, label_set: list[str] | None) -> str | None:
    """Why `label` may not be given, where the agent has a label set it is not in; else None."""
    if label is None or not label_set or label in label_set:
        return None
    return f"label: {label!r} is not in the agent's label set ({', '.join(label_set)})"


@dataclass(frozen=True)
class SpanVerdict:
    """A verdict on a span from telemetry (an OTLP `gen_ai.evaluation.result` event,
    `ingest.otlp.evaluations`), to keep as feedback on the span's run: `thumbs` or `score`,
    with the id that makes a resent export keep one."""

    task_id: str
    feedback_id: str
    score: float | None
    thumbs: str | None
    label: str | None
    comment: str | None
