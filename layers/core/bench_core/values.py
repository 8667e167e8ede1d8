"""Caps on stored values: an oversized field is truncated with a visible marker, never rejected."""

from __future__ import annotations

import json
from typing import Any

TRUNCATED = "_bench_truncated"


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def cap(value: Any, max_bytes: int) -> Any:
    """`value` itself if its JSON fits in `max_bytes`, else a marker holding a JSON-text preview."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str) and len(value) * 4 <= max_bytes:
        return value
    encoded = dumps(value).encode()
    if len(encoded) <= max_bytes:
        return value
    preview = encoded[: max(0, max_bytes - 200)].decode(errors="ignore")
    return {TRUNCATED: True, "original_bytes": len(encoded), "preview": preview}
