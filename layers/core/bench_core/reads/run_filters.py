"""The runs list's filters from a query string (`domain/run_list.py` `RunFilter`): every filter
is a parameter, so a list is an address; a bad value is a 400 naming its parameter. Content is
the owner's: only the owner's filter searches inputs and outputs and reads the whole metadata
(`privacy.Viewer.owns`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from ..domain.errors import BadRequest
from ..domain.models import Agent, iso
from ..domain.privacy import Viewer
from ..domain.run_list import RUN_STATUSES, SORTS, Range, RunFilter

TEXTS = ("status", "name", "q", "model", "provider", "tag", "since", "until", "sort", "order")
RANGES = {"cost": ("min_cost", "max_cost"), "tokens": ("min_tokens", "max_tokens"),
          "duration": ("min_ms", "max_ms"), "score": ("min_score", "max_score")}
NUMBERS = (*(name for pair in RANGES.values() for name in pair), "score_below")
LISTS = ("meta",)
FILTERS = (*TEXTS, *NUMBERS, *LISTS)
"""Every parameter of the list (besides `cursor` and `limit`), in the order links write them."""
ORDERS = ("desc", "asc")


def bad_parameter(parameter: str, message: str) -> BadRequest:
    return BadRequest(f"{parameter}: {message}",
                      [{"loc": ["query", parameter], "msg": message}])


def _number(filters: dict[str, Any], parameter: str) -> float | None:
    raw = filters.get(parameter)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise bad_parameter(parameter, f"{raw!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise bad_parameter(parameter, "must be a number from 0 up")
    if parameter in ("min_score", "max_score", "score_below") and value > 1:
        raise bad_parameter(parameter, "a score is from 0 to 1")
    return value


def _range(filters: dict[str, Any], low_name: str, high_name: str) -> Range:
    low, high = _number(filters, low_name), _number(filters, high_name)
    if low is not None and high is not None and low > high:
        raise bad_parameter(high_name, f"must not be below {low_name}")
    return Range(low, high)


def moment(filters: dict[str, Any], parameter: str) -> str | None:
    """A date (`2026-12-05`: its midnight, UTC; for `until` the next one, so the day is in)
    or a time, as stored times read (`models.iso`)."""
    raw = filters.get(parameter)
    if raw is None:
        return None
    try:
        if len(raw) == 10:
            day = date.fromisoformat(raw)
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return iso(start + timedelta(days=1) if parameter == "until" else start)
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise bad_parameter(parameter, f"{raw!r} is not a date (2026-12-05) or a time") from None
    return iso(moment if moment.tzinfo else moment.replace(tzinfo=UTC))


def _pairs(filters: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    pairs = []
    for raw in filters.get("meta") or []:
        key, equals, value = raw.partition("=")
        if not equals or not key:
            raise bad_parameter("meta", f"{raw!r} is not key=value")
        pairs.append((key, value))
    return tuple(pairs)


def _choice(filters: dict[str, Any], parameter: str, allowed: tuple[str, ...]) -> str | None:
    value = filters.get(parameter)
    if value is not None and value not in allowed:
        raise bad_parameter(parameter, f"unknown {parameter} {value!r}: use one of {', '.join(allowed)}")
    return value


def run_filter(agent: Agent, viewer: Viewer, filters: dict[str, Any]) -> RunFilter:
    """The filter the parameters in `filters` (only those set) ask for."""
    score = _range(filters, *RANGES["score"])
    if (below := _number(filters, "score_below")) is not None:  # kept from before the ranges
        high = math.nextafter(below, -math.inf)
        score = Range(score.low, high if score.high is None else min(score.high, high))
    since, until = moment(filters, "since"), moment(filters, "until")
    if since is not None and until is not None and since >= until:
        raise bad_parameter("until", "must be after since")
    sort = _choice(filters, "sort", SORTS) or "started"
    return RunFilter(
        status=_choice(filters, "status", RUN_STATUSES), name=filters.get("name"),
        text=(filters.get("q") or "").strip() or None, content=viewer.owns(agent),
        model=filters.get("model"), provider=filters.get("provider"), tag=filters.get("tag"),
        meta=_pairs(filters), since=since, until=until,
        cost=_range(filters, *RANGES["cost"]), tokens=_range(filters, *RANGES["tokens"]),
        duration=_range(filters, *RANGES["duration"]), score=score,
        sort=sort, descending=(_choice(filters, "order", ORDERS) or "desc") == "desc")


def query_filters(get: Callable[[str], str | None], get_list: Callable[[str], list[str]]
                  ) -> dict[str, Any]:
    """The filters a query string sets, from its `get(name)` and `get_list(name)`: empty
    values are unset."""
    found: dict[str, Any] = {name: get(name) or None for name in (*TEXTS, *NUMBERS)}
    found |= {name: [v for v in get_list(name) if v] or None for name in LISTS}
    return {name: value for name, value in found.items() if value is not None}


def sort_queries(filters: dict[str, Any]) -> dict[str, str]:
    """The list's query sorted by each column: down first, up where it is sorted down."""
    sorted_down = (filters.get("sort", "started"), filters.get("order", "desc"))
    return {column: urlencode({**filters, "sort": column,
                               "order": "asc" if sorted_down == (column, "desc") else "desc"},
                              doseq=True)
            for column in SORTS}
