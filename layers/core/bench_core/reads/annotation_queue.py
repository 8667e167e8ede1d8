"""The owner's annotation queue: which of an agent's newest runs deserve a person's verdict
next, for the queue page (`/dashboard/agents/{slug}/queue`) and its JSON twin.

Of the newest `QUEUE_WINDOW` runs (one page of the agent's runs and one batch read of their
marks, `FeedbackStore.run_marks`: bounded whatever the agent's history), in this order:

1. `unsure`: judged within `UNSURE_WITHIN` of the pass mark (`domain.agreement.PASS_MARK`),
   nobody has looked yet, nearest first: where a person's verdict tells most about the judge;
2. `disagreed`: the judge and people gave opposite verdicts: worth a second look;
3. `unlooked`: nobody has looked yet, the judge sure of it or not judged (yet, or unscored),
   newest first.

Runs where the judge and people agree are done and left out. The agent's label set comes
with it, for a verdict to carry one. Only the owner's session or owner
key sees it: anyone else, an agent key included, is told the agent is not found.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol
from urllib.parse import quote

from ..domain.agreement import PASS_MARK, Cell
from ..domain.errors import NotFound
from ..domain.models import AgentRef, TaskState
from ..domain.privacy import Viewer
from ..ports.services import WithAgents, WithFeedback, WithIngest
from .feedback import label_set

QUEUE_WINDOW = 100
"""The newest runs the queue looks through."""
UNSURE_WITHIN = 0.25
"""How near the pass mark a judge's score is for the judge to count as unsure of it."""

Reason = Literal["unsure", "disagreed", "unlooked"]
REASONS: dict[Reason, str] = {"unsure": "judge least sure", "disagreed": "judge and people disagree",
                              "unlooked": "nobody has looked yet"}


class QueueReads(WithAgents, WithIngest, WithFeedback, Protocol):
    """The agent, its newest runs and which of them people gave a verdict on."""


def _score(run: TaskState) -> float | None:
    judged = run.eval
    return judged.score if judged is not None and judged.status == "scored" else None


def _doubt(run: TaskState) -> float | None:
    """How far the judge's score is from the pass mark, where that is within `UNSURE_WITHIN`."""
    score = _score(run)
    doubt = None if score is None else abs(score - PASS_MARK)
    return doubt if doubt is not None and doubt < UNSURE_WITHIN else None


def queued(runs: list[TaskState], marks: dict[str, Cell | None]
           ) -> list[tuple[Reason, TaskState]]:
    """The runs in the queue's order with why each is there (`runs` newest first)."""
    unsure = [r for r in runs if r.task_id not in marks and _doubt(r) is not None]
    unsure.sort(key=lambda r: _doubt(r) or 0.0)
    disagreed = [r for r in runs if marks.get(r.task_id) in ("pf", "fp")]
    unlooked = [r for r in runs if r.task_id not in marks and _doubt(r) is None]
    return ([("unsure", r) for r in unsure] + [("disagreed", r) for r in disagreed]
            + [("unlooked", r) for r in unlooked])


def annotation_queue(store: QueueReads, ref: AgentRef, viewer: Viewer) -> dict[str, Any]:
    agent = store.agents.get_agent(ref)
    if agent is None or not viewer.owns_account(ref.login):
        raise NotFound("agent not found")
    runs, _ = store.ingest.list_tasks(ref, limit=QUEUE_WINDOW)
    marks = store.feedback.run_marks(ref, [r.task_id for r in runs])
    path = f"{quote(ref.login)}/{quote(ref.slug)}"
    items = [{"run_id": run.task_id, "name": run.name, "status": run.status,
              "started_at": run.started_at, "score": _score(run),
              "judge": run.eval.judge if run.eval else None, "reason": reason,
              "why": REASONS[reason], "cell": marks.get(run.task_id),
              "url": f"/u/{path}/runs/{quote(run.task_id, safe='')}",
              "feedback_url": f"/api/agents/{path}/runs/{quote(run.task_id, safe='')}/feedback"}
             for reason, run in queued(runs, marks)]
    return {"login": ref.login, "slug": ref.slug,
            "display_name": agent.display_name or agent.slug, "window": len(runs),
            "pass_mark": PASS_MARK, "labels": label_set(store, ref), "runs": items}
