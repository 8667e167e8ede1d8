"""Publishing an agent's capability card, and what a viewer may see of one.

A card is visible wherever its agent is (`privacy.visible_agent`): public agents' cards to
everyone, private agents' only to their owner. Only the owner sees the endpoint URL; others
call through Bench. The invocation secret is returned once: on first publish and on rotation.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..domain.errors import Invalid, NotFound, PayloadTooLarge
from ..domain.field_limits import dumps
from ..domain.models import Agent, iso
from ..domain.privacy import ANONYMOUS, Viewer, shows_invocation_url, visible_agent
from ..domain.reuse_records import PublishedCapability
from ..ports.services import WithReuse
from ..settings import ReuseSettings
from . import call_signature, outbound
from .models import CapabilityCard

SECRET_FIELD = "invocation_secret"
MAX_CARD_BYTES = 64 * 1024
"""A card is a page of text; this bounds what every profile view reads back."""


def publish(store: WithReuse, settings: ReuseSettings, agent: Agent, card: CapabilityCard,
            now: datetime) -> dict[str, Any]:
    """Store the card if its endpoint may be called (checked now, and again on every call)."""
    if card.invocation.url is not None:
        try:
            outbound.check(str(card.invocation.url), settings)
        except outbound.RefusedEndpoint as exc:
            raise Invalid(f"invocation.url is refused: {exc}",
                          [{"loc": ["body", "invocation", "url"], "msg": str(exc)}]) from exc
    stored = card.model_dump(mode="json")
    if len(dumps(stored)) > MAX_CARD_BYTES:
        raise PayloadTooLarge(f"the capability card is over {MAX_CARD_BYTES} bytes",
                              [{"loc": ["body", "capability"], "msg": "too large"}])
    secret = call_signature.new_secret()
    first = store.reuse.put_capability(agent.ref, stored, iso(now), secret)
    view = owner_view(store, agent)
    return {**view, SECRET_FIELD: secret} if first else view


def rotate_secret(store: WithReuse, agent: Agent, now: datetime) -> dict[str, Any]:
    secret = call_signature.new_secret()
    if not store.reuse.rotate_invocation_secret(agent.ref, secret, iso(now)):
        raise NotFound(f"{agent.login}/{agent.slug} has no published capability card")
    return {**owner_view(store, agent), SECRET_FIELD: secret}


def owner_view(store: WithReuse, agent: Agent) -> dict[str, Any]:
    view = capability_view(store, agent, Viewer(agent.login))
    assert view is not None, "just stored"
    return view


def capability_view(store: WithReuse, agent: Agent, viewer: Viewer) -> dict[str, Any] | None:
    """The card as `viewer` may see it; None if there is none or the agent is hidden from them."""
    try:
        visible_agent(agent, viewer)
    except NotFound:
        return None
    record = store.reuse.get_capability(agent.ref)
    return None if record is None else _shown(record, agent, viewer)


def public_capability(store: WithReuse, agent: Agent) -> dict[str, Any] | None:
    """The card anyone may see (MCP `get_agent`): None unless published and the agent public."""
    return capability_view(store, agent, ANONYMOUS)


def _shown(record: PublishedCapability, agent: Agent, viewer: Viewer) -> dict[str, Any]:
    invocation = dict(record.card.get("invocation") or {"mode": "disabled"})
    if not shows_invocation_url(agent, viewer):
        invocation.pop("url", None)
    return {"agent": f"{agent.login}/{agent.slug}", "capability": record.card["capability"],
            "invocation": invocation, "callable": record.endpoint is not None,
            "invoke_url": f"/api/agents/{agent.login}/{agent.slug}/invoke",
            "published_at": record.published_at, "updated_at": record.updated_at}
