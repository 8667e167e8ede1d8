"""Caps on stored values: an oversized field is truncated with a visible marker, never rejected."""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json

TRUNCATED = "_bench_truncated"


def dumps(value: Any) -> str:
    """Compact JSON (pydantic-core's encoder: several times faster than `json.dumps`)."""
    return to_json(value, serialize_unknown=True).decode()


def cap(value: Any, max_bytes: int) -> Any:
    """`value` itself if its JSON fits in `max_bytes`, else a marker holding a JSON-text preview."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str) and len(value) * 4 <= max_bytes:
        return value
    encoded = to_json(value, serialize_unknown=True)
    if len(encoded) <= max_bytes:
        return value
    preview = encoded[: max(0, max_bytes - 200)].decode(errors="ignore")
    return {TRUNCATED: True, "original_bytes": len(encoded), "preview": preview}
