"""DynamoDB cost of Bench: capacity units and dollars per million events all in (a batch's write,
the admission and eval of every run it finishes, the look for live watchers), per hourly round
and per 1,000 profile, badge and leaderboard views, on moto with the deployed table definition.

    python tests/perf/dynamodb_cost.py [--batches 20] [--breakdown] [--nested]
                                       [--runs 10] [--sample-rate 1]

Units are computed from every request the store makes (botocore hooks) by DynamoDB's
published sizing rules, on the item images before and after each write (read from moto on
the side, unmetered):

- a write: 1 WRU per started KB of the larger of the item's old and new image (1 at least,
  also for a delete and a failed condition); inside TransactWriteItems twice that;
- every global secondary index an item enters, leaves or whose projected attributes change:
  one more write of the projected entry (its keys, the table's keys, the projected attributes
  and 100 bytes), two when its index key changes (a delete and a put);
- a read: GetItem and BatchGetItem 1 RRU per started 4 KB per item, Query 1 RRU per started
  4 KB of all the items it read; eventually consistent reads (every GSI Query) half that.

Prices: on-demand, us-east-1 (since November 2024): $0.625 per million write request units,
$0.125 per million read request units. Storage, streams and backups are left out.

A leaderboard view (page 1 by success rate, with `OTHER_AGENTS` more agents tied at one rate)
is printed as well, and the views of one big run (`run_views`: a run of 1,000 spans with 6,000
characters of content each, as its owner sees it): its page, its page with a span selected,
and its JSON read through every page, with the largest answer in bytes.

The steady batch is what the SDK sends for an agent that runs all day: 50 events, 10 runs of
five events each (start, three logs, end), on an agent that already ranks on every
leaderboard, sent through `accept` as `POST /ingest` does (`Pipeline`), whose one eval execution
is then run step by step as EvalFunction runs it, with a model judge that spends tokens; the
agent's hour is under way (`hour_under_way`: its first writes of an hour, at most one index
entry a counter shard, are the hour's, not the measured requests'). The
hourly round is the sweep, the looks at the active agents' monitors, the agents due and their
failure clusters (`hourly_round`), shown
whole and per event for an agent sending a batch a minute. The store's clock moves on by the
sender's interval before each request (`SDK_EVERY`, `OTLP_EVERY`), not by how fast moto
answers, so what is written once per span of time counts as often as for a real sender. Unit
counts are deterministic:
tests/aws/test_dynamodb_ingest_cost.py holds the steady batch to at most 2.5 WRU and 0.5 RRU
per event all in, a batch whose every run is a turn of two conversations (`--sessions 2`) to
2 WRU, and an OTLP span with 2 KB of content (`--otlp`) to 4 WRU,
tests/aws/test_dynamodb_run_page_cost.py the big run's page to under 50 RRU.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import boto3  # noqa: E402
from bench_core.accounts import key_rate  # noqa: E402
from bench_core.clock import FixedClock  # noqa: E402
from bench_core.domain.models import AgentMeta, AgentRef, IngestOutcome, KeyRecord, WireEvent, iso  # noqa: E402
from bench_core.domain.privacy import ANONYMOUS  # noqa: E402

from tests.factories import day_old, prose  # noqa: E402

PRICE_PER_MILLION_WRU = 0.625
PRICE_PER_MILLION_RRU = 0.125
EVENTS_PER_BATCH = 50
RUNS_PER_BATCH = 10
DELIVERY = 10
"""Messages the eval queue's event source hands the eval function at most (`BatchSize`)."""
SDK_EVERY = timedelta(seconds=2)
"""How long after the one before a batch is sent: the SDK's flush interval (`flush_interval_ms`)."""
OTLP_EVERY = timedelta(seconds=5)
"""How long after the one before an export is sent: OpenTelemetry's batch span processor's
schedule delay (`OTEL_BSP_SCHEDULE_DELAY`, 5,000 ms by default). The store's clock moves by
these, not by how fast moto answers, so what is written once per span of time (an agent's rank
refresh, `store/dynamodb/leaderboard.py` `RANK_EVERY`) counts as often as for a real sender."""
LOGIN, SLUG = "alice", "research-agent"
VERSION = "3f1c2a9"
"""The agent's version the steady batch is sent by (the SDK sends the git commit by default):
each batch adds to the version's counters (`store/dynamodb/codec/versions.py`)."""
OTHER_AGENTS = 40
KB = 1024
READ_UNIT = 4 * KB
INDEX_OVERHEAD = 100

# ---- item sizes -------------------------------------------------------------------------------


