"""One look at an agent's monitors and the news delivered: what the runners call (the local
worker after an agent's evals, the eval function on AWS after each agent's round). Never
raises: an alert that cannot be raised or told is logged, and the next look tries again (a
resolution or an opening is kept in the store before it is told)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from ..accounts.secrets import Secrets
from ..clock import Clock
from ..domain.models import AgentRef, iso
from ..log import logger
from ..settings import Settings
from .delivery import deliver, webhook_secret
from .monitor import Change, MonitorConcerns, look


class AlertPorts(Protocol):
    """What a look needs: the store, the settings (the outbound client's, the public URL, the
    signing key's source) and the clock."""

    @property
    def store(self) -> MonitorConcerns: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def clock(self) -> Clock: ...


def watch_agent(ports: AlertPorts, ref: AgentRef, *,
                sleep: Callable[[float], None] = time.sleep) -> list[Change]:
    """Look at the agent's monitors (once an hour: `monitor.look`) and tell its owner's webhook
    and Slack of each alert that opened or resolved; the changes."""
    try:
        changes = look(ports.store, ref, iso(ports.clock.now()))
        if not changes:
            return changes
        settings = ports.store.alerts.alert_settings(ref)
        if settings.webhook_url or settings.slack_webhook_url:
            secret = webhook_secret(Secrets(ports.settings).session_key(), ref)
            deliver(ports.store, ref, changes, settings=settings,
                    outbound_settings=ports.settings.reuse, secret=secret,
                    base_url=(ports.settings.public_url or "").rstrip("/"), clock=ports.clock,
                    sleep=sleep)
        return changes
    except Exception:  # a monitor never takes down the work it follows
        logger.exception("the regression monitors failed", extra={"agent": ref.path})
        return []
