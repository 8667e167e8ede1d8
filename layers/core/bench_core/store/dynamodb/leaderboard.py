"""The leaderboard on DynamoDB: sparse GSIs kept on the agent item, read with one Query each.

On the agent item (AGENT#{login}#{slug}, META):

- `lbpk` = LB#{n} while the agent is listed (`privacy.listed`), absent otherwise, so a private
  agent is in no leaderboard index at all; `n` (one of `SHARDS`, by a hash of the agent) spreads
  the rankings' writes over several partitions instead of one;
- `lb_runs`, `lb_success`, `lb_score`, `lb_cost`, `lb_latency`: the GSI sort keys, present
  only while the agent qualifies for that ranking (`leaderboard.rank_values`), encoded by
  `leaderboard.dynamo_rank_key` so that the runs tie-break is part of the key;
- `lb_text`: what `q=` searches (`leaderboard.search_text`), matched with `contains` as a
  filter on the ranking's Queries (never a Scan).

The indexes carry only their keys and `lb_text` (a rank key moves on most batches, the rest of
the agent item on every one, and an index entry is rewritten whenever what it holds changes),
so a ranking is one Query per shard for the best `offset + limit` entries of each, merged, and
one BatchGetItem of the page's agents.

The rank attributes are rewritten after every write that changes what they derive from (a
batch's counters, a score, the owner's settings), from a consistent read of the item. The
rewrite is conditional on those inputs being unchanged since the read, so two writers racing
cannot leave ranks computed from stale counters (or a listing of an agent that just went
private): the loser reads again.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator
from typing import Any

from ...domain.models import Agent, AgentRef
from ...domain.ranking import SORTS, dynamo_rank_key, rank_values, search_text
from . import codec
from .client import ConditionFailed, Table
from .codec import AgentKeys, Update

SHARDS = 4
RANK_INPUTS = ("runs", "successes", "eval_count", "eval_score_sum", "visibility",
               "display_name", "model", "framework")
"""The agent attributes the rank keys derive from (the latency histogram moves with `runs`)."""
MAX_ATTEMPTS = 8
READ_PAGE = 200


def shard(agent: AgentKeys) -> str:
    return f"LB#{int(hashlib.sha256(agent.name.encode()).hexdigest()[:8], 16) % SHARDS}"


def rank_update(agent: AgentKeys, item: dict[str, Any]) -> Update:
    """The write that brings the item's rank attributes in line with the item as read."""
    record: Agent = codec.agent_from_item(item)
    values = rank_values(record)
    text = search_text(record)
    fields: dict[str, Any] = {"lbpk": shard(agent) if text is not None else None,
                              "lb_text": text}
    fields |= {f"lb_{sort}": dynamo_rank_key(sort, value, record.stats.runs)
               for sort, value in values.items()}
    clauses, expected = [], {}
    for i, name in enumerate(RANK_INPUTS):
        if item.get(name) is None:
            clauses.append(f"attribute_not_exists(#{name})")
        else:
            clauses.append(f"#{name} = :in{i}")
            expected[f":in{i}"] = item[name]
    return Update(agent.key(codec.META), set={k: v for k, v in fields.items() if v is not None},
                  remove=[k for k, v in fields.items() if v is None],
                  condition=" AND ".join(["attribute_exists(#pk)", *clauses]),
                  condition_values=expected)


class DynamoLeaderboard:
    """The rankings on `table`: kept by `refresh` after every write that moves them, read by
    `leaderboard`."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def refresh(self, ref: AgentRef) -> None:
        agent = AgentKeys(ref.login, ref.slug)
        for _ in range(MAX_ATTEMPTS):
            item = self.table.get(agent.key(codec.META))
            if item is None:
                return
            try:
                self.table.update(rank_update(agent, item))
                return
            except ConditionFailed:
                continue  # changed since the read: rank what it is now
        # Still contended after every attempt: each of the writers racing here refreshes
        # after its own write, and the last of them will find the item quiet.

    def leaderboard(self, sort: str, *, query: str | None = None, offset: int = 0,
                    limit: int = 25) -> list[Agent]:
        if sort not in SORTS:
            raise ValueError(f"unknown leaderboard sort {sort!r}")
        best = offset + limit
        entries = [entry for n in range(SHARDS)
                   for entry in itertools.islice(self._ranked(sort, f"LB#{n}", query, best), best)]
        entries.sort(key=lambda entry: entry["pk"])  # ties: login, then slug
        entries.sort(key=lambda entry: entry[f"lb_{sort}"], reverse=SORTS[sort].descending)
        keys = [codec.to_item({"pk": e["pk"], "sk": e["sk"]}) for e in entries[offset:best]]
        return [codec.agent_from_item(item)
                for item in self.table.get_all(keys, consistent=False)]

    def _ranked(self, sort: str, partition: str, query: str | None, best: int
                ) -> Iterator[dict[str, Any]]:
        """One shard's index entries of `sort`, best first, matching `query`."""
        params: dict[str, Any] = {
            "IndexName": f"lb_{sort}",
            "KeyConditionExpression": "#pk = :pk", "ExpressionAttributeNames": {"#pk": "lbpk"},
            "ExpressionAttributeValues": {":pk": {"S": partition}},
            "ScanIndexForward": not SORTS[sort].descending,
            "Limit": min(READ_PAGE, best)}
        if query:
            params["FilterExpression"] = "contains(#text, :q)"
            params["ExpressionAttributeNames"]["#text"] = "lb_text"
            params["ExpressionAttributeValues"][":q"] = {"S": query.lower()}
        return self.table.pages(params)
