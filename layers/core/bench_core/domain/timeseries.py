"""An agent's analytics over time: counters per hour and per day, kept on write (no scan of
history), so a chart of any range reads a bounded number of small records.

What is kept, and why so:
- Two grains, both written: an hour (`2026-12-05T09`) and a day (`2026-12-05`). A 24-hour
  chart reads 24 hours; 30 and 90 days read 30 and 90 days, a year 365 days folded into weeks
  at read (`fold_weeks`). Deriving days from hours at read would make a 90-day chart read
  2,160 records (and on DynamoDB as many items, times their shards); the second write per
  batch costs a fraction of that.
- A run counts where it ended, in its agent's series and in the scopes it carries: its version
  (`domain.versions`: one), and by day only its first `MAX_TAGS` tags (root metadata `tags`,
  `run_list.tags_of`), so the writes per batch stay bounded whatever its runs list: on
  DynamoDB each bucket a batch touches is an item in its transaction (2 write units), and the
  agent's and its version's hours and days with two tags' days keep a batch within 2 write
  units an event all in (`tests/perf/dynamodb_cost.py`). A tag's scope is named by a digest of
  the tag (`scope_of`): keys stay short and safe on every store.
- A run's judge score counts where the run ended, for the agent and its version, when its eval
  is written (`eval_buckets`); not for its tags, which are content, kept with the run's events
  and not where DynamoDB's eval reads the run (a tag's series has no score).
- Model calls, tokens and cost by model and provider come from evidence records, counted where
  each record is stamped, in the agent's series only: a span's record often arrives before its
  run's root, whose version and tags are then unknown.
- Failures are counted here, not by failure cluster: clusters are found hourly, after the
  write, so their counters are kept as clustering assigns runs (`domain.cluster_series`).

Cost follows the headline rule (`pricing.cost_rule`): the owner's and the evidence's totals are
kept apart, of all runs and of the successful ones, and the rule is applied at read. The sums
of each run's cost squared are kept too (owner's and evidence's), with the runs they count
(`squared_runs`: a bucket also holding runs counted before they were kept has fewer), so a
monitor can test cost per successful run for significance (`domain.monitors`); three more
numbers added per run, O(1) like the rest.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from . import stats
from .models import CleanEvent, TaskState
from .pricing import cost_amount, evidence_name, is_evidence, price_table, token_count
from .run_list import tags_of

HOUR = "hour"
DAY = "day"
GRAINS = (HOUR, DAY)
ALL = ""
"""The scope of every run of the agent."""
MAX_TAGS = 2
"""The tags of a run that get a series of their own (by day): its first two distinct ones."""


@dataclass
class ModelUse:
    """What one model's calls (evidence records) add up to."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, other: ModelUse) -> None:
        self.calls += other.calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost_usd += other.cost_usd


@dataclass
class Bucket:
    """One period's counters of one scope. Every field adds (`add`), so shards and periods
    merge by addition."""

    runs: int = 0
    successes: int = 0
    cost_usd: float = 0.0
    """The owner's reported cost of its runs."""
    evidence_cost_usd: float = 0.0
    success_cost_usd: float = 0.0
    success_evidence_cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_hist: list[int] = field(default_factory=stats.empty_histogram)
    eval_count: int = 0
    eval_score_sum: float = 0.0
    cost_sq_usd: float = 0.0
    """The sum of each run's owner-reported cost squared (and of its evidence cost, below)."""
    evidence_cost_sq_usd: float = 0.0
    squared_runs: int = 0
    """The runs counted in the squares: all of them, in a bucket written since they were kept."""
    models: dict[tuple[str, str], ModelUse] = field(default_factory=dict)
    """By (provider, model); "" where a record named none."""

    @property
    def failures(self) -> int:
        return self.runs - self.successes

    def add(self, other: Bucket) -> None:
        mine, theirs = self.__dict__, other.__dict__  # a dataclass's fields: its own
        for name in NUMBERS:
            mine[name] += theirs[name]
        self.latency_hist = stats.merge(self.latency_hist, other.latency_hist)
        for key, use in other.models.items():
            self.models.setdefault(key, ModelUse()).add(use)

    def add_run(self, task: TaskState) -> None:
        success = task.status == "success"
        owner = task.cost_usd or 0.0
        evidence = (task.evidence.cost_usd or 0.0) if task.evidence else 0.0
        self.runs += 1
        self.successes += success
        self.cost_usd += owner
        self.evidence_cost_usd += evidence
        self.cost_sq_usd += owner * owner
        self.evidence_cost_sq_usd += evidence * evidence
        self.squared_runs += 1
        if success:
            self.success_cost_usd += owner
            self.success_evidence_cost_usd += evidence
        if task.evidence is not None:
            self.input_tokens += task.evidence.input_tokens or 0
            self.output_tokens += task.evidence.output_tokens or 0
        if task.duration_ms is not None:
            self.latency_hist[stats.bucket_index(task.duration_ms)] += 1