def value_size(value: dict[str, Any]) -> int:
    """Bytes of one AttributeValue by DynamoDB's sizing rules."""
    (kind, v), = value.items()
    if kind == "S":
        return len(v.encode())
    if kind == "N":
        digits = Decimal(v).normalize().as_tuple().digits
        return (len(digits) + 1) // 2 + 1
    if kind == "B":
        return len(v)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode()) for s in v)
    if kind == "NS":
        return sum(value_size({"N": n}) for n in v)
    if kind == "BS":
        return sum(len(b) for b in v)
    if kind == "L":
        return 3 + sum(value_size(e) + 1 for e in v)
    if kind == "M":
        return 3 + sum(len(k.encode()) + value_size(e) + 1 for k, e in v.items())
    raise ValueError(f"unknown attribute type {kind}")


def item_size(item: dict[str, Any] | None) -> int:
    return sum(len(name.encode()) + value_size(value) for name, value in (item or {}).items())


def write_units(size: int) -> int:
    return max(1, math.ceil(size / KB))


def read_units(size: int, consistent: bool) -> float:
    units = max(1, math.ceil(size / READ_UNIT))
    return units if consistent else units / 2


# ---- the meter --------------------------------------------------------------------------------


@dataclass
class Index:
    name: str
    keys: tuple[str, ...]
    projection: str
    included: tuple[str, ...]

    def entry(self, item: dict[str, Any] | None, table_keys: tuple[str, ...]
              ) -> dict[str, Any] | None:
        """The item's entry in this index, or None if the item is not in it (sparse)."""
        if item is None or any(k not in item for k in self.keys):
            return None
        if self.projection == "ALL":
            return dict(item)
        names = set(self.keys) | set(table_keys)
        if self.projection == "INCLUDE":
            names |= set(self.included)
        return {k: v for k, v in item.items() if k in names}


@dataclass
class Tally:
    """What the requests metered put on one partition key or one item."""

    wru: float = 0.0
    rru: float = 0.0
    transactions: float = 0.0
    """TransactWriteItems requests that wrote to an item (each one a chance of a conflict)."""


Partition = tuple[str, str]
"""Where a partition key lives and its value: ("table", pk) or (index name, the index's pk)."""
ItemKey = tuple[str, ...]
"""A table item's key values: (pk, sk)."""


