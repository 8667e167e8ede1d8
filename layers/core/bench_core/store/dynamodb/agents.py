"""Agents on DynamoDB: their names, privacy settings and stats.

Item (pk, sk [gsi1pk, gsi1sk]; `A` is `{login}#{slug}`):

- agent:            AGENT#{A}, META  [OWNER#{login}, AGENT#{slug}]
- counter shards:   AGENT#{A}, META#C{n}  (`codec.agents`: why)
- versions:         AGENT#{A}, VER#{version}#{n}  (`codec.versions`)

The counters are ADDed to the shards by ingest (`ingest.py`) and evals (`evals.py`); an owner's
settings are written here. One agent is read whole, `META` and its shards, by one Query
(`read_agent`); a listing of agents shows the counters their ranks were computed from
(`codec.agents.listed_item`). The agent's rank keys are refreshed at most every
`leaderboard.RANK_EVERY` from its counters, and at once on a change of its settings
(`leaderboard.py`).

An account's agents are counted on its user item (USER#{login}, META: `agents`), added to by
the transaction that creates an agent (here, or its first batch in `ingest.py`), under the
condition that the count is below the limit (`counting_user`). A user from before the count
was kept gets it from one Query of its agents, the first time it creates one.
"""

from __future__ import annotations

import contextlib
from typing import Any

from botocore.exceptions import ClientError

from ...domain.errors import TooManyAgents
from ...domain.models import Agent, AgentRef, iso
from ...domain.versions import VersionStats
from ...ports.store import SETTABLE
from .client import ConditionFailed, Table, cancellation_reasons, code
from .codec.agents import agent_from_item, listed_item, merged
from .codec.keys import META, AgentKeys
from .codec.users import user_key, user_upsert
from .codec.values import Update, to_item, ttl
from .codec.versions import VER, versions_from_items
from .leaderboard import DynamoLeaderboard, read_agent


def agent_item(agent: Agent) -> dict[str, Any]:
    """A new agent as `codec.agents.agent_upsert` would have created it, with its own settings."""
    keys = AgentKeys(agent.login, agent.slug)
    attrs: dict[str, Any] = {
        "pk": keys.pk, "sk": META, "login": agent.login, "slug": agent.slug,
        "gsi1pk": f"OWNER#{agent.login}", "gsi1sk": f"AGENT#{agent.slug}",
        "created_at": agent.created_at, "visibility": agent.visibility,
        "hide_inputs": agent.hide_inputs, "hide_outputs": agent.hide_outputs}
    if agent.display_name is not None:
        attrs["display_name"] = agent.display_name
    if agent.expires_at is not None:
        attrs |= ttl(agent.expires_at)
    return to_item(attrs)


def counting_user(table: Table, login: str, now: str, most: int, until: str | None = None
                  ) -> Update:
    """The write of `login`'s user item that counts one agent more, conditional on its having
    fewer than `most`: the part of an agent's creating transaction that refuses it
    (`TooManyAgents`, see `refused`). A user with no count yet gets its count first."""
    user = table.get(user_key(login))
    if user is None or user.get("agents") is None:
        count = sum(1 for _ in table.query(f"OWNER#{login}", index="gsi1", projection=("pk",)))
        if count:
            with contextlib.suppress(ConditionFailed):  # a concurrent creator counted first
                table.update(Update(user_key(login), set={"login": login, "agents": count},
                                    set_if_absent={"created_at": now},
                                    condition="attribute_not_exists(#agents)"))
    update = user_upsert(login, now, until)
    update.add["agents"] = 1
    update.condition = "attribute_not_exists(#agents) OR #agents < :most"
    update.condition_values = {":most": most}
    return update


def raise_unless_agent_exists(exc: ClientError, login: str, most: int) -> None:
    """Return if an agent's creating transaction (`counting_user`'s write first, the agent's
    second) was cancelled because the agent exists; `TooManyAgents` if by the count alone;
    else `exc` again."""
    reasons = cancellation_reasons(exc) if code(exc) == "TransactionCanceledException" else []
    if reasons[1:2] == ["ConditionalCheckFailed"]:
        return
    if reasons[:1] == ["ConditionalCheckFailed"]:
        raise TooManyAgents(login, most) from exc
    raise exc


def live_agent(item: dict[str, Any] | None, now: str,
               shards: list[dict[str, Any]] | None = None) -> Agent | None:
    """The agent of its item and `shards` (without them, as listings show it); a temporary
    agent past its expiry is gone, even before TTL deletes it."""
    if not item or item.get("until") is not None and item["until"] <= now:
        return None
    return agent_from_item(listed_item(item) if shards is None else merged(item, shards))


class DynamoAgents:
    """Agents and their settings, on `table`; `ranks` re-ranks an agent whose settings
    changed."""

    def __init__(self, table: Table, ranks: DynamoLeaderboard, max_agents: int) -> None:
        self.table = table
        self.ranks = ranks
        self.max_agents = max_agents

    def get_agent(self, ref: AgentRef) -> Agent | None:
        item, shards = read_agent(self.table, AgentKeys(ref.login, ref.slug))
        return live_agent(item, iso(self.table.clock.now()), shards)

    def agent_versions(self, ref: AgentRef) -> list[VersionStats]:
        """One Query of the agent's version items (`codec.versions`), eventually consistent
        (half the read units: a page that is a second behind is as good): some 3 KB, one RRU,
        a version with all its shards."""
        params = self.table.query_params(AgentKeys(ref.login, ref.slug).pk,
                                         "begins_with(#sk, :ver)", ver=VER)
        params["ConsistentRead"] = False
        return versions_from_items(self.table.pages(params))

    def list_agents(self, login: str) -> list[Agent]:
        """The owner's agents (`gsi1`), each read whole: a listing's numbers are the profile's,
        not the snapshot the agent was last ranked from (which a quiet agent keeps)."""
        items = self.table.query(f"OWNER#{login}", index="gsi1", projection=("login", "slug"))
        return self.ranks.whole([AgentKeys(item["login"], item["slug"]) for item in items])

    def update_agent(self, ref: AgentRef, changes: dict[str, Any]) -> Agent | None:
        unknown = set(changes) - SETTABLE
        if unknown:
            raise ValueError(f"not settable: {sorted(unknown)}")
        if not changes:
            return self.get_agent(ref)
        update = Update(AgentKeys(ref.login, ref.slug).key(META),
                        set={k: v for k, v in changes.items() if v is not None},
                        remove=[k for k, v in changes.items() if v is None],
                        condition="attribute_exists(#pk)")
        try:
            self.table.update(update)
        except ConditionFailed:
            return None
        self.ranks.refresh(ref)
        return self.get_agent(ref)

    def create_agent(self, agent: Agent) -> bool:
        try:
            self.table.transact([
                self.table.update_action(counting_user(self.table, agent.login, agent.created_at,
                                                       self.max_agents, agent.expires_at)),
                self.table.put_action(agent_item(agent))])
        except ClientError as exc:
            raise_unless_agent_exists(exc, agent.login, self.max_agents)
            return False
        self.ranks.refresh(agent.ref)
        return True