NUMBERS = ("runs", "successes", "cost_usd", "evidence_cost_usd", "success_cost_usd",
           "success_evidence_cost_usd", "input_tokens", "output_tokens", "eval_count",
           "eval_score_sum", "cost_sq_usd", "evidence_cost_sq_usd", "squared_runs")
"""The fields of a `Bucket` that are plain numbers (the histogram and models are apart)."""


@dataclass(frozen=True, order=True)
class BucketKey:
    scope: str
    grain: str
    period: str
    """`YYYY-MM-DDTHH` for an hour, `YYYY-MM-DD` for a day."""


def scope_of(version: str | None = None, tag: str | None = None) -> str:
    """The scope a filter reads: the agent's (neither), a version's or a tag's (not both)."""
    if version is not None:
        return f"v:{version}"
    if tag is not None:
        digest = hashlib.sha256(tag.encode()).digest()[:12]
        return "t:" + base64.b32encode(digest).decode().rstrip("=").lower()
    return ALL


def period_of(ts: str, grain: str) -> str:
    return ts[:13] if grain == HOUR else ts[:10]


def keys_at(ts: str, scopes: Iterable[str], grains: Iterable[str] = GRAINS
            ) -> Iterator[BucketKey]:
    for scope in scopes:
        for grain in grains:
            yield BucketKey(scope, grain, period_of(ts, grain))


def first_tags(metadata: Any) -> list[str]:
    """The tags of a root's metadata that get a series: its first `MAX_TAGS` distinct ones."""
    return list(dict.fromkeys(tags_of(metadata)))[:MAX_TAGS]


Place = tuple[str, str | None, tuple[str, ...]]
"""Where a run counts: the hour it ended in (`YYYY-MM-DDTHH`, "" if it has not), its version
and its first tags."""


def _place_of(task: TaskState) -> Place:
    tags = tuple(first_tags(task.metadata)) if task.metadata else ()
    return (task.ended_at or "")[:13], task.agent_version, tags


def _place_keys(place: Place) -> list[BucketKey]:
    """The buckets a run counts in, where it ended: the agent's and its version's hour and day,
    its first tags' days."""
    hour, version, tags = place
    scopes = [ALL] if version is None else [ALL, scope_of(version=version)]
    return [*keys_at(hour, scopes), *keys_at(hour, [scope_of(tag=tag) for tag in tags], [DAY])]


def batch_buckets(runs: Iterable[TaskState], events: Iterable[CleanEvent]
                  ) -> dict[BucketKey, Bucket]:
    """What a batch adds: each run it finished (its root task as folded) where it ended, in
    each of its scopes; each evidence record among its new `events` where it was stamped. The
    runs of one place are summed once, then added to each of its buckets (a batch's runs
    mostly share one: half the work of adding each run to its hour and its day)."""
    places: dict[Place, Bucket] = {}
    for task in runs:
        place = _place_of(task)
        if (summed := places.get(place)) is None:  # no throwaway Bucket (and histogram) per run
            summed = places[place] = Bucket()
        summed.add_run(task)
    out: dict[BucketKey, Bucket] = {}
    for place, summed in places.items():
        for key in _place_keys(place):
            out.setdefault(key, Bucket()).add(summed)
    for event in events:
        data = event.body.get("data") if event.kind == "task.log" else None
        if is_evidence(data):
            use = ModelUse(1, token_count(data.get("input_tokens")) or 0,
                           token_count(data.get("output_tokens")) or 0,
                           cost_amount(data.get("cost_usd")) or 0.0)
            for key in keys_at(event.ts, [ALL]):
                models = out.setdefault(key, Bucket()).models
                models.setdefault(model_of(data), ModelUse()).add(use)
    return out


def model_of(data: dict[str, Any]) -> tuple[str, str]:
    """(provider, model) of an evidence record: the provider it names, else the one the price
    table names for its model."""
    model = evidence_name(data.get("model")) or ""
    provider = evidence_name(data.get("provider"))
    if provider is None and model:
        price = price_table().lookup(model)
        provider = price.provider if price is not None else None
    return provider or "", model


def eval_buckets(task: TaskState, count: int, score_sum: float) -> dict[BucketKey, Bucket]:
    """What a run's score change (`eval_records.eval_delta`) adds, where the run ended: for the
    agent and the run's version."""
    if not (count or score_sum) or task.parent_task_id is not None or not task.ended_at:
        return {}
    scopes = [ALL] if task.agent_version is None else [ALL, scope_of(version=task.agent_version)]
    return {key: Bucket(eval_count=count, eval_score_sum=score_sum)
            for key in keys_at(task.ended_at, scopes)}


def monday_of(day: str) -> str:
    """The ISO week (Monday first) of a `YYYY-MM-DD` day, named by its Monday."""
    d = date.fromisoformat(day)
    return (d - timedelta(days=d.weekday())).isoformat()


def fold_weeks(days: Iterable[tuple[str, Bucket]]) -> list[tuple[str, Bucket]]:
    """Day buckets added up by ISO week, each named by its Monday (`monday_of`)."""
    weeks: dict[str, Bucket] = {}
    for day, bucket in days:
        weeks.setdefault(monday_of(day), Bucket()).add(bucket)
    return sorted(weeks.items())
