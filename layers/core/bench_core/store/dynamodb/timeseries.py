"""An agent's counters over time on DynamoDB (`domain.timeseries`). Item (`A` is
`{login}#{slug}`, `g` the grain's letter, H or D, `n` the counter shard of the write):

- a bucket:  SERIES#{A}#{g}, TS#{g}#{scope}#{period}#{n}   numbers ADDed to (short names,
             `_NAMES`), latency histogram `h{i}`, models `M_{name}_{c|i|o|u}`; the agent's
             (scope ALL) also holds each version's, the same names behind `V{digest}_`;
             the agent's hours are in the `tasks` index under `ACTIVE#{hour}#{k}`, `{A}`
             (`_active_keys`: the agents active lately, listed or not)

A partition key of each grain's, not the agent's own: the hot agent's buckets took some 800
write units a second when a version's were items of their own, which beside its counters
would pass the 1,000 a partition takes (`tests/perf/load_model.py`); split by grain, each
took half (some 160 now), and a read (one grain) is still one Query of one partition.

ADDed to in the transaction that already counts the batch's runs (ingest) or their scores
(evals), on the counter shard that transaction picked (`codec.agents`), so the counts stay
exactly-once and no bucket item takes more transactions a second than a counter shard: the hot
agent's 40 batches and 40 eval records a second spread over `COUNTER_SHARDS` items per bucket,
8 a second each, a few hundred bytes each (1 KB and under: 2 write units in a transaction). A
steady batch touches two (its hour and day): a version's numbers are attributes of the
agent's bucket, not items of their own, as every run of a version is a run of the agent and
a transaction bills each item it writes 2 units whatever its size under 1 KB (four items
cost 8.8 units per one-run request). The price is on the reads of the agent's chart, which
read the versions' numbers too (a version's chart reads the agent's items): a busy agent's
90-day chart, 10 shards a day of one model and one version, reads 87 units instead of 29.5,
each a fifth of a write unit's price, so it pays while the agent sends more batches than such
charts are viewed, by far the common case (the hot agent's buckets take 320 write units a
second, not 640: `tests/perf/load_model.py`). A run's tags (by day) keep items of their own:
a run's first two of many.

A read is one Query of a scope and grain between two periods, eventually consistent: a 90-day
chart reads 90 days times the shards that were written; a version's is the agent's Query, its
attributes picked (and, until the table's migration is through `layout.SERIES`, a Query of
the items older code kept per version, `TS#{g}#v:{version}#...`, which the migration folds
into the agent's). A scope never holds `#` (a version never does, a tag's is a digest), so
the range holds that scope alone. A model's attribute names carry its provider and model in
base32 (an update names each attribute by a `#name` placeholder, which takes letters, digits
and `_` only); a version's, 5 bytes of its SHA-256 in base32 (read by the version asked for,
never listed).
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from ...domain import stats
from ...domain.models import AgentRef, CleanEvent, iso
from ...domain.pricing import is_evidence
from ...domain.timeseries import (
    ALL,
    DAY,
    HOUR,
    NUMBERS,
    Bucket,
    BucketKey,
    ModelUse,
    first_tags,
    keys_at,
    period_of,
    scope_of,
)
from .client import MAX_ATTEMPTS, Table, code
from .codec.agents import pick_shard
from .codec.keys import AgentKeys, expiring
from .codec.values import Update, number, to_item
from .layout import SERIES_MERGED

SERIES = "TS#"
SERIES_PK = "SERIES#"
_LETTER = {"hour": "H", "day": "D"}
_NAMES = dict(zip(NUMBERS, ("r", "s", "c", "e", "sc", "se", "ti", "to", "ec", "es", "q", "qe",
                            "qn"), strict=True))
_MODEL_FIELDS = ("c", "i", "o", "u")
_SQUARED = {"q": 1e6, "qe": 1e6}
"""The sums of costs squared are kept in milli-dollars squared: a cheap run's square in dollars
(a $0.0001 call: 1e-8) would keep few digits in the 12 decimal places a number is rounded to
(`values.number`), and none below $1e-6."""
_VERSION = scope_of(version="")
"""How a version's scope begins."""
ACTIVE = "ACTIVE#"
ACTIVE_INDEX, ACTIVE_PK, ACTIVE_SK = "tasks", "tlpk", "tlsk"
ACTIVE_SHARDS = 4
"""The index partitions an hour's active agents are spread over, by agent: every agent's first
batches of an hour write an entry each (up to one a counter shard), which the load model puts
at 500 to 750 write units a second at its 20,000 events/s over 1,000 agents (an upper bound),
most of the 1,000 one partition takes; spread, ~300 on the busiest. A read of the agents
active in the last two hours is `ACTIVE_SHARDS` Queries an hour (12)."""


def bucket_sk(key: BucketKey, shard: int | str) -> str:
    return f"{SERIES}{_LETTER[key.grain]}#{key.scope}#{key.period}#{shard}"


def series_pk(agent: AgentKeys, grain: str) -> str:
    return f"{SERIES_PK}{agent.name}#{_LETTER[grain]}"


