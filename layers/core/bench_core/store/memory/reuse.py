"""Authorized reuse in memory (bench_core.reuse): capability cards, invocation grants, quota
counters and callers' usage. A quota take holds the store's lock, so concurrent calls queue
and can never overrun a limit."""

from __future__ import annotations

import dataclasses
from typing import Any

from ...domain.models import AgentRef
from ...domain.reuse_records import InvocationGrant, PublishedCapability, QuotaWindow, UsageRecord
from .state import Concern, Counter, copied


class MemoryReuse(Concern):
    # ---- capability cards --------------------------------------------------------------------

    def put_capability(self, ref: AgentRef, card: dict[str, Any], when: str, secret: str
                       ) -> bool:
        with self.memory.locked() as tables:
            before = tables.capabilities.get(ref)
            published = (PublishedCapability(ref.login, ref.slug, copied(card), secret, when, when)
                         if before is None else
                         dataclasses.replace(before, card=copied(card), updated_at=when))
            tables.capabilities[ref] = published
            return published.secret == secret

    def get_capability(self, ref: AgentRef) -> PublishedCapability | None:
        with self.memory.locked() as tables:
            return copied(tables.capabilities.get(ref))

    def rotate_invocation_secret(self, ref: AgentRef, secret: str, when: str) -> bool:
        with self.memory.locked() as tables:
            before = tables.capabilities.get(ref)
            if before is None:
                return False
            tables.capabilities[ref] = dataclasses.replace(before, secret=secret,
                                                           updated_at=when)
            return True

    # ---- grants (frozen records of plain values: kept and handed out as they are) ------------

    def put_invocation_grant(self, grant: InvocationGrant) -> None:
        with self.memory.locked() as tables:
            tables.invocation_grants[(AgentRef(grant.login, grant.slug), grant.caller)] = grant

    def get_invocation_grant(self, ref: AgentRef, caller: str) -> InvocationGrant | None:
        with self.memory.locked() as tables:
            return tables.invocation_grants.get((ref, caller))

    def invocation_grants(self, ref: AgentRef) -> list[InvocationGrant]:
        with self.memory.locked() as tables:
            return sorted((g for (of, _), g in tables.invocation_grants.items() if of == ref),
                          key=lambda g: g.caller)

    def delete_invocation_grant(self, ref: AgentRef, caller: str) -> bool:
        with self.memory.locked() as tables:
            return tables.invocation_grants.pop((ref, caller), None) is not None

    # ---- quota -------------------------------------------------------------------------------

    def take_invocation_quota(self, ref: AgentRef, caller: str,
                              windows: list[QuotaWindow]) -> QuotaWindow | None:
        now = self.rules.now()
        with self.memory.locked() as tables:
            for key in [k for k, c in tables.quota.items() if c.expires_at <= now]:
                del tables.quota[key]
            for window in windows:
                counter = tables.quota.get((ref, caller, window.bucket))
                if counter is not None and counter.count >= window.limit:
                    return window
            for window in windows:
                tables.quota.setdefault((ref, caller, window.bucket),
                                        Counter(0, window.until)).count += 1
        return None

    # ---- usage -------------------------------------------------------------------------------

    def record_usage(self, usage: UsageRecord) -> None:
        with self.memory.locked() as tables:
            tables.usage[(usage.login, usage.at, usage.call_id)] = usage

    def list_usage(self, login: str, limit: int, caller_agent: str | None = None
                   ) -> list[UsageRecord]:
        """Expired records are left out before the purge deletes them."""
        now = self.rules.now()
        with self.memory.locked() as tables:
            kept = [u for (of, _, _), u in tables.usage.items() if of == login
                    and (caller_agent is None or u.caller_agent == caller_agent)
                    and (u.expires_at is None or u.expires_at > now)]
        return sorted(kept, key=lambda u: (u.at, u.call_id), reverse=True)[:limit]
