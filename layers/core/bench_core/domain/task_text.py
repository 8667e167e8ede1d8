"""Task values as the text a judge, describer or embedder reads: bounded, and honest about cuts."""

from __future__ import annotations

from typing import Any

from .field_limits import TRUNCATED, dumps


def as_text(value: Any, limit: int) -> str:
    """`value` as text of at most about `limit` characters. Strings stay as they are, anything
    else is JSON; a value Bench truncated at ingest, or one cut here, says so."""
    if value is None:
        return ""
    if isinstance(value, dict) and value.get(TRUNCATED):
        note = f"\n[stored truncated: {value.get('original_bytes')} bytes originally]"
        return clip(str(value.get("preview", "")), limit) + note
    return clip(value if isinstance(value, str) else dumps(value), limit)


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters not shown]"


def is_truncated(value: Any) -> bool:
    """Cut by Bench's size cap, or text that visibly trails off."""
    if isinstance(value, dict) and value.get(TRUNCATED):
        return True
    return isinstance(value, str) and value.rstrip().endswith(("...", "…"))


def is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, (str, list, dict)) and not (
        value.strip() if isinstance(value, str) else value))