def series_updates(agent: AgentKeys, buckets: Mapping[BucketKey, Bucket], shard: int
                   ) -> list[Update]:
    """What `buckets` add: one update per bucket item, on shard `shard` (a version's numbers
    on the agent's item, `_item_of`); only what is not 0."""
    adds: dict[BucketKey, dict[str, Any]] = {}
    for key, bucket in buckets.items():
        if numbers := _numbers(bucket):
            item, prefix = _item_of(key)
            adds.setdefault(item, {}).update({prefix + name: n for name, n in numbers.items()})
    return [expiring(Update(to_item({"pk": series_pk(agent, key.grain),
                                     "sk": bucket_sk(key, shard)}), add=add,
                            set_if_absent=_active_keys(agent, key)), agent)
            for key, add in adds.items()]


def _active_keys(agent: AgentKeys, key: BucketKey) -> dict[str, str]:
    """The agent's own hour's entry in the sparse, KEYS_ONLY `tasks` index, under
    `ACTIVE#{hour}#{n}` (`n` of `ACTIVE_SHARDS`, by agent): set by the write that makes the
    item and left alone by every later one (`if_not_exists`), so only the first write of an
    hour on each counter shard's item writes an index entry, and `active_agents` reads the
    agents of an hour without reading their history."""
    if key.grain != HOUR or key.scope != ALL:
        return {}
    shard = zlib.crc32(agent.name.encode()) % ACTIVE_SHARDS
    return {ACTIVE_PK: f"{ACTIVE}{key.period}#{shard}", ACTIVE_SK: agent.name}


def _numbers(bucket: Bucket) -> dict[str, Any]:
    """A bucket's numbers by attribute name, those not 0."""
    add: dict[str, Any] = {
        short: number(value * _SQUARED.get(short, 1)) for name in NUMBERS
        if (value := getattr(bucket, name)) and (short := _NAMES[name])}
    add |= {f"h{i}": n for i, n in enumerate(bucket.latency_hist) if n}
    for (provider, model), use in bucket.models.items():
        prefix = f"M_{_model_name(provider, model)}_"
        add |= {prefix + f: number(v) for f, v in zip(
            _MODEL_FIELDS, (use.calls, use.input_tokens, use.output_tokens, use.cost_usd),
            strict=True) if v}
    return add


def _item_of(key: BucketKey) -> tuple[BucketKey, str]:
    """The item a bucket's numbers are kept on and their names' prefix: a version's on the
    agent's bucket of the same grain and period, behind `_version_prefix`."""
    if key.scope.startswith(_VERSION):
        return (BucketKey(ALL, key.grain, key.period),
                _version_prefix(key.scope[len(_VERSION):]))
    return key, ""


def _version_prefix(version: str) -> str:
    digest = hashlib.sha256(version.encode()).digest()[:5]
    return f"V{base64.b32encode(digest).decode().lower()}_"


def merge_version_bucket(table: Table, item: dict[str, Any]) -> bool:
    """Fold a version's bucket item as older code kept it (`TS#{g}#v:{version}#...`) into the
    agent's of the same grain, period and shard, in one transaction with its removal, guarded
    by the numbers read (a write meanwhile by older code makes it read again); whether it was
    such an item."""
    _, grain, scope, period, shard = item["sk"].split("#")
    if not scope.startswith(_VERSION):
        return False
    prefix = _version_prefix(scope[len(_VERSION):])
    for _ in range(MAX_ATTEMPTS):
        numbers = {name: value for name, value in item.items()
                   if name not in ("pk", "sk", "expires_at")}
        into = Update(to_item({"pk": item["pk"], "sk": f"{SERIES}{grain}##{period}#{shard}"}),
                      add={prefix + name: value for name, value in numbers.items()})
        if "expires_at" in item:
            into.set_if_absent["expires_at"] = item["expires_at"]
        names = sorted(numbers)
        gone = Update(to_item({"pk": item["pk"], "sk": item["sk"]}), condition=" AND ".join(
            ["attribute_exists(#pk)", *(f"#{n} = :n{i}" for i, n in enumerate(names))]),
            condition_values={f":n{i}": numbers[n] for i, n in enumerate(names)})
        try:
            removal = gone.params(table.name)
            del removal["UpdateExpression"]
            table.transact([table.update_action(into), {"Delete": removal}])
            return True
        except ClientError as exc:
            if code(exc) != "TransactionCanceledException":
                raise
        item = table.get(to_item({"pk": item["pk"], "sk": item["sk"]})) or {}
        if not item:
            return True
    raise RuntimeError(f"bucket {item['pk']} {item['sk']} kept changing: migrate again")


def _hours(first: str, last: str) -> list[str]:
    """The hours from `first` to `last` (`YYYY-MM-DDTHH`), both included."""
    hour, end = (datetime.fromisoformat(h + ":00+00:00") for h in (first, last))
    hours = []
    while hour <= end:
        hours.append(period_of(iso(hour), HOUR))
        hour += timedelta(hours=1)
    return hours


