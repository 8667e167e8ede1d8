"""Telling an owner that an alert opened or resolved: a signed webhook and a Slack message,
each through the outbound client reuse uses (`reuse/outbound.py`: public https addresses
only, every hop checked, so an owner's URL cannot aim Bench at its own network).

**The webhook** is a POST of JSON (`webhook_body`) with these headers:
- `X-Bench-Event`: `alert.opened` or `alert.resolved`;
- `X-Bench-Delivery`: `{alert id}.{event}`, the same for every retry of one message (a
  receiver drops a repeat by it);
- `X-Bench-Signature`: `t={unix seconds},v1={hex}`, where hex is HMAC-SHA256 under the
  agent's webhook secret of `{t}.` followed by the body's bytes. A receiver recomputes it over
  the raw body, compares in constant time and refuses a `t` more than five minutes old (a
  replay). The secret is the agent's own (`webhook_secret`: derived from the deployment's
  signing key, on AWS the SSM SecureString the stack creates, so nothing per agent is stored),
  shown to its owner on the dashboard.

**Slack**: an incoming webhook's documented message: `text` (the notification's fallback) and
`blocks` (a `header` of `plain_text`, a `section` of `mrkdwn`, a `context` of links), with
`&`, `<` and `>` escaped as Slack asks. The URL is the secret; nothing is signed.

Each target is tried up to `ATTEMPTS` times, waiting `BACKOFF_S` doubling between tries, on a
network failure, a timeout, 429 or 5xx; another answer (or a refused URL) ends it. Every try
is kept (`AlertStore.record_delivery`) with its answer and when the next is due.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from ..clock import Clock
from ..domain.alerts import Alert, AlertSettings, Delivery, Target, links, says, show
from ..domain.models import AgentRef, iso
from ..ports.services import WithAlerts
from ..reuse import outbound
from ..settings import ReuseSettings
from .monitor import Change

ATTEMPTS = 4
BACKOFF_S = 1.0
"""The first wait between tries; each next one doubles (1, 2, 4 s: done within a sweep)."""
SIGNATURE_HEADER = "X-Bench-Signature"
RETRIED = frozenset({408, 425, 429, 500, 502, 503, 504})
SECTION_CHARS = 3000
"""Slack's limit on a section's text."""


def longest_s(outbound_settings: ReuseSettings) -> float:
    """The longest one change's delivery can take: every try of both targets timing out, and
    the waits between them (what a caller with a deadline keeps in hand)."""
    waits = sum(BACKOFF_S * 2.0 ** n for n in range(ATTEMPTS - 1))
    return 2 * (ATTEMPTS * outbound_settings.timeout_s + waits)


def webhook_secret(signing_key: bytes, ref: AgentRef) -> str:
    """The agent's webhook secret: its own, and the same on every process of a deployment."""
    return hmac.new(signing_key, f"bench-alert-webhook:{ref.login}/{ref.slug}".encode(),
                    hashlib.sha256).hexdigest()


def signature(secret: str, timestamp: int, body: bytes) -> str:
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={digest.hexdigest()}"


def _alert_fields(alert: Alert) -> dict[str, Any]:
    return alert.model_dump(mode="json") | {"title": alert.title, "change": alert.change,
                                            "says": says(alert)}


def webhook_body(change: Change, ref: AgentRef, base_url: str) -> dict[str, Any]:
    return {"event": f"alert.{change.event}", "agent": f"{ref.login}/{ref.slug}",
            "alert": _alert_fields(change.alert),
            "links": links(change.alert, base_url, ref.login, ref.slug)}


