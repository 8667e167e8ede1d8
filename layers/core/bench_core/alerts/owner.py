"""What an agent's owner does with its alerts: the list (the dashboard page and the JSON API),
acknowledging or closing an open alert, and where alerts go (the webhook, Slack, each metric's
rule). Only the owner: every caller hands an agent it has checked is the caller's own
(`accounts.agents.own_agent`, `domain.privacy.owner_only`)."""

from __future__ import annotations

from typing import Any, Protocol

from ..accounts.secrets import Secrets
from ..domain.alerts import ALERTS_SHOWN, Alert, AlertSettings, links, says
from ..domain.errors import Invalid, NotFound
from ..domain.models import Agent, AgentRef
from ..ports.services import WithAlerts
from ..settings import Settings
from .delivery import SIGNATURE_HEADER, webhook_secret


class OwnerPorts(Protocol):
    @property
    def store(self) -> WithAlerts: ...

    @property
    def settings(self) -> Settings: ...


def alert_view(alert: Alert, agent: Agent, base_url: str) -> dict[str, Any]:
    return alert.model_dump(mode="json") | {
        "title": alert.title, "change": alert.change, "says": says(alert),
        "links": links(alert, base_url, agent.login, agent.slug)}


def owner_alerts(ports: OwnerPorts, agent: Agent, base_url: str) -> dict[str, Any]:
    """`GET /api/agents/{login}/{slug}/alerts` and the dashboard's page: the alerts, unresolved
    first then newest first, where they go, and the webhook's secret and header."""
    settings = ports.store.alerts.alert_settings(agent.ref)
    return {"alerts": [alert_view(a, agent, base_url)
                       for a in ports.store.alerts.agent_alerts(agent.ref, limit=ALERTS_SHOWN)],
            "settings": settings.model_dump(mode="json"),
            "webhook": {"header": SIGNATURE_HEADER, "secret": webhook_secret(
                Secrets(ports.settings).session_key(), agent.ref)}}


def set_state(store: WithAlerts, ref: AgentRef, key: str, action: str, now: str) -> Alert:
    """Acknowledge or close (`action`: "acknowledge" or "resolve") the open alert of `key`;
    404 when there is none."""
    if action == "acknowledge":
        done = store.alerts.acknowledge_alert(ref, key, now)
    elif action == "resolve":
        done = store.alerts.resolve_alert(ref, key, now, "owner")
    else:
        raise Invalid(f"no such action on an alert: {action}")
    if done is None:
        raise NotFound(f"no open alert {key}")
    return done


def save_settings(store: WithAlerts, ref: AgentRef, settings: AlertSettings) -> AlertSettings:
    """Keep where the agent's alerts go; each URL must be an https:// one (the delivery refuses
    private addresses on every try, where a name may resolve differently)."""
    for url in (settings.webhook_url, settings.slack_webhook_url):
        if url is not None and not url.startswith("https://"):
            raise Invalid("an alert URL must start with https://")
    store.alerts.set_alert_settings(ref, settings)
    return settings