@dataclass
class Meter:
    """Capacity units of the requests one DynamoDB client makes, by operation and item kind,
    and per partition key (the table's and each index's) and per table item: where the load
    lands, which DynamoDB caps per partition (`tests/perf/load_model.py`)."""

    table: str
    side: Any
    """An unmetered client on the same (moto) backend, to read item images."""
    table_keys: tuple[str, ...] = ("pk", "sk")
    indexes: dict[str, Index] = field(default_factory=dict)
    wru: float = 0.0
    rru: float = 0.0
    by_kind: dict[str, list[float]] = field(default_factory=lambda: defaultdict(lambda: [0.0, 0.0]))
    by_partition: dict[Partition, Tally] = field(default_factory=lambda: defaultdict(Tally))
    by_item: dict[ItemKey, Tally] = field(default_factory=lambda: defaultdict(Tally))
    _before: dict[int, list[tuple[dict[str, Any], dict[str, Any] | None, int]]] = field(
        default_factory=dict)

    def __post_init__(self) -> None:
        description = self.side.describe_table(TableName=self.table)["Table"]
        self.table_keys = tuple(k["AttributeName"] for k in description["KeySchema"])
        for gsi in description.get("GlobalSecondaryIndexes", []):
            projection = gsi.get("Projection", {})
            self.indexes[gsi["IndexName"]] = Index(
                gsi["IndexName"], tuple(k["AttributeName"] for k in gsi["KeySchema"]),
                projection.get("ProjectionType", "ALL"),
                tuple(projection.get("NonKeyAttributes", [])))

    def attach(self, client: Any) -> None:
        client.meta.events.register("before-parameter-build.dynamodb", self._before_call)
        client.meta.events.register("after-call.dynamodb", self._after_call)

    def reset(self) -> None:
        self.wru = self.rru = 0.0
        self.by_kind.clear()
        self.by_partition.clear()
        self.by_item.clear()

    # -- hooks

    def _old(self, key: dict[str, Any]) -> dict[str, Any] | None:
        return self.side.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")

    def _writes(self, operation: str, params: dict[str, Any]
                ) -> list[tuple[dict[str, Any], int]]:
        """(key, multiplier) of each item a write request touches."""
        def key_of(item: dict[str, Any]) -> dict[str, Any]:
            return {k: item[k] for k in self.table_keys}

        if operation in ("PutItem",):
            return [(key_of(params["Item"]), 1)]
        if operation in ("UpdateItem", "DeleteItem"):
            return [(params["Key"], 1)]
        if operation == "TransactWriteItems":
            out = []
            for action in params["TransactItems"]:
                (kind, body), = action.items()
                out.append((key_of(body["Item"]) if kind == "Put" else body["Key"], 2))
            return out
        if operation == "BatchWriteItem":
            return [(key_of(r["PutRequest"]["Item"]) if "PutRequest" in r else
                     r["DeleteRequest"]["Key"], 1)
                    for requests in params["RequestItems"].values() for r in requests]
        return []

    def _before_call(self, model: Any, params: dict[str, Any], context: Any, **_: Any) -> None:
        context["bench_params"] = params
        writes = self._writes(model.name, params)
        if writes:
            context["bench_cost"] = [(key, self._old(key), times) for key, times in writes]

    def _after_call(self, model: Any, parsed: dict[str, Any], context: Any, **_: Any) -> None:
        operation, params = model.name, context.pop("bench_params", {})
        for key, old, times in context.pop("bench_cost", []):
            new = self._old(key)
            self._charge_write(key, old, new, times)
        if operation == "GetItem":  # `parsed` may hold plain values (bench_core's `wire`)
            self._charge_read(params["Key"], item_size(self._old(params["Key"]))
                              if parsed.get("Item") else 0, params.get("ConsistentRead", False))
        elif operation == "BatchGetItem":
            for name, request in params["RequestItems"].items():
                found = {self._key_text(i): i for i in parsed.get("Responses", {}).get(name, [])}
                for key in request["Keys"]:
                    full = self._old(key)
                    self._charge_read(key, item_size(full) if self._key_text(key) in found else 0,
                                      request.get("ConsistentRead", False))
        elif operation == "Query":
            self._charge_query(params, parsed)

    def _key_text(self, item: dict[str, Any]) -> str:
        return repr([_string(item.get(k)) for k in self.table_keys])

    # -- charges

    def _charge_write(self, key: dict[str, Any], old: dict[str, Any] | None,
                      new: dict[str, Any] | None, times: int) -> None:
        units = float(write_units(max(item_size(old), item_size(new))) * times)
        self._place(("table", _string(key[self.table_keys[0]])), key, wru=units,
                    transactional=times > 1)
        for index in self.indexes.values():
            before, after = index.entry(old, self.table_keys), index.entry(new, self.table_keys)
            if before is None and after is None or before == after:
                continue
            moved = (before is None or after is None
                     or any(before[k] != after[k] for k in index.keys))
            for entry in ((before,) if before is not None and (moved or after is None) else ()
                          ) + ((after,) if after is not None else ()):
                entry_units = write_units(item_size(entry) + INDEX_OVERHEAD)
                units += entry_units
                self._place((index.name, _string(entry[index.keys[0]])), None, wru=entry_units)
        self._add(key, wru=units)

    def _charge_read(self, key: dict[str, Any], size: int, consistent: bool) -> None:
        units = read_units(size, consistent)
        self._place(("table", _string(key[self.table_keys[0]])), key, rru=units)
        self._add(key, rru=units)

    def _charge_query(self, params: dict[str, Any], parsed: dict[str, Any]) -> None:
        """A Query is billed by the items it read (before its filter, whatever it projects):
        read again on the side, same keys and page, without projection or filter."""
        index = self.indexes.get(params.get("IndexName", ""))
        sizes = []
        for item in self._read_by(params):
            full = self._old({k: item[k] for k in self.table_keys})
            entry = index.entry(full, self.table_keys) if index else full
            sizes.append(item_size(entry) + (INDEX_OVERHEAD if index else 0))
        consistent = bool(params.get("ConsistentRead")) and index is None
        kind = "query " + (params.get("IndexName") or "table")
        units = read_units(int(sum(sizes)), consistent)
        self.by_kind[kind][1] += units
        self.rru += units
        self._place((index.name if index else "table",
                     _queried_partition(params, index.keys[0] if index else self.table_keys[0])),
                    None, rru=units)

    def _place(self, partition: Partition, key: dict[str, Any] | None, wru: float = 0.0,
               rru: float = 0.0, transactional: bool = False) -> None:
        """Tally units on `partition` and, for a table item's `key`, on the item."""
        tallies = [self.by_partition[partition]]
        if key is not None:
            item = self.by_item[tuple(str(_string(key[k])) for k in self.table_keys)]
            item.transactions += transactional
            tallies.append(item)
        for tally in tallies:
            tally.wru += wru
            tally.rru += rru

    def _read_by(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        """The items (their keys at least) a Query with `params` read, filtered out or not."""
        side = {k: v for k, v in params.items()
                if k not in ("ProjectionExpression", "FilterExpression", "Select",
                             "ExpressionAttributeNames", "ExpressionAttributeValues",
                             "ReturnConsumedCapacity")}
        used = set(re.findall(r"[#:]\w+", params["KeyConditionExpression"]))
        names = {k: v for k, v in params.get("ExpressionAttributeNames", {}).items()
                 if k in used}
        values = {k: v for k, v in params.get("ExpressionAttributeValues", {}).items()
                  if k in used}
        side |= {"ExpressionAttributeNames": names} if names else {}
        side |= {"ExpressionAttributeValues": values} if values else {}
        return self.side.query(**side)["Items"]  # type: ignore[no-any-return]

    def _add(self, key: dict[str, Any], wru: float = 0.0, rru: float = 0.0) -> None:
        kind = item_kind(key)
        self.by_kind[kind][0] += wru
        self.by_kind[kind][1] += rru
        self.wru += wru
        self.rru += rru


def _string(value: Any) -> Any:
    """A string key attribute's value, as an AttributeValue or plain (bench_core's `wire`)."""
    return value["S"] if isinstance(value, dict) else value


def _queried_partition(params: dict[str, Any], pk_name: str) -> str:
    """The partition key value a Query's key condition names (`#pk = :pk`)."""
    names = params.get("ExpressionAttributeNames", {})
    for left, right in re.findall(r"([#\w]+)\s*=\s*(:\w+)", params["KeyConditionExpression"]):
        if names.get(left, left) == pk_name:
            return str(_string(params["ExpressionAttributeValues"][right]))
    raise ValueError(f"no condition on {pk_name}: {params['KeyConditionExpression']}")


def item_kind(key: dict[str, Any]) -> str:
    """A short name for what an item is, from its key: the sort key's prefix in an agent's
    partitions, else the partition key's."""
    pk, sk = key["pk"]["S"], key.get("sk", {}).get("S", "")
    if pk.startswith(("AGENT#", "PART#")):
        return "agent " + sk.split("#", 1)[0]
    return pk.split("#", 1)[0]


# ---- the workload -----------------------------------------------------------------------------


def batch(prefix: str, day: str = "2026-12-02", nested: bool = False, sessions: int = 0
          ) -> list[dict[str, Any]]:
    """The steady batch: `RUNS_PER_BATCH` runs of start, three logs and end; `nested`, half as
    many runs of ten events each: the root's start and end around a subtask and its own
    subtask (a step and its model call), each of start, two logs and end, as a traced agent
    sends them. `sessions`: its runs are turns of that many conversations, each with its user
    (`agent.session`), taking turns."""
    events: list[dict[str, Any]] = []
    for i in range(RUNS_PER_BATCH // 2 if nested else RUNS_PER_BATCH):
        tid, ts = f"{prefix}-{i}", f"{day}T16:{i:02d}:00.000Z"
        end = f"{day}T16:{i:02d}:01.{(i * 37) % 1000:03d}Z"
        logs = 2 if nested else 3
        steps = [(f"{tid}-agent", tid), (f"{tid}-llm", f"{tid}-agent")] if nested else []
        events.append({"id": f"{tid}-s", "kind": "task.start", "ts": ts, "task_id": tid,
                       "name": "research",
                       "input": {"question": "what changed in the release notes", "k": 5},
                       **({"session_id": f"conversation-{i % sessions}",
                           "user_id": f"user-{i % sessions}"} if sessions else {})})
        for task_id, parent in steps or [(tid, None)]:
            if parent:
                events.append({"id": f"{task_id}-s", "kind": "task.start", "ts": ts,
                               "task_id": task_id, "parent_task_id": parent, "name": "search",
                               "input": {"query": "release notes", "k": 5}})
            events += [{"id": f"{task_id}-l{j}", "kind": "task.log", "ts": ts,
                        "task_id": task_id, "data": {"label": "search", "value": j,
                                                     "hits": [1, 2, 3]}} for j in range(logs)]
            if parent:
                events.append({"id": f"{task_id}-e", "kind": "task.end", "ts": end,
                               "task_id": task_id, "status": "success",
                               "output": {"hits": 3}, "duration_ms": 400 + 11 * i})
        events.append({"id": f"{tid}-e", "kind": "task.end", "ts": end, "task_id": tid,
                       "status": "success" if i % 7 else "failed",
                       "output": {"answer": "three changes"}, "duration_ms": 1000 + 37 * i,
                       "cost_usd": 0.0012})
    return events


SENDER = KeyRecord(key_hash="0" * 64, prefix="bk_0000", login=LOGIN)
"""The key the batches are sent with (only its hash is read: its request counter)."""


class RecordedSends:
    """The SQS client of `EvalQueue`: keeps each message, which `Pipeline` delivers to the eval
    steps as the queue's event source delivers them to EvalFunction."""

    def __init__(self) -> None:
        self.bodies: list[str] = []

    def send_message(self, QueueUrl: str, MessageBody: str) -> None:  # noqa: N803
        self.bodies.append(MessageBody)


class VerdictLLM:
    """A model judge that answers at once, with the tokens a real judgement spends (so the
    day's judge spend is written as on AWS)."""

    label = "bedrock:us.meta.llama3-3-70b-instruct-v1:0"

    def complete(self, system: str, messages: Any, *, max_tokens: int) -> Any:
        from bench_core.ports.llm import Completion

        return Completion(json.dumps({"score": 0.8, "reasoning": "It answers the question."}),
                          620, 40)


@dataclass
class Pipeline:
    """What AWS does with a batch, against one store: `POST /ingest`'s key count and `accept`
    (the store write, the judge budget's admission, one message on the eval queue), the look
    for live watchers, then, once `DELIVERY` messages wait (the event source's batch), their
    delivery to the eval function (`evals.queue.judge_messages`)."""

    services: Any
    sends: RecordedSends
    version: str | None = VERSION

    @classmethod
    def over(cls, store: Any, sample_rate: float = 1.0, version: str | None = VERSION
             ) -> Pipeline:
        from bench_core.runtime.adapters import Services
        from bench_core.settings import JudgeSettings, Settings
        from bench_core.workflows.eval_queue import EvalQueue
        from bench_core.workflows.stepfunctions import StepFunctionsStarter

        sends = RecordedSends()
        settings = Settings(judge=JudgeSettings(daily_budget_usd=1e9, sample_rate=sample_rate))
        evals = EvalQueue("https://sqs.us-east-1.amazonaws.com/1/evals", store.evals,
                          client=sends, clock=store.clock)
        services = Services(settings, store).provide(
            llm=VerdictLLM(), workflows=StepFunctionsStarter(evals, None, clock=store.clock))
        return cls(services, sends, version)

    def send(self, slug: str, events: list[dict[str, Any]]) -> IngestOutcome:
        from bench_core.ingest.pipeline import accept

        wire = [WireEvent.model_validate(e) for e in events]
        store = self.services.store
        _advance(store.clock, SDK_EVERY)
        key_rate.take_request(store, SENDER, self.services.settings.limits.key_requests_per_s)
        outcome = accept(self.services, LOGIN, AgentMeta(slug=slug, model="llama-3.3-70b",
                                                         version=self.version), wire,
                         later=lambda *_: None)
        store.accounts.live_connections(LOGIN, iso(store.clock.now()))  # anyone watching?
        if len(self.sends.bodies) >= DELIVERY:
            self.deliver()
        return outcome

    def export(self, slug: str, body: bytes) -> int:
        """`POST /v1/traces` of `body` (protobuf) as its route runs it; the spans stored."""
        from bench_core.ingest.otlp import export_traces

        store = self.services.store
        _advance(store.clock, OTLP_EVERY)
        key_rate.take_request(store, SENDER, self.services.settings.limits.key_requests_per_s)
        result = export_traces(self.services, SENDER, body, "protobuf", slug,
                               later=lambda *_: None)
        store.accounts.live_connections(LOGIN, iso(store.clock.now()))  # anyone watching?
        assert not result.rejected, result
        self.deliver()
        return int(result.spans)

    def deliver(self) -> None:
        """The messages waiting, handed to the eval function a delivery at a time."""
        from datetime import timedelta

        from bench_core.evals.queue import judge_messages, queued

        now = self.services.store.clock.now()
        while self.sends.bodies:
            batch, self.sends.bodies = self.sends.bodies[:DELIVERY], self.sends.bodies[DELIVERY:]
            messages = [queued(f"m{n}", body, now, 1) for n, body in enumerate(batch)]
            assert judge_messages(self.services, messages, lambda: timedelta(minutes=5)) == {}


def _advance(clock: Any, by: timedelta) -> None:
    """The store's clock moved on by a sender's interval (a `FixedClock`, as `measure` opens
    the store with)."""
    if isinstance(clock, FixedClock):
        clock.advance(by)


OTLP_SPANS = 20
"""Spans per export: an exporter's batch of a few traces (5 of 4 spans)."""
OTLP_CONTENT = 2048
"""Bytes of content (the model's input messages) on every span."""


def otlp_body(seed: int, spans: int = OTLP_SPANS, content: int = OTLP_CONTENT) -> bytes:
    """An export of `spans` GenAI spans in traces of four (an agent, two chat calls, a tool
    call), each carrying `content` bytes of input messages (English prose, `factories.prose`,
    as pages are stored deflated)."""
    import random

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    rng = random.Random(seed)
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for t in range(spans // 4):
        trace, root, start = rng.randbytes(16), rng.randbytes(8), 1_764_691_200_000_000_000 + t
        for i, (name, operation) in enumerate([("invoke_agent a", "invoke_agent"),
                                               ("chat m", "chat"), ("execute_tool t", "execute_tool"),
                                               ("chat m", "chat")]):
            text = prose(seed * spans + 4 * t + i, content)
            attributes = {"gen_ai.operation.name": operation, "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": text}]}])}
            scope.spans.add(
                trace_id=trace, span_id=root if i == 0 else rng.randbytes(8),
                parent_span_id=b"" if i == 0 else root, name=name,
                start_time_unix_nano=start + i, end_time_unix_nano=start + 10**9,
                attributes=[KeyValue(key=k, value=AnyValue(string_value=v))
                            for k, v in attributes.items()])
    return request.SerializeToString()


