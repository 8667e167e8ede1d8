"""Who may call a published agent, and how often: deny by default.

A caller needs a grant naming its login, or a grant to `*` (every signed-in account; sandbox
keys from /try are not accounts and never match it). A grant for the login wins over `*`, also
when it has expired. Each caller has its own counters: a call counts in the day's window (UTC)
and, if the grant says so, in the minute's. The owner calls their own agent freely.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from ..domain.errors import Forbidden, TooManyRequests
from ..domain.models import Agent, AgentRef, KeyRecord, iso
from ..domain.reuse_records import EVERYONE, InvocationGrant, QuotaWindow, UsageRecord
from ..ports.services import WithReuse
from .models import GrantRequest


def new_grant(agent: Agent, request: GrantRequest, now: datetime) -> InvocationGrant:
    return InvocationGrant(login=agent.login, slug=agent.slug, caller=request.caller,
                           calls_per_day=request.calls_per_day,
                           calls_per_minute=request.calls_per_minute,
                           expires_at=iso(request.expires_at) if request.expires_at else None,
                           created_at=iso(now))


def put_grant(store: WithReuse, agent: Agent, request: GrantRequest, now: datetime) -> InvocationGrant:
    """Grant (or replace the grant of) `request.caller` calls to `agent`."""
    grant = new_grant(agent, request, now)
    store.reuse.put_invocation_grant(grant)
    return grant


def grants_of(store: WithReuse, ref: AgentRef) -> list[InvocationGrant]:
    return store.reuse.invocation_grants(ref)


def revoke_grant(store: WithReuse, ref: AgentRef, caller: str) -> bool:
    """Remove the grant to `caller`; False if there was none."""
    return store.reuse.delete_invocation_grant(ref, caller)


def usage_of(store: WithReuse, key: KeyRecord, limit: int) -> list[UsageRecord]:
    """The calls through Bench `key` may see, newest first: an owner key its account's, an
    agent key those made with its agent's keys (it sees nothing else of its account)."""
    return store.reuse.list_usage(key.login, limit, key.agent_slug)


def grant_for(store: WithReuse, agent: Agent, key: KeyRecord, now: datetime) -> InvocationGrant | None:
    """The grant `key`'s login calls `agent` under (None: the owner, who needs none); 403 with
    the reason otherwise."""
    if key.login == agent.login:
        return None
    grant = store.reuse.get_invocation_grant(agent.ref, key.login)
    if grant is None and key.expires_at is None:
        grant = store.reuse.get_invocation_grant(agent.ref, EVERYONE)
    if grant is None:
        raise Forbidden(f"@{agent.login} has not granted @{key.login} calls to {agent.slug}; "
                        "ask the owner for a grant",
                        [{"loc": ["grant"], "msg": "no grant for this caller"}])
    if grant.expires_at is not None and grant.expires_at <= iso(now):
        raise Forbidden(f"the grant to call {agent.login}/{agent.slug} expired at "
                        f"{grant.expires_at}", [{"loc": ["grant"], "msg": "grant expired"}])
    return grant


def quota_windows(grant: InvocationGrant, now: datetime) -> list[QuotaWindow]:
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    windows = [QuotaWindow("day", f"day:{day:%Y-%m-%d}", grant.calls_per_day,
                           iso(day + timedelta(days=1)))]
    if grant.calls_per_minute is not None:
        minute = now.replace(second=0, microsecond=0)
        windows.append(QuotaWindow("minute", f"minute:{minute:%Y-%m-%dT%H:%M}",
                                   grant.calls_per_minute, iso(minute + timedelta(minutes=1))))
    return windows


def take_quota(store: WithReuse, agent: Agent, caller: str, grant: InvocationGrant,
               now: datetime) -> None:
    """Count the call, or 429 with `Retry-After` (whole seconds until the full window ends)."""
    full = store.reuse.take_invocation_quota(agent.ref, caller, quota_windows(grant, now))
    if full is None:
        return
    ends = datetime.fromisoformat(full.until.replace("Z", "+00:00"))
    wait = max(1, int((ends - now).total_seconds() + 0.999))
    raise TooManyRequests(f"quota used up: {full.limit} calls per {full.name} to "
                          f"{agent.login}/{agent.slug}; try again in {wait} s",
                          [{"loc": ["quota", full.name], "msg": f"at most {full.limit} calls"}],
                          headers={"Retry-After": str(wait)})
