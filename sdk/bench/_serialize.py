"""Turning captured values into wire JSON without ever raising.

Encoding happens on the sender thread, so the agent pays nothing for it. Anything JSON cannot
represent becomes a capped ``repr``; an event too large to send has its biggest strings cut,
with a marker, instead of failing the whole batch.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import time
from typing import Any

REPR_CAP = 2_000
"""Longest ``repr`` kept for a value that is not JSON (the rest is cut with a marker)."""

MAX_EVENT_BYTES = 256_000
"""An encoded event larger than this has its long strings truncated before sending."""

MAX_DEPTH = 64
"""Containers nested deeper than this are replaced by a marker on the slow path."""

_USER_FIELDS = ("input", "output", "data")
_TRUNCATED = "…[truncated by bench-sdk: {} chars]"

_second_cache: tuple[int, str] = (-1, "")


def format_ts(epoch: float) -> str:
    """Format an epoch time as the wire's ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (UTC).

    The date part is cached per second because a busy agent logs many events per second.
    """
    global _second_cache
    second = int(epoch)
    cached_second, prefix = _second_cache
    if cached_second != second:
        prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _second_cache = (second, prefix)
    return f"{prefix}.{int((epoch - second) * 1000):03d}Z"


def cap_text(text: str, cap: int) -> str:
    """Cut ``text`` to ``cap`` characters, saying how much was dropped."""
    if len(text) <= cap:
        return text
    return text[:cap] + _TRUNCATED.format(len(text) - cap)


def safe_repr(value: object) -> str:
    """A capped ``repr`` that cannot raise, for values JSON cannot hold."""
    try:
        return cap_text(repr(value), REPR_CAP)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not reach the agent
        return f"<unrepresentable {type(value).__name__}>"


def _default(value: object) -> Any:
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, (set, frozenset)):
        return list(value)
    return safe_repr(value)


_ENCODER = json.JSONEncoder(default=_default, allow_nan=False, separators=(",", ":"))


def to_jsonable(value: Any, string_cap: int | None = None, _seen: frozenset[int] = frozenset()) -> Any:
    """Rebuild ``value`` from JSON-safe parts: str keys, finite numbers, no cycles.

    The slow path, used only for the rare event the fast encoder rejects (NaN, cycles, odd
    keys) or one that is too large; ``string_cap`` then shortens long strings.
    """
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, str):
        return value if string_cap is None else cap_text(value, string_cap)
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        if id(value) in _seen:
            return "<cycle>"
        if len(_seen) >= MAX_DEPTH:
            return "<too deep>"
        seen = _seen | {id(value)}
        if isinstance(value, dict):
            return {
                k if isinstance(k, str) else safe_repr(k): to_jsonable(v, string_cap, seen)
                for k, v in value.items()
            }
        return [to_jsonable(v, string_cap, seen) for v in value]
    converted = _default(value)
    return cap_text(converted, string_cap) if string_cap is not None else converted


def encode_event(event: dict[str, Any]) -> bytes:
    """Encode one event; never raises and never returns more than about ``MAX_EVENT_BYTES``."""
    try:
        data = _ENCODER.encode(event).encode()
    except (TypeError, ValueError, RecursionError):
        data = _ENCODER.encode(to_jsonable(event)).encode()
    if len(data) <= MAX_EVENT_BYTES:
        return data
    cap = MAX_EVENT_BYTES // 8
    while cap >= 64:
        data = _ENCODER.encode(to_jsonable(event, string_cap=cap)).encode()
        if len(data) <= MAX_EVENT_BYTES:
            return data
        cap //= 4
    marker = f"<omitted by bench-sdk: event was {len(data)} bytes>"
    slim = {
        k: (marker if k in _USER_FIELDS and v is not None else v)
        for k, v in event.items()
        if k != "cost_breakdown"  # the server wants a well-formed breakdown or none
    }
    return _ENCODER.encode(to_jsonable(slim, string_cap=1_000)).encode()
