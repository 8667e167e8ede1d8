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

The rank attributes are rewritten from the agent's merged counters (`META` and its counter
shards, `codec.agents`), with the counters they were computed from (`ranked`, what listings
show) and `ranked_at`: after an owner's change of settings at once, after a batch or an eval at
most every `RANK_EVERY` (`refresh_if_due`, on the agent as the writer read it, its own write
added) unless the agent enters or leaves a ranking. So a hot agent's `META` (and its five index
entries) is rewritten about once in `RANK_EVERY`, not 80 times a second. The rewrite is
conditional on `ranked_at` and the settings being as read: a writer racing a change of
settings loses, and the change's own refresh ranks it.

Staleness: an index key lags the agent's counters by at most `RANK_EVERY` while it sends; after
its last write it keeps the counters of the last refresh until its next write. A page reads its
agents whole (`META` and shards, one Query each, side by side) and orders them by their merged
counters, so what a page shows is exact; which agents are near a page comes from the keys.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

from ...domain.models import Agent, AgentRef, iso
from ...domain.ranking import SORTS, Qualification, dynamo_rank_key, rank_values, search_text
from .client import ConditionFailed, Table
from .codec.agents import RANKED, agent_from_item, merged, snapshot
from .codec.keys import META, AgentKeys
from .codec.values import Update, av

SHARDS = 4
RANK_EVERY = timedelta(seconds=30)
"""How often at most a batch or an eval rewrites an agent's rank keys (and `META`): a rewrite
is some 8 write units (the item and its rank entries, each key moved a delete and a put), which
at 5 seconds an OpenTelemetry exporter paid on every export (0.4 write units a span of 20-span
exports, `tests/perf/dynamodb_cost.py --otlp`); at 30 seconds one export in six."""
RANK_INPUTS = ("ranked_at", "visibility", "display_name", "model", "framework")
"""The agent attributes a rank rewrite is conditional on: the last rank, and the settings."""
MAX_ATTEMPTS = 8
READ_PAGE = 200


def read_agent(table: Table, agent: AgentKeys, *, consistent: bool = True
               ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The agent item and its counter shards: one Query, which bills the few KB they hold
    together (a GetItem of `META` alone bills one read unit of it)."""
    params = table.query_params(agent.pk, "begins_with(#sk, :meta)", meta=META)
    params["ConsistentRead"] = consistent
    items = [item for page in table.answers(params) for item in page["Items"]]
    item = next((i for i in items if i["sk"] == META), None)
    return item, [i for i in items if i["sk"] != META]


def shard(agent: AgentKeys) -> str:
    return f"LB#{int(hashlib.sha256(agent.name.encode()).hexdigest()[:8], 16) % SHARDS}"


def rank_update(agent: AgentKeys, item: dict[str, Any], counted: dict[str, Any],
                qualification: Qualification, now: datetime) -> Update:
    """The write that brings the item's rank attributes in line with `counted` (the item as
    read, its shards merged: `codec.agents.merged`), `now`."""
    record: Agent = agent_from_item(counted)
    values = rank_values(record, qualification, now)
    text = search_text(record)
    fields: dict[str, Any] = {"lbpk": shard(agent) if text is not None else None,
                              "lb_text": text, "ranked_at": iso(now), RANKED: snapshot(counted)}
    fields |= {f"lb_{sort}": dynamo_rank_key(value) for sort, value in values.items()}
    fields |= {f"lb_{sort}": None for sort in SORTS if sort not in values}
    clauses, expected = [], {}
    for i, name in enumerate(RANK_INPUTS):
        if item.get(name) is None:
            clauses.append(f"attribute_not_exists(#{name})")
        else:
            clauses.append(f"#{name} = :in{i}")
            expected[f":in{i}"] = item[name]
    return Update(agent.key(META), set={k: v for k, v in fields.items() if v is not None},
                  remove=[k for k, v in fields.items() if v is None and k in item],
                  condition=" AND ".join(["attribute_exists(#pk)", *clauses]),
                  condition_values=expected)


def _rank_due(item: dict[str, Any], update: Update, now: datetime) -> bool:
    """Whether a batch's or an eval's refresh writes: `RANK_EVERY` since the last, or the agent
    enters or leaves a ranking (or the listing)."""
    if not item.get("ranked_at") or item["ranked_at"] <= iso(now - RANK_EVERY):
        return True
    ranked = {name for name in item if name == "lbpk" or name.startswith("lb_")}
    return ranked != {name for name in update.set if name == "lbpk" or name.startswith("lb_")}


class DynamoLeaderboard:
    """The rankings on `table`: kept by `refresh` after every write that moves them, read by
    `leaderboard`; an agent ranks once it meets `qualification`."""

    def __init__(self, table: Table, qualification: Qualification) -> None:
        self.table = table
        self.qualification = qualification

    def refresh(self, ref: AgentRef) -> None:
        """Rank the agent now, as it is (after a change of its settings)."""
        agent = AgentKeys(ref.login, ref.slug)
        for _ in range(MAX_ATTEMPTS):
            item, shards = read_agent(self.table, agent)
            if item is None:
                return
            try:
                self.table.update(rank_update(agent, item, merged(item, shards),
                                              self.qualification, self.table.clock.now()))
                return
            except ConditionFailed:
                continue  # changed since the read: rank what it is now
        # Still contended after every attempt: each of the writers racing here refreshes
        # after its own write, and the last of them will find the item quiet.

    def refresh_if_due(self, ref: AgentRef, item: dict[str, Any] | None,
                       shards: list[dict[str, Any]]) -> None:
        """After a batch or an eval: rank the agent from `item` and `shards` as its writer read
        them (and its own write, as a shard more), if due (`_rank_due`). A lost race (another
        refresh, a change of settings) is left to the winner."""
        if item is None:
            return
        now = self.table.clock.now()
        update = rank_update(AgentKeys(ref.login, ref.slug), item, merged(item, shards),
                             self.qualification, now)
        if _rank_due(item, update, now):
            with contextlib.suppress(ConditionFailed):
                self.table.update(update)

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
        agents = self.whole([AgentKeys(*e["pk"][len("AGENT#"):].split("#", 1))
                              for e in candidates.values()])
        now = self.table.clock.now()

        def key_of(agent: Agent) -> Any:
            value = rank_values(agent, self.qualification, now).get(sort)
            return key_of_entry[AgentKeys(agent.login, agent.slug).pk] if value is None \
                else dynamo_rank_key(value)

        key_of_entry = {e["pk"]: e[name] for e in candidates.values()}
        agents.sort(key=lambda a: (a.login, a.slug))
        agents.sort(key=lambda a: a.stats.runs, reverse=True)
        agents.sort(key=key_of, reverse=descending)
        return agents[offset - ahead:best - ahead]

    def whole(self, agents: list[AgentKeys]) -> list[Agent]:
        """The agents of a page (or a listing), each `META` and its counter shards merged: one Query each
        (eventually consistent, as the index), side by side."""
        def one(agent: AgentKeys) -> Agent | None:
            item, shards = read_agent(self.table, agent, consistent=False)
            return None if item is None else agent_from_item(merged(item, shards))

        if not agents:
            return []
        with ThreadPoolExecutor(max_workers=min(8, len(agents))) as pool:
            return [a for a in pool.map(one, agents) if a is not None]

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
