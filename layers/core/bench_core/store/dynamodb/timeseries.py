"""An agent's counters over time on DynamoDB (`domain.timeseries`). Item (`A` is
`{login}#{slug}`, `g` the grain's letter, H or D, `n` the counter shard of the write):

- a bucket:  SERIES#{A}#{g}, TS#{g}#{scope}#{period}#{n}   numbers ADDed to (short names,
             `_NAMES`), latency histogram `h{i}`, models `M_{name}_{c|i|o|u}`

A partition key of each grain's, not the agent's own: the hot agent's buckets take some 800
write units a second, which beside its counters would pass the 1,000 a partition takes
(`tests/perf/load_model.py`); split by grain, each takes half, and a read (one grain) is still
one Query of one partition.

ADDed to in the transaction that already counts the batch's runs (ingest) or their scores
(evals), on the counter shard that transaction picked (`codec.agents`), so the counts stay
exactly-once and no bucket item takes more transactions a second than a counter shard: the hot
agent's 40 batches and 40 eval records a second spread over `COUNTER_SHARDS` items per bucket,
8 a second each, a few hundred bytes each (1 KB and under: 2 write units in a transaction). A
steady batch touches four (its hour and day, for the agent and its version).

A read is one Query of a scope and grain between two periods, eventually consistent: a 90-day
chart reads 90 days times the shards that were written. A scope never holds `#` (a version
never does, a tag's is a digest), so the range holds that scope alone. A model's attribute
names carry its provider and model in base32 (an update names each attribute by a `#name`
placeholder, which takes letters, digits and `_` only).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any

from ...domain import stats
from ...domain.models import AgentRef, CleanEvent
from ...domain.pricing import is_evidence
from ...domain.timeseries import (
    ALL,
    DAY,
    NUMBERS,
    Bucket,
    BucketKey,
    ModelUse,
    first_tags,
    keys_at,
    scope_of,
)
from .client import Table
from .codec.agents import pick_shard
from .codec.keys import AgentKeys, expiring
from .codec.values import Update, number, to_item

SERIES = "TS#"
_LETTER = {"hour": "H", "day": "D"}
_NAMES = dict(zip(NUMBERS, ("r", "s", "c", "e", "sc", "se", "ti", "to", "ec", "es", "q", "qe",
                            "qn"), strict=True))
_MODEL_FIELDS = ("c", "i", "o", "u")


def bucket_sk(key: BucketKey, shard: int | str) -> str:
    return f"{SERIES}{_LETTER[key.grain]}#{key.scope}#{key.period}#{shard}"


def series_pk(agent: AgentKeys, grain: str) -> str:
    return f"SERIES#{agent.name}#{_LETTER[grain]}"


def series_updates(agent: AgentKeys, buckets: Mapping[BucketKey, Bucket], shard: int
                   ) -> list[Update]:
    """What `buckets` add: one update per bucket item, on shard `shard`; only what is not 0."""
    updates = []
    for key, bucket in buckets.items():
        add: dict[str, Any] = {_NAMES[name]: number(value) for name in NUMBERS
                               if (value := getattr(bucket, name))}
        add |= {f"h{i}": n for i, n in enumerate(bucket.latency_hist) if n}
        for (provider, model), use in bucket.models.items():
            prefix = f"M_{_model_name(provider, model)}_"
            add |= {prefix + f: number(v) for f, v in zip(
                _MODEL_FIELDS, (use.calls, use.input_tokens, use.output_tokens, use.cost_usd),
                strict=True) if v}
        if add:
            item_key = to_item({"pk": series_pk(agent, key.grain), "sk": bucket_sk(key, shard)})
            updates.append(expiring(Update(item_key, add=add), agent))
    return updates


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
    the size of a transaction): each task's end in the agent's, a version's and its tags'
    scopes (`timeseries.run_keys`), each evidence record in the agent's."""
    keys: set[BucketKey] = set()
    for event in events:
        data = event.body.get("data")
        if event.kind == "task.end":
            keys.update(keys_at(event.ts, [ALL, scope_of(version="")]))
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
        low, high = (bucket_sk(BucketKey(scope, grain, first), ""),
                     bucket_sk(BucketKey(scope, grain, last), "~"))
        params = self.table.query_params(series_pk(AgentKeys(ref.login, ref.slug), grain),
                                         "#sk BETWEEN :low AND :high", low=low, high=high)
        params["ConsistentRead"] = False  # a chart may be a moment behind: half the units
        periods: dict[str, Bucket] = {}
        for answer in self.table.answers(params):
            for item in answer["Items"]:
                period = item["sk"].split("#")[3]
                periods.setdefault(period, Bucket()).add(bucket_of(item))
        return sorted(periods.items())
