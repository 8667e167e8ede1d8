"""DynamoDB items of feedback from people (`bench_core.domain.feedback`), kept beside the run
they are about so that a run's feedback is one Query. Item (`A` is `{login}#{slug}`, `n` the
partition of the run's root task, `codec.keys.AgentKeys.pk_of`):

- feedback:  PART#{A}#{n}, FB#{len(run id):03}#{run id}#{feedback id}   body (JSON text)

The run id's length leads its sort key, so no run's prefix is another's (ids may hold `#`).
No index: the run page reads its feedback with one Query of that prefix, strongly consistent
so that a page drawn after a feedback shows it (a few hundred bytes an item: 100 with
300-character comments take 13 read units, `tests/aws/test_dynamodb_feedback_cost.py`).
A feedback is one conditional PutItem (`attribute_not_exists`): one write unit for an item of
up to 1 KB, nothing else touched (neither the run's task item nor the agent), off the ingest
path; a resend costs that failed write (1 unit) and one read of the item kept (1 unit). A temporary agent's
feedback expires with it (TTL, `retention.py`).
"""

from __future__ import annotations

from typing import Any

from ...domain.feedback import Feedback, in_shown_order
from ...domain.models import AgentRef
from .client import Table
from .codec.keys import TASK, AgentKeys
from .codec.values import to_item, ttl

FEEDBACK = "FB#"


def run_prefix(run_id: str) -> str:
    return f"{FEEDBACK}{len(run_id):03d}#{run_id}#"


def feedback_key(ref: AgentRef, run_id: str, feedback_id: str) -> dict[str, str]:
    """Under the partition of the run's root task, so its feedback is one Query."""
    return {"pk": AgentKeys(ref.login, ref.slug).pk_of(TASK + run_id),
            "sk": run_prefix(run_id) + feedback_id}


class DynamoFeedback:
    """A run's feedback, on `table`."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def add_feedback(self, ref: AgentRef, feedback: Feedback, *,
                     expires_at: str | None = None) -> Feedback | None:
        key = feedback_key(ref, feedback.run_id, feedback.feedback_id)
        item = to_item({**key, "body": feedback.model_dump_json(),
                        **(ttl(expires_at) if expires_at else {})})
        if self.table.put(item, "attribute_not_exists(pk)"):
            return None
        kept = self.table.get(to_item(key))
        return feedback if kept is None else _decoded(kept)

    def run_feedback(self, ref: AgentRef, run_id: str, limit: int) -> list[Feedback]:
        key = feedback_key(ref, run_id, "")
        items = self.table.query(key["pk"], "begins_with(#sk, :prefix)", page=limit,
                                 prefix=key["sk"])
        first = [_decoded(item) for _, item in zip(range(limit), items, strict=False)]
        return in_shown_order(first)


def _decoded(item: dict[str, Any]) -> Feedback:
    return Feedback.model_validate_json(item["body"])