def ingest(pipeline: Pipeline, prefix: str, slug: str = SLUG, nested: bool = False,
           runs: int = RUNS_PER_BATCH, n: int = 0, deliver_later: bool = False,
           sessions: int = 0) -> None:
    """One batch through the whole pipeline: `runs` of the steady batch's runs, the `n`-th
    such slice (so that a run per request fails as often as in the steady batch); its evals
    delivered at once, or with the next full delivery (`deliver_later`: an agent sending
    requests faster than the queue gathers them)."""
    events = batch(prefix, nested=nested, sessions=sessions)
    per_run = len(events) // RUNS_PER_BATCH
    first = (n * runs) % RUNS_PER_BATCH * per_run
    events = events[first:first + runs * per_run]
    outcome = pipeline.send(slug, events)
    assert outcome.accepted == len(events), outcome
    if not deliver_later:
        pipeline.deliver()


def forget_pages(store: Any) -> None:
    """The event pages the store's process keeps (`store/dynamodb/content.py`), dropped: a
    view measured as if read first."""
    from bench_core.store.dynamodb.content import PageCache

    store.runs.content.cache = PageCache()


def profile_view(store: Any) -> None:
    """What `GET /u/{login}/{slug}` reads for an anonymous visitor (`reads.agents.profile_page`;
    before it existed, the page's `profile_context` read the store itself)."""
    agent = store.agents.get_agent(AgentRef(LOGIN, SLUG))
    try:
        from bench_core.reads.agents import profile_page
    except ImportError:
        from bench_core.http.pages import profile_context

        profile_context(store, agent, ANONYMOUS, "https://bench.example")
    else:
        profile_page(store, agent, ANONYMOUS)


