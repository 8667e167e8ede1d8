"""Authorized reuse as the store keeps it: a published capability card, the grants to callers,
the quota windows a call counts in and each caller's usage (`reuse/` makes and reads them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

EVERYONE = "*"
"""A grant to every signed-in account (each caller gets the grant's quota for itself)."""


@dataclass(frozen=True)
class PublishedCapability:
    login: str
    slug: str
    card: dict[str, Any]
    """A `CapabilityCard` as JSON (`model_dump(mode="json")`)."""
    secret: str
    """The key of the agent's signature header (`reuse/call_signature.py`); shown to the owner once."""
    published_at: str
    updated_at: str

    @property
    def endpoint(self) -> str | None:
        invocation = self.card.get("invocation") or {}
        return invocation.get("url") if invocation.get("mode") == "http" else None


@dataclass(frozen=True)
class InvocationGrant:
    login: str
    slug: str
    caller: str
    """A login, or `EVERYONE`."""
    calls_per_day: int
    calls_per_minute: int | None
    expires_at: str | None
    created_at: str

    def to_dict(self) -> dict[str, Any]:
        return {"caller": self.caller, "calls_per_day": self.calls_per_day,
                "calls_per_minute": self.calls_per_minute, "expires_at": self.expires_at,
                "created_at": self.created_at}


@dataclass(frozen=True)
class QuotaWindow:
    """One counter a call counts in: `bucket` names the window (`day:2026-12-03`), which ends
    at `until`; at most `limit` calls fit."""

    name: str
    bucket: str
    limit: int
    until: str


@dataclass(frozen=True)
class UsageRecord:
    """One call a login made through Bench (its side of the record; the agent's is a task)."""

    login: str
    at: str
    call_id: str
    """The id of the task recorded on the agent."""
    agent: str
    status: str
    """`success` or `failed`."""
    http_status: int
    """What Bench answered the caller."""
    duration_ms: float
    error: str | None = None
    expires_at: str | None = None
    """When the record goes (`reuse.invoke.usage_expiry`; None: kept for ever)."""
    caller_agent: str | None = None
    """The slug of the caller's agent whose key made the call; None for an owner key."""

    def to_dict(self) -> dict[str, Any]:
        return {"at": self.at, "call_id": self.call_id, "agent": self.agent,
                "status": self.status, "http_status": self.http_status,
                "duration_ms": self.duration_ms, "error": self.error,
                "expires_at": self.expires_at}
