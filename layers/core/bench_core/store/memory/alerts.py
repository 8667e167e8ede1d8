"""Alerts in memory (`bench_core.domain.alerts`): by agent and alert id, at most one
unresolved per key as SQLite's partial unique index keeps it, and delivery attempts by alert."""

from __future__ import annotations

from ...domain.alerts import Alert, AlertSettings, Delivery, newest_first, updated
from ...domain.models import AgentRef
from .state import Concern


class MemoryAlerts(Concern):
    def raise_alert(self, ref: AgentRef, alert: Alert) -> tuple[Alert, bool]:
        with self.memory.locked() as tables:
            kept = tables.alerts.setdefault(ref, {})
            open_ = next((a for a in kept.values() if a.key == alert.key
                          and a.state != "resolved"), None)
            if open_ is None:
                kept[alert.alert_id] = alert
                return alert, True
            kept[open_.alert_id] = updated(open_, alert)
            return kept[open_.alert_id], False

    def _change(self, ref: AgentRef, key: str, **fields: object) -> Alert | None:
        with self.memory.locked() as tables:
            kept = tables.alerts.get(ref, {})
            open_ = next((a for a in kept.values() if a.key == key and a.state != "resolved"),
                         None)
            if open_ is None:
                return None
            kept[open_.alert_id] = open_.model_copy(update=fields)
            return kept[open_.alert_id]

    def acknowledge_alert(self, ref: AgentRef, key: str, at: str) -> Alert | None:
        return self._change(ref, key, state="acknowledged", acknowledged_at=at)

    def resolve_alert(self, ref: AgentRef, key: str, at: str, by: str) -> Alert | None:
        return self._change(ref, key, state="resolved", resolved_at=at, resolved_by=by)

    def claim_look(self, ref: AgentRef, hour: str) -> bool:
        with self.memory.locked() as tables:
            if tables.alert_looks.get(ref, "") >= hour:
                return False
            tables.alert_looks[ref] = hour
            return True

    def agent_alerts(self, ref: AgentRef, *, unresolved: bool = False,
                     limit: int = 50) -> list[Alert]:
        with self.memory.locked() as tables:
            kept = list(tables.alerts.get(ref, {}).values())
        first = newest_first([a for a in kept if a.state != "resolved"])
        rest = [] if unresolved else newest_first([a for a in kept if a.state == "resolved"])
        return (first + rest)[:limit]

    def record_delivery(self, ref: AgentRef, delivery: Delivery) -> None:
        with self.memory.locked() as tables:
            kept = tables.deliveries.setdefault(ref, {}).setdefault(delivery.alert_id, {})
            kept[(delivery.event, delivery.target, delivery.attempt)] = delivery

    def alert_deliveries(self, ref: AgentRef, alert_id: str, limit: int = 100) -> list[Delivery]:
        with self.memory.locked() as tables:
            kept = tables.deliveries.get(ref, {}).get(alert_id, {})
            return sorted(kept.values(), key=lambda d: (d.at, d.attempt))[:limit]

    def set_alert_settings(self, ref: AgentRef, settings: AlertSettings) -> None:
        with self.memory.locked() as tables:
            tables.alert_settings[ref] = settings

    def alert_settings(self, ref: AgentRef) -> AlertSettings:
        with self.memory.locked() as tables:
            return tables.alert_settings.get(ref) or AlertSettings()