def leaderboard_view(store: Any) -> None:
    """What page 1 of `GET /leaderboard?sort=success` reads: `OTHER_AGENTS` tie at 80 %."""
    assert len(store.leaderboard.leaderboard("success", limit=26)) == 26


def badge_view(store: Any) -> None:
    """What `GET /badge/{login}/{slug}.svg` reads."""
    from bench_core.lambdas.badge import badge_answer

    reply = badge_answer(store, LOGIN, SLUG, {}, None)
    assert reply.status == 200, reply.status


@dataclass
class Costs:
    """Units per event ingested, per profile view and per badge view."""

    ingest: tuple[float, float]
    profile: tuple[float, float]
    badge: tuple[float, float]
    leaderboard: tuple[float, float]
    breakdown: dict[str, list[float]]
    hourly: tuple[float, float] = (0.0, 0.0)
    """An hourly round's units per agent due (the sweep's reads shared among them)."""


def measure(batches: int = 20, warm: int = 3, nested: bool = False, runs: int = RUNS_PER_BATCH,
            sample_rate: float = 1.0, gathered: bool = False, otlp: bool = False,
            version: str | None = VERSION, sessions: int = 0) -> Costs:
    """Units per event all in (ingest, the admission and eval of every run it finishes, the look
    for watchers) over `batches` batches of `runs` runs each; then one hourly round and the
    views."""
    from tests.aws.moto_table import TABLE_NAME, dynamo_store

    with dynamo_store(clock=FixedClock(datetime.now(UTC))) as store:
        meter = Meter(TABLE_NAME, boto3.client("dynamodb"))
        meter.attach(store.client)
        pipeline = Pipeline.over(store, version=version)
        for slug in (SLUG, *(f"agent-{n:02d}" for n in range(OTHER_AGENTS))):
            store.agents.create_agent(day_old(LOGIN, slug))  # a day old, so their runs rank them
        for b in range(warm):  # the agent already ranks everywhere (>= 10 runs)
            ingest(pipeline, f"warm{b}")
        for n in range(OTHER_AGENTS):  # others on the leaderboard, all at the same rate
            ingest(pipeline, f"other{n}", slug=f"agent-{n:02d}")
        hour_under_way(pipeline, otlp=otlp, nested=nested, runs=runs, sessions=sessions)
        if sample_rate < 1:
            pipeline = Pipeline.over(store, sample_rate, version)
        meter.reset()
        if otlp:  # per span, not per event
            events = sum(pipeline.export(SLUG, otlp_body(b)) for b in range(batches))
        else:
            for b in range(batches):
                ingest(pipeline, f"b{b:04d}", nested=nested, runs=runs, n=b,
                       deliver_later=gathered, sessions=sessions)
            pipeline.deliver()
            events = batches * len(batch("x", nested=nested)) * runs // RUNS_PER_BATCH
        per_event = (meter.wru / events, meter.rru / events)
        breakdown = {k: [w / batches, r / batches] for k, (w, r) in meter.by_kind.items()}
        meter.reset()
        due = hourly_round(pipeline.services)
        hourly = (meter.wru / due, meter.rru / due)
        views = []
        for view in (profile_view, badge_view, leaderboard_view):
            view(store)  # first-use imports are not what is measured
            forget_pages(store)  # a visitor's view, whom no warm function has read for
            meter.reset()
            view(store)
            views.append((meter.wru, meter.rru))
        return Costs(per_event, views[0], views[1], views[2], breakdown, hourly)


