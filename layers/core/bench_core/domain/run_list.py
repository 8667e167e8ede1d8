"""The runs list's rule (`RunFilter`): which runs it keeps and in what order, one rule that the
in-memory and DynamoDB stores apply as written and SQLite's query (`store/sqlite/runs.py`)
follows, calling the same functions where SQL cannot say it.

- A run is kept when its root holds every root filter (status, name, tag, metadata, date,
  cost, tokens, duration, score) and, for each span filter (model, provider, text), some span
  of the run (the root included) holds it: `model=gpt-4o&q=Lisbon` keeps a run that called
  gpt-4o and mentions Lisbon, in the same span or not.
- Content is the owner's: `content` (set only for the owner) lets the text search read inputs
  and outputs and the metadata filters read the whole metadata; anyone else's filters see
  names, models and what `privacy.metadata_view` shows, so a filter's answer says no more than
  the page would.
- Tags are what a run's root metadata lists under `tags` (the SDK's `t.metadata(tags=[...])`,
  an OTLP attribute `tags`); a metadata filter `key=value` holds where the root metadata (or
  its OTLP `attributes`) has `key` whose value reads `value`.
- A provider is the one the price table names for a span's model (`pricing.price_table`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .field_limits import dumps
from .models import TaskState
from .pricing import cost_rule, price_table
from .privacy import metadata_view

RUN_STATUSES = ("running", "success", "failed")
SORTS = ("started", "duration", "cost", "tokens", "score")
"""The columns the list sorts by; `started` (newest first) is its natural order."""
MISSING = -1.0
"""The sorted value of a run without one: below every real one (all are >= 0), so it comes
last sorting down and first sorting up, as an index orders it (`store/sqlite/run_list.py`)."""


@dataclass(frozen=True)
class Range:
    """Bounds on a number, each optional, both inclusive; a run without the number is outside
    any bounded range."""

    low: float | None = None
    high: float | None = None

    @property
    def bounded(self) -> bool:
        return self.low is not None or self.high is not None

    def holds(self, value: float | None) -> bool:
        if not self.bounded:
            return True
        if value is None:
            return False
        return ((self.low is None or value >= self.low)
                and (self.high is None or value <= self.high))


def headline_cost(task: TaskState) -> float:
    """The run's cost as its row shows it (`pricing.cost_rule`)."""
    return cost_rule(task.cost_usd, task.evidence.cost_usd if task.evidence else None)[0]


def tokens(task: TaskState) -> int | None:
    """Input and output tokens its evidence counted (its own and its finished subtasks')."""
    usage = task.evidence
    if usage is None or (usage.input_tokens is None and usage.output_tokens is None):
        return None
    return (usage.input_tokens or 0) + (usage.output_tokens or 0)


def score(task: TaskState) -> float | None:
    return task.eval.score if task.eval is not None else None


SORTED_VALUE = {"duration": lambda t: t.duration_ms, "cost": headline_cost, "tokens": tokens,
                "score": score}


@functools.lru_cache(maxsize=1024)
def provider_of(model: str | None) -> str | None:
    """The provider the price table names for `model`; None for a model it does not know.
    Cached (bounded; the table is read once per process): a filter by provider asks it of
    every span it looks at (`store/sqlite/run_list.py` calls it in SQL), some 10,000 a page,
    which name the same few models."""
    price = price_table().lookup(model) if model else None
    return price.provider if price else None


