"""The leaderboard on DynamoDB: sparse GSIs kept on the agent item, read with one Query each.

On the agent item (AGENT#{login}#{slug}, META):

- `lbpk` = LB#{n} while the agent is listed (`privacy.listed`), absent otherwise, so a private
  agent is in no leaderboard index at all; `n` (one of `SHARDS`, by a hash of the agent) spreads
  the rankings' writes over several partitions instead of one;
- `lb_runs`, `lb_success`, `lb_score`, `lb_cost`, `lb_latency`: the GSI sort keys, present
  only while the agent qualifies for that ranking (`ranking.rank_values`): the value alone
  (`ranking.dynamo_rank_key`), so a key moves only when its value does (a steady success rate,
  cost or latency stays put while the runs add up); ties are ordered at read time;
- `lb_text`: what `q=` searches (`leaderboard.search_text`), matched with `contains` as a
  filter on the ranking's Queries (never a Scan).

The indexes carry only their keys and `lb_text` (a rank key moves on most batches, the rest of
the agent item on every one, and an index entry is rewritten whenever what it holds changes),
so a ranking is one Query per shard for the best `offset + limit` entries of each, merged, and
one BatchGetItem of the agents that can be on the page: those ranked from the page's first key
to its last, all of them (a tie at the end of the page is read whole, one more Query per shard
that holds more of it), ordered by value, then more runs, then login and slug.

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
from datetime import datetime
from typing import Any

from ...domain.models import Agent, AgentRef
from ...domain.ranking import SORTS, Qualification, dynamo_rank_key, rank_values, search_text
from .client import ConditionFailed, Table
from .codec.agents import agent_from_item
from .codec.keys import META, AgentKeys
from .codec.values import Update, av, to_item

SHARDS = 4
RANK_INPUTS = ("runs", "successes", "eval_count", "eval_score_sum", "visibility",
               "display_name", "model", "framework")
"""The agent attributes the rank keys derive from (the latency histogram moves with `runs`)."""
MAX_ATTEMPTS = 8
READ_PAGE = 200


def shard(agent: AgentKeys) -> str:
    return f"LB#{int(hashlib.sha256(agent.name.encode()).hexdigest()[:8], 16) % SHARDS}"


def rank_update(agent: AgentKeys, item: dict[str, Any], qualification: Qualification,
                now: datetime) -> Update:
    """The write that brings the item's rank attributes in line with the item as read, `now`."""
    record: Agent = agent_from_item(item)
    values = rank_values(record, qualification, now)
    text = search_text(record)
    fields: dict[str, Any] = {"lbpk": shard(agent) if text is not None else None,
                              "lb_text": text}
    fields |= {f"lb_{sort}": dynamo_rank_key(value) for sort, value in values.items()}
    clauses, expected = [], {}
    for i, name in enumerate(RANK_INPUTS):
        if item.get(name) is None:
            clauses.append(f"attribute_not_exists(#{name})")
        else:
            clauses.append(f"#{name} = :in{i}")
            expected[f":in{i}"] = item[name]
    return Update(agent.key(META), set={k: v for k, v in fields.items() if v is not None},
                  remove=[k for k, v in fields.items() if v is None],
                  condition=" AND ".join(["attribute_exists(#pk)", *clauses]),
                  condition_values=expected)


class DynamoLeaderboard:
    """The rankings on `table`: kept by `refresh` after every write that moves them, read by
    `leaderboard`; an agent ranks once it meets `qualification`."""

    def __init__(self, table: Table, qualification: Qualification) -> None:
        self.table = table
        self.qualification = qualification

    def refresh(self, ref: AgentRef) -> None:
        agent = AgentKeys(ref.login, ref.slug)
        for _ in range(MAX_ATTEMPTS):
            item = self.table.get(agent.key(META))
            if item is None:
                return
            try:
                self.table.update(rank_update(agent, item, self.qualification, self.table.clock.now()))
                return
            except ConditionFailed:
                continue  # changed since the read: rank what it is now
        # Still contended after every attempt: each of the writers racing here refreshes
        # after its own write, and the last of them will find the item quiet.

    def leaderboard(self, sort: str, *, query: str | None = None, offset: int = 0,
                    limit: int = 25) -> list[Agent]:
        if sort not in SORTS:
            raise ValueError(f"unknown leaderboard sort {sort!r}")
        name, descending, best = f"lb_{sort}", SORTS[sort].descending, offset + limit
        shards = {f"LB#{n}": list(itertools.islice(self._ranked(sort, f"LB#{n}", query, best),
                                                   best)) for n in range(SHARDS)}
        entries = sorted((e for part in shards.values() for e in part), key=lambda e: e[name],
                         reverse=descending)
        if limit <= 0 or len(entries) <= offset:
            return []
        first, last = entries[offset][name], entries[min(best, len(entries)) - 1][name]

        def within(key: Any) -> bool:
            return bool((last <= key <= first) if descending else (first <= key <= last))

        ahead = sum(1 for e in entries if (e[name] > first if descending else e[name] < first))
        candidates = {e["pk"]: e for e in entries if within(e[name])}
        for partition, part in shards.items():
            if len(part) == best and part[-1][name] == last:  # more of the tie may follow
                candidates |= {e["pk"]: e for e in self._ranked(sort, partition, query, best,
                                                                 equal=last)}
        keys = [to_item({"pk": e["pk"], "sk": e["sk"]}) for e in candidates.values()]
        agents = [agent_from_item(item)
                  for item in self.table.get_all(keys, consistent=False)]
        key_of = {e["pk"]: e[name] for e in candidates.values()}
        agents.sort(key=lambda a: (a.login, a.slug))
        agents.sort(key=lambda a: a.stats.runs, reverse=True)
        agents.sort(key=lambda a: key_of[AgentKeys(a.login, a.slug).pk], reverse=descending)
        return agents[offset - ahead:best - ahead]

    def _ranked(self, sort: str, partition: str, query: str | None, best: int,
                equal: Any = None) -> Iterator[dict[str, Any]]:
        """One shard's index entries of `sort`, best first, matching `query` (and only those
        whose key is `equal`, if given)."""
        params: dict[str, Any] = {
            "IndexName": f"lb_{sort}",
            "KeyConditionExpression": "#pk = :pk", "ExpressionAttributeNames": {"#pk": "lbpk"},
            "ExpressionAttributeValues": {":pk": {"S": partition}},
            "ScanIndexForward": not SORTS[sort].descending,
            "Limit": min(READ_PAGE, best)}
        if equal is not None:
            params["KeyConditionExpression"] += " AND #key = :key"
            params["ExpressionAttributeNames"]["#key"] = f"lb_{sort}"
            params["ExpressionAttributeValues"][":key"] = av(equal)
        if query:
            params["FilterExpression"] = "contains(#text, :q)"
            params["ExpressionAttributeNames"]["#text"] = "lb_text"
            params["ExpressionAttributeValues"][":q"] = {"S": query.lower()}
        return self.table.pages(params)
