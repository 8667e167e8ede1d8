"""DynamoDB items of authorized reuse (bench_core.reuse), in the agent's partition but for
usage, which lives under the caller. No index: every read is one item or one Query of a
partition. Item (pk, sk; `A` is `{login}#{slug}`):

- capability card:  AGENT#{A}, CAPABILITY                   card (JSON text), secret, times
- grant:            AGENT#{A}, IGRANT#{caller}              quota, expiry
- quota counter:    AGENT#{A}, QUOTA#{caller}#{bucket}      n (+ TTL: the window's end)
- usage:            USAGE#{login}, {at}#{call id}           agent, status, ... (+ TTL)

A temporary agent's (the /try sandbox's) card and grants carry its TTL, as its other items
do (`retention.py`); quota counters have their window's, never more than a day. A usage
record has its own expiry (`UsageRecord.expires_at`) and is hidden from it on, since TTL
deletion can lag.

A quota take is one conditional `ADD` per window (`attribute_not_exists(n) OR n < :limit`):
one UpdateItem for one window, one transaction for several, so a call refused by one window
counts in none.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from ...domain.errors import TooManyRequests
from ...domain.field_limits import dumps
from ...domain.models import AgentRef, iso
from ...domain.reuse_records import InvocationGrant, PublishedCapability, QuotaWindow, UsageRecord
from .client import MAX_ATTEMPTS, ConditionFailed, Table, cancellation_reasons, pause
from .codec.keys import META, AgentKeys, expiring, expiry, temporary
from .codec.values import Update, to_item, ttl

CAPABILITY = "CAPABILITY"
GRANT = "IGRANT#"
QUOTA = "QUOTA#"
_GRANT_FIELDS = ("calls_per_day", "calls_per_minute", "expires_at", "created_at")
_USAGE_FIELDS = ("agent", "status", "http_status", "duration_ms", "error", "caller_agent")


def _grant_from_item(item: dict[str, Any]) -> InvocationGrant:
    minute = item.get("calls_per_minute")
    return InvocationGrant(login=item["login"], slug=item["slug"], caller=item["caller"],
                           calls_per_day=int(item["calls_per_day"]),
                           calls_per_minute=None if minute is None else int(minute),
                           expires_at=item.get("expires_at"), created_at=item["created_at"])


def _quota_update(agent: AgentKeys, caller: str, window: QuotaWindow) -> Update:
    return Update(agent.key(f"{QUOTA}{caller}#{window.bucket}"), add={"n": 1},
                  set_if_absent=ttl(window.until),
                  condition="attribute_not_exists(#n) OR #n < :limit",
                  condition_values={":limit": window.limit})


class DynamoReuse:
    """Capability cards, invocation grants, quota and usage, on `table`."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def _agent_keys(self, ref: AgentRef) -> AgentKeys:
        """`ref`'s keys with its expiry if it is a temporary agent (one read)."""
        agent = AgentKeys(ref.login, ref.slug)
        return temporary(agent, self.table.get(agent.key(META)))

    # ---- capability cards --------------------------------------------------------------------

    def put_capability(self, ref: AgentRef, card: dict[str, Any], when: str, secret: str
                       ) -> bool:
        agent = self._agent_keys(ref)
        item = self.table.update(expiring(Update(
            agent.key(CAPABILITY), set={"card": dumps(card), "updated_at": when,
                                        "login": ref.login, "slug": ref.slug},
            set_if_absent={"secret": secret, "published_at": when}), agent), returns="ALL_NEW")
        return bool(item["secret"] == secret)

    def get_capability(self, ref: AgentRef) -> PublishedCapability | None:
        item = self.table.get(AgentKeys(ref.login, ref.slug).key(CAPABILITY))
        if item is None:
            return None
        return PublishedCapability(login=item["login"], slug=item["slug"],
                                   card=json.loads(item["card"]), secret=item["secret"],
                                   published_at=item["published_at"],
                                   updated_at=item["updated_at"])

    def rotate_invocation_secret(self, ref: AgentRef, secret: str, when: str) -> bool:
        try:
            self.table.update(Update(AgentKeys(ref.login, ref.slug).key(CAPABILITY),
                                     set={"secret": secret, "updated_at": when},
                                     condition="attribute_exists(#pk)"))
        except ConditionFailed:
            return False
        return True

    # ---- grants ------------------------------------------------------------------------------

    def put_invocation_grant(self, grant: InvocationGrant) -> None:
        agent = self._agent_keys(AgentRef(grant.login, grant.slug))
        attrs = {"login": grant.login, "slug": grant.slug, "caller": grant.caller,
                 **{name: getattr(grant, name) for name in _GRANT_FIELDS}}
        self.table.put({**agent.key(GRANT + grant.caller),
                        **to_item({k: v for k, v in attrs.items() if v is not None}),
                        **to_item(expiry(agent))})

    def get_invocation_grant(self, ref: AgentRef, caller: str) -> InvocationGrant | None:
        item = self.table.get(AgentKeys(ref.login, ref.slug).key(GRANT + caller))
        return _grant_from_item(item) if item else None

    def invocation_grants(self, ref: AgentRef) -> list[InvocationGrant]:
        items = self.table.query(AgentKeys(ref.login, ref.slug).pk, "begins_with(#sk, :grant)",
                                 grant=GRANT)
        return [_grant_from_item(item) for item in items]

    def delete_invocation_grant(self, ref: AgentRef, caller: str) -> bool:
        return self.table.delete(AgentKeys(ref.login, ref.slug).key(GRANT + caller))

    # ---- quota -------------------------------------------------------------------------------

    def take_invocation_quota(self, ref: AgentRef, caller: str,
                              windows: list[QuotaWindow]) -> QuotaWindow | None:
        agent = AgentKeys(ref.login, ref.slug)
        updates = [_quota_update(agent, caller, w).params(self.table.name) for w in windows]
        for attempt in range(MAX_ATTEMPTS):
            try:
                if len(updates) == 1:
                    self.table.client.update_item(**updates[0])
                else:
                    self.table.client.transact_write_items(
                        TransactItems=[{"Update": u} for u in updates])
                return None
            except self.table.client.exceptions.ConditionalCheckFailedException:
                return windows[0]
            except self.table.client.exceptions.TransactionCanceledException as exc:
                reasons = cancellation_reasons(exc)
                if "ConditionalCheckFailed" in reasons:
                    return windows[reasons.index("ConditionalCheckFailed")]
            except self.table.client.exceptions.TransactionConflictException:
                pass  # a concurrent take's transaction holds the counter: try again
            pause(attempt)
        raise TooManyRequests("too many concurrent calls to this agent; try again",
                              headers={"Retry-After": "1"})

    # ---- usage -------------------------------------------------------------------------------

    def record_usage(self, usage: UsageRecord) -> None:
        attrs = {name: getattr(usage, name) for name in ("login", "at", "call_id",
                                                           *_USAGE_FIELDS)}
        self.table.put(to_item({
            "pk": f"USAGE#{usage.login}", "sk": f"{usage.at}#{usage.call_id}",
            **{k: v for k, v in attrs.items() if v is not None},
            **(ttl(usage.expires_at) if usage.expires_at else {})}))

    def list_usage(self, login: str, limit: int, caller_agent: str | None = None
                   ) -> list[UsageRecord]:
        """One agent's calls (`caller_agent`) are picked out of the login's as the pages come:
        they are few, and kept only for the retention period."""
        now = iso(self.table.clock.now())
        live = (item for item in self.table.query(f"USAGE#{login}", forward=False, page=limit)
                if (item.get("until") is None or item["until"] > now)
                and (caller_agent is None or item.get("caller_agent") == caller_agent))
        return [UsageRecord(login=item["login"], at=item["at"], call_id=item["call_id"],
                            agent=item["agent"], status=item["status"],
                            http_status=int(item["http_status"]),
                            duration_ms=float(item["duration_ms"]), error=item.get("error"),
                            expires_at=item.get("until"), caller_agent=item.get("caller_agent"))
                for item in itertools.islice(live, limit)]