def _escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_body(change: Change, ref: AgentRef, base_url: str) -> dict[str, Any]:
    alert = change.alert
    agent = f"{ref.login}/{ref.slug}"
    verb = "worse" if change.event == "opened" else "recovered"
    if change.event == "resolved" and alert.resolved_by != "recovery":
        verb = "closed" if alert.resolved_by == "owner" else "superseded by a newer version"
    head = f"{agent}: {alert.title} {verb}"
    detail = (says(alert) if change.event == "opened"
              else f"{alert.title} is {show(alert.metric, alert.current)} again "
                   f"(it was opened {alert.opened_at}).")
    where = " · ".join(f"<{_escaped(url)}|{name.replace('_', ' ')}>"
                       for name, url in links(alert, base_url, ref.login, ref.slug).items())
    return {"text": _escaped(f"{head}: {detail}"),
            "blocks": [
                {"type": "header", "text": {"type": "plain_text", "text": head[:150]}},
                {"type": "section",
                 "text": {"type": "mrkdwn", "text": _escaped(detail)[:SECTION_CHARS]}},
                {"type": "context", "elements": [{"type": "mrkdwn", "text": where}]}]}


def deliver(store: WithAlerts, ref: AgentRef, changes: list[Change], *,
            settings: AlertSettings, outbound_settings: ReuseSettings, secret: str,
            base_url: str, clock: Clock,
            sleep: Callable[[float], None] = time.sleep, backoff_s: float = BACKOFF_S
            ) -> list[Delivery]:
    """Send each change to the agent's webhook and Slack (whichever are set), retrying as the
    module says; every try kept in the store and returned."""
    kept: list[Delivery] = []
    for change in changes:
        targets: list[tuple[Target, str, bytes]] = []
        if settings.webhook_url:
            body = json.dumps(webhook_body(change, ref, base_url)).encode()
            targets.append(("webhook", settings.webhook_url, body))
        if settings.slack_webhook_url:
            body = json.dumps(slack_body(change, ref, base_url)).encode()
            targets.append(("slack", settings.slack_webhook_url, body))
        for target, url, body in targets:
            kept += _send(store, ref, change, target, url, body, outbound_settings,
                          secret if target == "webhook" else None, clock, sleep, backoff_s)
    return kept


def _send(store: WithAlerts, ref: AgentRef, change: Change, target: Target, url: str, body: bytes,
          outbound_settings: ReuseSettings, secret: str | None, clock: Clock,
          sleep: Callable[[float], None], backoff_s: float) -> list[Delivery]:
    headers = {"Content-Type": "application/json", "User-Agent": "Bench-Alerts/1",
               "X-Bench-Event": f"alert.{change.event}",
               "X-Bench-Delivery": f"{change.alert.alert_id}.{change.event}"}
    tries = []
    for attempt in range(1, ATTEMPTS + 1):
        signed = headers
        if secret is not None:
            # the receiver checks `t` against its own clock, so it is the real time
            signed = {**headers, SIGNATURE_HEADER: signature(secret, int(time.time()), body)}
        at = clock.now()
        status, error, again = _post(url, body, signed, outbound_settings)
        wait = backoff_s * 2 ** (attempt - 1)
        retry = again and attempt < ATTEMPTS
        delivery = Delivery(
            alert_id=change.alert.alert_id, attempt=attempt, event=change.event,
            target=target, url_host=urlsplit(url).hostname or "", at=iso(at), status=status,
            error=error, delivered=status is not None and 200 <= status < 300,
            next_try_at=iso(at + timedelta(seconds=wait)) if retry else None)
        store.alerts.record_delivery(ref, delivery)
        tries.append(delivery)
        if not retry:
            break
        sleep(wait)
    return tries


def _post(url: str, body: bytes, headers: dict[str, str], settings: ReuseSettings
          ) -> tuple[int | None, str | None, bool]:
    """The answer's status, an error, and whether another try may help."""
    try:
        answer = outbound.post(url, body, headers, settings)
    except outbound.RefusedEndpoint as exc:
        return None, f"refused: {exc}", False
    except (outbound.OutboundTimeout, outbound.OutboundFailed) as exc:
        return None, str(exc), True
    if 200 <= answer.status < 300:
        return answer.status, None, False
    return answer.status, f"HTTP {answer.status}", answer.status in RETRIED