def hour_under_way(pipeline: Pipeline, *, otlp: bool, nested: bool, runs: int,
                   sessions: int) -> None:
    """The agent's hour under way before it is measured, as for an agent that sends all day:
    one request of the measured kind on each counter shard, so each shard's items of the hour
    exist. The first write of an agent's hour on a shard puts the hour bucket item in the
    active agents' index (one write unit, `store/dynamodb/timeseries.py` `_active_keys`), at
    most `COUNTER_SHARDS` an agent-hour whatever it sends, which a measure of a few requests
    would otherwise count as each request's."""
    from itertools import cycle
    from unittest import mock

    from bench_core.store.dynamodb import ingest as dynamo_ingest
    from bench_core.store.dynamodb.codec.agents import COUNTER_SHARDS

    shards = cycle(range(COUNTER_SHARDS))
    with mock.patch.object(dynamo_ingest, "pick_shard", lambda: next(shards)):
        for shard in range(COUNTER_SHARDS):
            if otlp:
                pipeline.export(SLUG, otlp_body(10_000 + shard))
            else:
                ingest(pipeline, f"hour{shard}", nested=nested, runs=runs, n=shard,
                       sessions=sessions)


def hourly_round(services: Any) -> int:
    """What the hourly schedule runs (the cluster state machine): the sweep of evals left
    pending, the agents due, the failure clusters of each, and the looks at the monitors of
    the agents active in the last two hours (here the listing of them only, the index's
    partitions of three hours: the batches are dated days before the clock; a look's own
    units are in tests/aws/test_dynamodb_monitor_cost.py); how many agents were due (every
    agent here has failures)."""
    from bench_core.alerts.watch import watch_active
    from bench_core.clustering import workflow as cluster_wf

    state = cluster_wf.sweep_evals(services, {})
    due = cluster_wf.due_agents(services, state)["agents"]
    for agent in due:
        cluster_wf.cluster_agent(services, {"agent": agent})
    watch_active(services)
    return len(due)


