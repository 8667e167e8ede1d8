"""DynamoDB items of alerts (`bench_core.domain.alerts`) and their delivery attempts, in a
partition of the agent's own (`A` is `{login}#{slug}`):

- an unresolved alert:  ALERTS#{A}, OPEN#{key}                          body (JSON text)
- a resolved alert:     ALERTS#{A}, DONE#{opened_at}#{alert id}         body
- a delivery attempt:   ALERTS#{A}, DLV#{alert id}#{event}#{target}#{attempt:04}   body
- the owner's settings: ALERTS#{A}, SETTINGS                             body
- the monitors' look:   ALERTS#{A}, LOOK                                 hour (conditional)

One unresolved alert per key is the layout itself: its sort key is the key, so a second
monitor raising it finds the first (a conditional PutItem that fails) and updates it.
Resolving moves the item from OPEN# to DONE# in one transaction (delete, conditional on the
open item being there, and put), so an alert is never both or neither. Reads are one Query of
the partition (open ones first, then the resolved newest first). Alerts are few (at most one
open per metric and version) and written by the monitors only, off the ingest path.
"""

from __future__ import annotations

from typing import Any

from ...domain.alerts import Alert, AlertSettings, Delivery, newest_first, updated
from ...domain.models import AgentRef
from .client import Table
from .codec.values import to_item

OPEN, DONE, DELIVERY, SETTINGS, LOOK = "OPEN#", "DONE#", "DLV#", "SETTINGS", "LOOK"
MAX_ATTEMPTS = 3
"""Tries of a raise or a change that lost a race with another (each re-reads the item)."""


def _pk(ref: AgentRef) -> str:
    return f"ALERTS#{ref.login}#{ref.slug}"


def _item(ref: AgentRef, sk: str, body: str) -> dict[str, Any]:
    return to_item({"pk": _pk(ref), "sk": sk, "body": body})


def _done_sk(alert: Alert) -> str:
    return f"{DONE}{alert.opened_at}#{alert.alert_id}"


class DynamoAlerts:
    """An agent's alerts, on `table`."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def _open(self, ref: AgentRef, key: str) -> Alert | None:
        item = self.table.get(to_item({"pk": _pk(ref), "sk": OPEN + key}))
        return None if item is None else Alert.model_validate_json(item["body"])

    def raise_alert(self, ref: AgentRef, alert: Alert) -> tuple[Alert, bool]:
        for _ in range(MAX_ATTEMPTS):
            if self.table.put(_item(ref, OPEN + alert.key, alert.model_dump_json()),
                              "attribute_not_exists(pk)"):
                return alert, True
            kept = self._open(ref, alert.key)
            if kept is None:
                continue  # resolved meanwhile: open it afresh
            fresh = updated(kept, alert)
            if self.table.put(_item(ref, OPEN + alert.key, fresh.model_dump_json()),
                              "attribute_exists(pk)"):
                return fresh, False
        raise RuntimeError(f"alert {alert.key} kept changing under {MAX_ATTEMPTS} tries")

    def acknowledge_alert(self, ref: AgentRef, key: str, at: str) -> Alert | None:
        kept = self._open(ref, key)
        if kept is None:
            return None
        changed = kept.model_copy(update={"state": "acknowledged", "acknowledged_at": at})
        if not self.table.put(_item(ref, OPEN + key, changed.model_dump_json()),
                              "attribute_exists(pk)"):
            return None
        return changed

    def resolve_alert(self, ref: AgentRef, key: str, at: str, by: str) -> Alert | None:
        kept = self._open(ref, key)
        if kept is None:
            return None
        done = kept.model_copy(update={"state": "resolved", "resolved_at": at,
                                       "resolved_by": by})
        self.table.transact([
            {"Delete": {"TableName": self.table.name,
                        "Key": to_item({"pk": _pk(ref), "sk": OPEN + key}),
                        "ConditionExpression": "attribute_exists(pk)"}},
            self.table.put_action(_item(ref, _done_sk(done), done.model_dump_json()))])
        return done

    def claim_look(self, ref: AgentRef, hour: str) -> bool:
        seen = self.table.get(to_item({"pk": _pk(ref), "sk": LOOK}), consistent=False)
        if seen is not None and seen["hour"] >= hour:
            return False  # half a read unit rather than a failed write's whole one
        return self.table.put(to_item({"pk": _pk(ref), "sk": LOOK, "hour": hour}),
                              "attribute_not_exists(pk) OR #h < :hour", values={":hour": hour},
                              names={"#h": "hour"})

    def agent_alerts(self, ref: AgentRef, *, unresolved: bool = False,
                     limit: int = 50) -> list[Alert]:
        open_ = [Alert.model_validate_json(item["body"]) for item in self.table.query(
            _pk(ref), "begins_with(#sk, :prefix)", prefix=OPEN)]
        found = newest_first(open_)[:limit]
        if not unresolved and len(found) < limit:
            rest = limit - len(found)
            items = self.table.query(_pk(ref), "begins_with(#sk, :prefix)", forward=False,
                                     page=rest, prefix=DONE)
            found += [Alert.model_validate_json(item["body"])
                      for _, item in zip(range(rest), items, strict=False)]
        return found

    def record_delivery(self, ref: AgentRef, delivery: Delivery) -> None:
        sk = (f"{DELIVERY}{delivery.alert_id}#{delivery.event}#{delivery.target}"
              f"#{delivery.attempt:04d}")
        self.table.put(_item(ref, sk, delivery.model_dump_json()))

    def alert_deliveries(self, ref: AgentRef, alert_id: str, limit: int = 100) -> list[Delivery]:
        items = self.table.query(_pk(ref), "begins_with(#sk, :prefix)", page=limit,
                                 prefix=f"{DELIVERY}{alert_id}#")
        kept = [Delivery.model_validate_json(item["body"])
                for _, item in zip(range(limit), items, strict=False)]
        return sorted(kept, key=lambda d: (d.at, d.attempt))

    def set_alert_settings(self, ref: AgentRef, settings: AlertSettings) -> None:
        self.table.put(_item(ref, SETTINGS, settings.model_dump_json()))

    def alert_settings(self, ref: AgentRef) -> AlertSettings:
        item = self.table.get(to_item({"pk": _pk(ref), "sk": SETTINGS}))
        return AlertSettings() if item is None else AlertSettings.model_validate_json(item["body"])
