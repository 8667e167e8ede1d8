"""The one place that decides what user data leaves the process.

Every event, whether made by this SDK or pushed raw by an adapter, passes through
:meth:`Scrubber.scrub` on the sender thread just before it is encoded, so no field can slip past
``capture_input``, ``capture_output`` or ``redact`` (masking that misses a field is a known
failure of other tracing SDKs).
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Optional

Redactor = Callable[[Any], Any]
"""``redact(value) -> value``: called with each user-supplied value before it is sent."""

REDACTION_FAILED = "[redaction failed]"

logger = logging.getLogger("bench")


class Scrubber:
    """Applies the capture switches and the ``redact`` hook to one event.

    User values are: task inputs; task outputs and error text; each log value; custom event
    data; task metadata; cost details. Structure the SDK adds (ids, labels, amounts) is kept.
    Events are never mutated, because a cost breakdown can be shared with a parent task.
    """

    def __init__(self, *, capture_input: bool, capture_output: bool, redact: Optional[Redactor]):
        self._capture_input = capture_input
        self._capture_output = capture_output
        self._redact = redact
        self._redact_failed = False

    @property
    def is_identity(self) -> bool:
        """True when nothing would change, so the sender can skip scrubbing."""
        return self._capture_input and self._capture_output and self._redact is None

    def scrub(self, event: dict[str, Any]) -> dict[str, Any]:
        out = dict(event)
        if "input" in out:
            out["input"] = self._value(out["input"]) if self._capture_input else None
        if "output" in out:
            out["output"] = self._value(out["output"]) if self._capture_output else None
        data = out.get("data")
        if data is not None:
            out["data"] = self._data(out.get("kind"), data)
        breakdown = out.get("cost_breakdown")
        if isinstance(breakdown, list):
            out["cost_breakdown"] = [self._cost_entry(entry) for entry in breakdown]
        return out

    def _value(self, value: Any) -> Any:
        if self._redact is None or value is None:
            return value
        try:
            return self._redact(value)
        except Exception as exc:  # noqa: BLE001 - fail closed: send a marker, never the raw value
            if not self._redact_failed:
                self._redact_failed = True
                logger.warning("bench: redact hook raised %s; sending %r instead", exc, REDACTION_FAILED)
            return REDACTION_FAILED

    def _details(self, details: Any) -> dict[str, Any]:
        cleaned = self._value(details)
        return cleaned if isinstance(cleaned, dict) else {}

    def _data(self, kind: Any, data: Any) -> Any:
        if kind == "task.log" and isinstance(data, dict):
            out = dict(data)
            if "value" in out:
                out["value"] = self._value(out["value"])
            if "cost_details" in out:
                out["cost_details"] = self._details(out["cost_details"])
            return out
        return self._value(data)

    def _cost_entry(self, entry: Any) -> Any:
        if not isinstance(entry, dict) or "amount_usd" not in entry:
            return entry
        details = {k: v for k, v in entry.items() if k != "amount_usd"}
        return {**self._details(details), "amount_usd": entry["amount_usd"]}