def _model_name(provider: str, model: str) -> str:
    return base64.b32encode(f"{provider} {model}".encode()).decode().rstrip("=").lower()


def _model_of(name: str) -> tuple[str, str]:
    text = base64.b32decode(name.upper() + "=" * (-len(name) % 8)).decode()
    provider, _, model = text.partition(" ")
    return provider, model


def bucket_of(item: Mapping[str, Any]) -> Bucket:
    bucket = Bucket(latency_hist=[int(item.get(f"h{i}", 0)) for i in range(stats.BUCKETS)])
    for name, short in _NAMES.items():
        if (value := item.get(short)) is not None:
            if short in _SQUARED:
                value = float(value) / _SQUARED[short]
            setattr(bucket, name, type(getattr(bucket, name))(value))  # int or float
    for attr, value in item.items():
        if attr.startswith("M_"):
            name, _, field = attr[2:].rpartition("_")
            use = bucket.models.setdefault(_model_of(name), ModelUse())
            setattr(use, _MODEL_ATTRS[field], (float if field == "u" else int)(value))
    return bucket


_MODEL_ATTRS = dict(zip(_MODEL_FIELDS, ("calls", "input_tokens", "output_tokens", "cost_usd"),
                        strict=True))


def series_keys(events: Iterable[CleanEvent]) -> set[BucketKey]:
    """The bucket items `events` may add to, counted generously before they are folded (for
    the size of a transaction): each task's end in the agent's (which holds its version's)
    and its tags' scopes (`timeseries.run_keys`), each evidence record in the agent's."""
    keys: set[BucketKey] = set()
    for event in events:
        data = event.body.get("data")
        if event.kind == "task.end":
            keys.update(keys_at(event.ts, [ALL]))
            keys.update(keys_at(event.ts, [scope_of(tag=t) for t in first_tags(data)], [DAY]))
        elif event.kind == "task.log" and is_evidence(data):
            keys.update(keys_at(event.ts, [ALL]))
    return keys


class DynamoTimeSeries:
    """An agent's buckets, on `table`."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def add_buckets(self, ref: AgentRef, buckets: Mapping[BucketKey, Bucket]) -> None:
        for update in series_updates(AgentKeys(ref.login, ref.slug), buckets, pick_shard()):
            self.table.update(update)

    def read_buckets(self, ref: AgentRef, scope: str, grain: str, first: str, last: str
                     ) -> list[tuple[str, Bucket]]:
        agent = AgentKeys(ref.login, ref.slug)
        item, prefix = _item_of(BucketKey(scope, grain, first))
        periods: dict[str, Bucket] = {}
        self._read(agent, item.scope, grain, first, last, prefix, periods)
        if prefix and self.table.layout.before(self.table, SERIES_MERGED):
            self._read(agent, scope, grain, first, last, "", periods)  # as older code kept it
        return sorted(periods.items())

    def active_agents(self, first: str, last: str, *, after: AgentRef | None = None,
                      limit: int = 100) -> list[AgentRef]:
        """Each hour's `ACTIVE_SHARDS` partitions of the index from `after` on, `limit` keys
        each at most, merged: what a partition that had more holds sorts after its last key
        read, so the page stops there (and there is a next page)."""
        start = AgentKeys(after.login, after.slug).name if after is not None else ""
        names: set[str] = set()
        stop: str | None = None
        for period in _hours(first, last):
            for shard in range(ACTIVE_SHARDS):
                pk = f"{ACTIVE}{period}#{shard}"
                params = (self.table.query_params(pk, "#sk > :after", index=ACTIVE_INDEX,
                                                  page=limit, after=start) if start else
                          self.table.query_params(pk, index=ACTIVE_INDEX, page=limit))
                answer = next(self.table.answers(params))
                keys = [item[ACTIVE_SK] for item in answer["Items"]]
                names.update(keys)
                if "LastEvaluatedKey" in answer and keys:
                    stop = min(stop or keys[-1], keys[-1])
        kept = sorted(name for name in names if stop is None or name <= stop)[:limit]
        return [AgentRef(*name.split("#", 1)) for name in kept]

    def _read(self, agent: AgentKeys, scope: str, grain: str, first: str, last: str,
              prefix: str, periods: dict[str, Bucket]) -> None:
        """Add to `periods` the numbers behind `prefix` of the items of `scope` in the range."""
        low, high = (bucket_sk(BucketKey(scope, grain, first), ""),
                     bucket_sk(BucketKey(scope, grain, last), "~"))
        params = self.table.query_params(series_pk(agent, grain),
                                         "#sk BETWEEN :low AND :high", low=low, high=high)
        params["ConsistentRead"] = False  # a chart may be a moment behind: half the units
        for answer in self.table.answers(params):
            for item in answer["Items"]:
                numbers = {name[len(prefix):]: value for name, value in item.items()
                           if name.startswith(prefix)} if prefix else item
                if numbers:
                    period = item["sk"].split("#")[3]
                    periods.setdefault(period, Bucket()).add(bucket_of(numbers))