RUN_SPANS = 1000
RUN_CHARS = 6000


@dataclass
class RunViews:
    """Read units of the views of one big run, and its JSON's answers in bytes."""

    page: float
    selected: float
    json: float
    answers: list[int]


def run_views(spans: int = RUN_SPANS, chars: int = RUN_CHARS, *, json: bool = True
              ) -> RunViews:
    """What its owner's views of a run of `spans` spans with `chars` characters of content
    each read (`reads.runs`): the run page, the page with a span selected, and (`json`) the
    JSON page by page (each answer encoded as the route sends it)."""
    from bench_core.domain.privacy import Viewer
    from bench_core.reads import runs as reads
    from bench_core.render.json_body import json_bytes

    from tests.aws.moto_table import TABLE_NAME, dynamo_store
    from tests.factories import clean
    from tests.http.runs_data import tree_run_events

    ref, owner, run = AgentRef(LOGIN, SLUG), Viewer(LOGIN), "big-run"
    with dynamo_store() as store:
        events = tree_run_events(run, spans, chars=chars, text=prose)
        for i in range(0, len(events), 400):
            store.ingest.ingest(LOGIN, AgentMeta(slug=SLUG), clean(events[i:i + 400]))
        meter = Meter(TABLE_NAME, boto3.client("dynamodb"))
        meter.attach(store.client)
        units = []
        for span in (None, f"{run}-{spans // 2}"):
            reads.run_page(store, ref, owner, run, span=span)  # first-use imports
            forget_pages(store)
            meter.reset()
            reads.run_page(store, ref, owner, run, span=span)
            units.append(meter.rru)
        forget_pages(store)
        meter.reset()
        answers, cursor = [], None
        while json:
            answer = reads.run_answer(store, ref, owner, run, cursor)
            answers.append(len(json_bytes(answer)))
            if not (cursor := answer["next_cursor"]):
                break
        return RunViews(units[0], units[1], meter.rru, answers)


