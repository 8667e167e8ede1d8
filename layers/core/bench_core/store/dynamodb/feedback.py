"""DynamoDB items of feedback from people (`bench_core.domain.feedback`), kept beside the run
they are about so that a run's feedback is one Query. Item (`A` is `{login}#{slug}`, `n` the
partition of the run's root task, `codec.keys.AgentKeys.pk_of`):

- feedback:  PART#{A}#{n}, FB#{len(run id):03}#{run id}#{feedback id}   body (JSON text)
- a labelled run's cell (`domain.agreement`; `-` until the judge scores it):
             PART#{A}#{n}, FBCELL#{len(run id):03}#{run id}               cell
- the agent's label set:       AGENT#{A}, LABELS                         labels (JSON text)
- the agent's agreement table: AGENT#{A}, AGREE                          pp pf fp ff (numbers),
             labelled (1 once the agent was given feedback: `has_feedback`)

The run id's length leads its sort key, so no run's prefix is another's (ids may hold `#`).
No index: the run page reads its feedback with one Query of that prefix, strongly consistent
so that a page drawn after a feedback shows it (a few hundred bytes an item: 100 with
300-character comments take 13 read units, `tests/aws/test_dynamodb_feedback_cost.py`).
A feedback is one conditional PutItem (`attribute_not_exists`): one write unit for an item of
up to 1 KB, after one write unit marking the agent's `AGREE` item `labelled` (first, so a
feedback is never kept unmarked), nothing else touched (neither the run's task item nor the
agent), off the ingest path; a resend costs those writes (2 units) and one read of the item kept
(1 unit). An eval reads `AGREE` once for its runs (half a unit, eventually consistent: the
mark is set once in an agent's life, so only a first feedback racing a judge within a second
could go unpaired) and a run's feedback only if marked. A temporary agent's
feedback expires with it (TTL, `retention.py`).

A run moving into a cell of the agreement table is one transaction: its cell item put on
condition that it still holds the cell just read, and the agent's `AGREE` item ADDed to (+1
the new cell, -1 the old): 4 write units and a read of the cell item, only when a feedback or a
judge's result changes a labelled run's verdicts. The profile reads `AGREE` (half a read unit),
the leaderboard a page's worth in one BatchGetItem.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...domain.agreement import UNJUDGED, AgreementTable, Cell, as_cell
from ...domain.feedback import Feedback, in_shown_order
from ...domain.models import AgentRef
from .client import MAX_ATTEMPTS, Table, busy, pause
from .codec.keys import TASK, AgentKeys
from .codec.values import Update, to_item, ttl

FEEDBACK = "FB#"
CELL = "FBCELL#"
AGREEMENT = "AGREE"
LABELS = "LABELS"


def run_prefix(run_id: str) -> str:
    return f"{FEEDBACK}{len(run_id):03d}#{run_id}#"


def cell_key(ref: AgentRef, run_id: str) -> dict[str, str]:
    """A labelled run's cell, beside its feedback."""
    return {"pk": AgentKeys(ref.login, ref.slug).pk_of(TASK + run_id),
            "sk": f"{CELL}{len(run_id):03d}#{run_id}"}


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
        expiry = ttl(expires_at) if expires_at else {}
        self.table.update(Update(key=AgentKeys(ref.login, ref.slug).key(AGREEMENT),
                                 set={"labelled": 1, **expiry}))
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

    def set_agreement(self, ref: AgentRef, run_id: str, cell: Cell | None, *,
                      expires_at: str | None = None) -> None:
        agent = AgentKeys(ref.login, ref.slug)
        marker = cell_key(ref, run_id)
        expiry = ttl(expires_at) if expires_at else {}
        for attempt in range(MAX_ATTEMPTS):
            held = self.table.get(to_item(marker))
            old = None if held is None else as_cell(str(held["cell"]))
            if held is not None and (cell is None or old == cell):
                return
            put: dict[str, Any] = {"TableName": self.table.name, "Item": to_item(
                {**marker, "cell": cell or UNJUDGED, **expiry})}
            if held is None:
                put["ConditionExpression"] = "attribute_not_exists(pk)"
            else:
                put |= {"ConditionExpression": "#cell = :old",
                        "ExpressionAttributeNames": {"#cell": "cell"},
                        "ExpressionAttributeValues": to_item({":old": held["cell"]})}
            moves: dict[str, int] = {moved: by for moved, by in ((cell, 1), (old, -1))
                                     if moved is not None}
            count = Update(key=agent.key(AGREEMENT), set=expiry, add=moves)
            try:
                if moves:
                    self.table.transact([{"Put": put}, self.table.update_action(count)])
                else:
                    self.table.client.put_item(**put)
                return
            except (self.table.client.exceptions.TransactionCanceledException,
                    self.table.client.exceptions.ConditionalCheckFailedException):
                pause(attempt)  # another verdict moved the run first: read its cell again
        raise busy()

    def run_marks(self, ref: AgentRef, run_ids: Sequence[str]) -> dict[str, Cell | None]:
        found = self.table.batch_get([to_item(cell_key(ref, run_id)) for run_id in run_ids],
                                     consistent=False)
        return {str(item["sk"])[len(CELL) + 4:]: as_cell(str(item["cell"])) for item in found}

    def label_set(self, ref: AgentRef) -> list[str] | None:
        held = self.table.get(AgentKeys(ref.login, ref.slug).key(LABELS), consistent=False)
        return None if held is None else list(json.loads(held["labels"]))

    def set_label_set(self, ref: AgentRef, labels: list[str] | None, *,
                      expires_at: str | None = None) -> None:
        key = {"pk": AgentKeys(ref.login, ref.slug).pk, "sk": LABELS}
        if not labels:
            self.table.delete(to_item(key))
            return
        expiry = ttl(expires_at) if expires_at else {}
        self.table.put(to_item({**key, "labels": json.dumps(labels), **expiry}))

    def has_feedback(self, ref: AgentRef) -> bool:
        held = self.table.get(AgentKeys(ref.login, ref.slug).key(AGREEMENT), consistent=False)
        return held is not None and bool(held.get("labelled"))

    def agreement_tables(self, refs: Sequence[AgentRef]) -> dict[AgentRef, AgreementTable]:
        keys = {AgentKeys(ref.login, ref.slug).pk: ref for ref in refs}
        found = {item["pk"]: item for item in self.table.batch_get(
            [to_item({"pk": pk, "sk": AGREEMENT}) for pk in keys], consistent=False)}
        return {ref: AgreementTable.of(found.get(pk, {})) for pk, ref in keys.items()}


def _decoded(item: dict[str, Any]) -> Feedback:
    return Feedback.model_validate_json(item["body"])
