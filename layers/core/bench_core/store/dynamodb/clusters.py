"""Failure clusters over time on DynamoDB (`domain.cluster_series`). Items (`A` is
`{login}#{slug}`, `g` the grain's letter, H or D):

- the last members:  AGENT#{A}, CLUSTERS         generation, next id, members (JSON text)
- a period's counts: CLUSTERS#{A}#{g}, {period}  `k_{cluster}` ADDed to, `gen` the last
                     generation that added to it

Written once an hour per agent at most (by its recomputation, off the ingest path): an item per
period the new members ended in (a steady agent's last hour and day: 2 small items), each an
UpdateItem conditional on its `gen` being older, then the members, conditional on the
generation they follow. So a recomputation run again after it stopped half-way adds nothing
twice, and the members are kept last: a stopped one is redone whole (one that does not follow
the kept members, read first, writes nothing). The members of 1,000 failures are some 16 KB
(digests of 13 characters): read twice (the step's read, and that check) at 4 units each and
written once at 16 an hour (`tests/aws/test_dynamodb_cluster_series_cost.py`). A chart reads
one eventually consistent Query of one grain's partition, an item a period whatever the
clusters (at most `MAX_CLUSTERS` found at a time, a few bytes each).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

from ...domain.cluster_series import ClusterKey, ClusterState
from ...domain.models import AgentRef
from .client import ConditionFailed, Table
from .codec.keys import META, AgentKeys, expiring, expiry, temporary
from .codec.values import Update, to_item

STATE = "CLUSTERS"
_LETTER = {"hour": "H", "day": "D"}
COUNT = "k_"


def _pk(ref: AgentRef, grain: str) -> str:
    return f"CLUSTERS#{ref.login}#{ref.slug}#{_LETTER[grain]}"


class DynamoClusters:
    def __init__(self, table: Table) -> None:
        self.table = table

    def cluster_state(self, ref: AgentRef) -> ClusterState | None:
        item = self.table.get(AgentKeys(ref.login, ref.slug).key(STATE))
        if item is None:
            return None
        return ClusterState(json.loads(item["members"]), int(item["next_id"]),
                            int(item["generation"]))

    def keep_clusters(self, ref: AgentRef, state: ClusterState,
                      counts: Mapping[ClusterKey, int]) -> bool:
        agent = AgentKeys(ref.login, ref.slug)
        owner = self.table.get(agent.key(META))
        if owner is None:
            return False
        agent = temporary(agent, owner)
        kept = self.cluster_state(ref)
        if (kept.generation if kept else 0) != state.generation - 1:
            return False
        periods: dict[tuple[str, str], dict[str, Any]] = {}
        for key, n in counts.items():
            periods.setdefault((key.grain, key.period), {})[COUNT + key.cluster] = n
        for (grain, period), add in sorted(periods.items()):
            update = Update(to_item({"pk": _pk(ref, grain), "sk": period}), set={
                "gen": state.generation}, add=add,
                condition="attribute_not_exists(#gen) OR #gen < :g",
                condition_values={":g": state.generation})
            with contextlib.suppress(ConditionFailed):  # added by this generation already
                self.table.update(expiring(update, agent))
        previous = ({"condition": "attribute_not_exists(pk)"} if state.generation == 1 else
                    {"condition": "generation = :prev",
                     "values": {":prev": state.generation - 1}})
        return self.table.put({**agent.key(STATE), **to_item({
            "generation": state.generation, "next_id": state.next_id,
            "members": json.dumps(state.members, separators=(",", ":")), **expiry(agent)})},
            **previous)

    def read_clusters(self, ref: AgentRef, grain: str, first: str, last: str
                      ) -> list[tuple[str, dict[str, int]]]:
        params = self.table.query_params(_pk(ref, grain), "#sk BETWEEN :low AND :high",
                                         low=first, high=last)
        params["ConsistentRead"] = False  # a chart may be a moment behind: half the units
        out = []
        for answer in self.table.answers(params):
            for item in answer["Items"]:
                out.append((item["sk"], {name[len(COUNT):]: int(n) for name, n in item.items()
                                         if name.startswith(COUNT)}))
        return out