def _scalar_text(value: Any) -> str | None:
    """How a metadata value reads in a filter: a string as it is, a number or flag as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int) or (isinstance(value, float) and math.isfinite(value)):
        return dumps(value)
    return None


def _fields(metadata: Any) -> dict[str, Any]:
    """Metadata's keys and its OTLP attributes' (the latter where both name one)."""
    if not isinstance(metadata, dict):
        return {}
    attributes = metadata.get("attributes")
    return {**metadata, **(attributes if isinstance(attributes, dict) else {})}


def metadata_holds(metadata: Any, meta: tuple[tuple[str, str], ...], tag: str | None, *,
                   content: bool) -> bool:
    """Whether a root's metadata (all of it with `content`, else its public part) has every
    `key=value` of `meta` and lists `tag`."""
    fields = _fields(metadata if content else metadata_view(metadata))
    for key, value in meta:
        if _scalar_text(fields.get(key)) != value:
            return False
    if tag is not None:
        return tag in _listed_tags(fields)
    return True


def tags_of(metadata: Any) -> list[str]:
    """The tags a root's metadata lists (all of it: the owner's view), in order."""
    return [t for t in _listed_tags(_fields(metadata)) if t is not None]


def _listed_tags(fields: dict[str, Any]) -> list[str | None]:
    tags = fields.get("tags")
    return [_scalar_text(t) for t in (tags if isinstance(tags, list) else [tags])]


@dataclass(frozen=True)
class RunFilter:
    """What the runs list keeps and its order: every set field must hold (see the module)."""

    status: str | None = None
    name: str | None = None
    text: str | None = None
    content: bool = False
    model: str | None = None
    provider: str | None = None
    tag: str | None = None
    meta: tuple[tuple[str, str], ...] = ()
    since: str | None = None
    """The earliest start kept (stored time format, `models.iso`)."""
    until: str | None = None
    """The first start no longer kept."""
    cost: Range = field(default_factory=Range)
    tokens: Range = field(default_factory=Range)
    duration: Range = field(default_factory=Range)
    score: Range = field(default_factory=Range)
    sort: str = "started"
    descending: bool = True

    @property
    def by_spans(self) -> bool:
        """Whether a run is kept by what its spans hold, not its root alone."""
        return bool(self.model or self.provider or self.text)

    @property
    def by_metadata(self) -> bool:
        return bool(self.meta) or self.tag is not None

    def keeps_root(self, task: TaskState) -> bool:
        """The root filters (the span filters are `span_tests`)."""
        return (
            (self.status is None or task.status == self.status)
            and (self.name is None or task.name == self.name)
            and (self.since is None or task.sort_ts >= self.since)
            and (self.until is None or task.sort_ts < self.until)
            and self.duration.holds(task.duration_ms)
            and self.cost.holds(headline_cost(task))
            and self.tokens.holds(tokens(task))
            and self.score.holds(score(task))
            and (not self.by_metadata
                 or metadata_holds(task.metadata, self.meta, self.tag, content=self.content)))

    def span_tests(self) -> list[Callable[[TaskState], bool]]:
        """One test a span may pass per span filter (`text` reads its name, and its input and
        output where `content`)."""
        tests: list[Callable[[TaskState], bool]] = []
        if self.model is not None:
            tests.append(lambda task: task.model == self.model)
        if self.provider is not None:
            tests.append(lambda task: provider_of(task.model) == self.provider)
        if self.text:
            tests.append(lambda task: self.matches_text(task.name, task.input, task.output))
        return tests

    def matches_text(self, name: str | None, input: Any, output: Any) -> bool:
        needle = self.text.lower() if self.text else ""
        haystack = [name or ""]
        if self.content:
            haystack += [dumps(input), dumps(output)]
        return any(needle in h.lower() for h in haystack)

    def keeps(self, root: TaskState, spans: list[TaskState]) -> bool:
        """The whole rule, for a store that has the run's spans at hand (root not among
        them)."""
        run = [root, *spans]
        return self.keeps_root(root) and all(any(test(s) for s in run)
                                             for test in self.span_tests())

    def order_key(self, task: TaskState) -> tuple[Any, ...]:
        """Where a run stands in the list's order (ascending; reversed when `descending`)."""
        if self.sort == "started":
            return (task.sort_ts, task.task_id)
        value = SORTED_VALUE[self.sort](task)
        return (MISSING if value is None else float(value), task.sort_ts, task.task_id)

    def cursor_parts(self, task: TaskState) -> tuple[str, ...]:
        """The cursor's parts after `task` (`started`: the time and id, as before sorting)."""
        return tuple(repr(p) if isinstance(p, float) else p for p in self.order_key(task))

    def position(self, parts: list[str]) -> tuple[Any, ...]:
        """The order key a cursor names; ValueError for one of another order."""
        if self.sort == "started":
            if len(parts) != 2:
                raise ValueError("malformed cursor")
            return tuple(parts)
        if len(parts) != 3:
            raise ValueError("malformed cursor")
        return (float(parts[0]), parts[1], parts[2])

    def after(self, task: TaskState, position: tuple[Any, ...]) -> bool:
        """Whether `task` comes after `position` in the list's order."""
        key = self.order_key(task)
        return key < position if self.descending else key > position

    def page(self, runs: list[TaskState], cursor: list[str] | None, limit: int
             ) -> tuple[list[TaskState], tuple[str, ...] | None]:
        """One page of `runs` (kept already) in the list's order after `cursor`, and the
        cursor parts of the next page (None on the last)."""
        ordered = sorted(runs, key=self.order_key, reverse=self.descending)
        if cursor is not None:
            position = self.position(cursor)
            ordered = [t for t in ordered if self.after(t, position)]
        page = ordered[:limit]
        return page, (self.cursor_parts(page[-1]) if len(ordered) > limit else None)