def report_run_views(views: RunViews, show: Callable[[str], None] = print) -> None:
    show(f"\na run of {RUN_SPANS:,} spans, {RUN_CHARS:,} characters of content each, "
         "as its owner sees it:")
    show(f"  {'its page':36}{views.page:10.1f} RRU")
    show(f"  {'its page, a span selected':36}{views.selected:10.1f} RRU")
    show(f"  {'its JSON, every page':36}{views.json:10.1f} RRU  in {len(views.answers)} "
         f"answers, the largest {max(views.answers) / 1e6:.2f} MB")


def dollars(wru: float, rru: float) -> float:
    return (wru * PRICE_PER_MILLION_WRU + rru * PRICE_PER_MILLION_RRU) / 1e6


@contextmanager
def quiet() -> Iterator[None]:
    import logging

    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


def report(costs: Costs, show: Callable[[str], None] = print, breakdown: bool = False) -> None:
    (wi, ri), (wp, rp), (wb, rb) = costs.ingest, costs.profile, costs.badge
    wl, rl = costs.leaderboard
    show(f"{'':28}{'WRU':>12}{'RRU':>12}{'USD':>10}")
    show(f"{'per event, all in':28}{wi:12.3f}{ri:12.3f}")
    show(f"{'per million events':28}{wi * 1e6:12,.0f}{ri * 1e6:12,.0f}"
         f"{dollars(wi * 1e6, ri * 1e6):10.3f}")
    show(f"{'per 1,000 profile views':28}{wp * 1e3:12,.0f}{rp * 1e3:12,.0f}"
         f"{dollars(wp * 1e3, rp * 1e3):10.5f}")
    show(f"{'per 1,000 badge views':28}{wb * 1e3:12,.0f}{rb * 1e3:12,.0f}"
         f"{dollars(wb * 1e3, rb * 1e3):10.5f}")
    show(f"{'per 1,000 leaderboard views':28}{wl * 1e3:12,.0f}{rl * 1e3:12,.0f}"
         f"{dollars(wl * 1e3, rl * 1e3):10.5f}")
    wh, rh = costs.hourly
    show(f"{'hourly, per agent due':28}{wh:12.1f}{rh:12.1f}{dollars(wh, rh):10.7f}")
    show(f"{'  per event at 3,000/h':28}{wh / 3000:12.3f}{rh / 3000:12.3f}"
         "   (an agent sending a batch a minute)")
    if breakdown:
        show(f"\nper steady batch of {EVENTS_PER_BATCH} events, by item kind:")
        for kind, (w, r) in sorted(costs.breakdown.items(), key=lambda kv: -kv[1][0] - kv[1][1]):
            show(f"  {kind:26}{w:12.2f}{r:12.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--breakdown", action="store_true", help="units by item kind")
    parser.add_argument("--nested", action="store_true",
                        help="batches of runs three levels deep (`batch`)")
    parser.add_argument("--runs", type=int, default=RUNS_PER_BATCH,
                        help="runs per request (1: a run per request)")
    parser.add_argument("--sample-rate", type=float, default=1.0,
                        help="the judge's sample rate (0: every run skipped)")
    parser.add_argument("--otlp", action="store_true",
                        help=f"OTLP exports of {OTLP_SPANS} spans with {OTLP_CONTENT} bytes of "
                             "content each (units per span)")
    parser.add_argument("--no-version", action="store_true",
                        help="batches sent with no agent version (the original client's)")
    parser.add_argument("--sessions", type=int, default=0,
                        help="the runs are turns of this many conversations, each turn of each "
                             "in a later batch (`agent.session`)")
    parser.add_argument("--gathered", action="store_true",
                        help=f"the eval queue delivers {DELIVERY} requests' runs at once (an "
                             "agent sending faster than EvalBatchingSeconds)")
    args = parser.parse_args()
    with quiet():
        costs = measure(args.batches, nested=args.nested, runs=args.runs,
                        sample_rate=args.sample_rate, gathered=args.gathered, otlp=args.otlp,
                        version=None if args.no_version else VERSION, sessions=args.sessions)
    print(f"DynamoDB on-demand, us-east-1: ${PRICE_PER_MILLION_WRU}/M WRU, "
          f"${PRICE_PER_MILLION_RRU}/M RRU; steady batches of {EVENTS_PER_BATCH} events "
          f"({args.runs // 2 if args.nested else args.runs} runs"
          f"{', three levels deep' if args.nested else ''}), {args.batches} measured")
    report(costs, breakdown=args.breakdown)
    with quiet():
        views = run_views()
    report_run_views(views)


if __name__ == "__main__":
    main()
