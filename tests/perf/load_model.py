"""Where a traffic mix lands on DynamoDB: the busiest partition keys and items per second,
against DynamoDB's per-partition limits, from the capacity each operation was measured to use.

    python tests/perf/load_model.py [--agents 4] [--reps 3] [--top 12]

1. Measure. Each operation runs on moto, through the code the deployment runs, for a few sample
   agents (`--agents`, of two owners) a few times each (`--reps`), on a clock that stands
   still, with `dynamodb_cost.Meter` tallying the units of every request per partition key
   (the table's, and each index's: an index entry is written on the index's partition) and
   per table item. The operations:
   - `sdk batch`: `POST /ingest` of the SDK's steady batch (50 events, 10 runs of 5,
     `dynamodb_cost.batch`): the key checked and counted (`http/deps.authenticate_sender`),
     the batch stored, its evals queued as the deployment queues them (the eval queue, its
     messages recorded), whether anyone watches looked up;
   - `run request`: the same with one run (5 events) per request;
   - `otlp export`: `POST /v1/traces` of 20 GenAI spans (5 traces of 4, `otlp.export_request`);
   - `eval`: the eval of the finished runs of a steady batch, one queue message for them all
     (`evals/workflow.py` `run_eval`, the offline judge), counted per run; every run's eval,
     OTLP's too, is taken to cost as much;
   - `live push`: what the push function reads for one watched request (`reads/live_feed.py`);
   - `cluster`, hourly per agent; `sweep` (the hourly sweep and the list of agents due),
     hourly for the deployment.
2. Generalise. Keys are written as templates: the owner's login becomes {owner}, the agent's
   slug {agent}, the key's hash {key}, and what names one run or request (run ids, trace and
   span ids, a batch's uuid) {run}. A key without {run} recurs (an agent's META, its
   partition, an index partition, a shard of a queue): its load is its units per operation
   times the operation's rate. A key with {run} is new each time (a run's task, a batch's
   event page): it takes the units one such key took, once (counted as within one second).
3. Scale by the mix (`Mix`): the hot agent's operations at its rate (its own sample agent's
   keys, so its shards are its own), every other agent at the deployment's average (the
   sample agents' mean); {agent} keys are the hot agent's or one other agent's, {owner} keys the
   hot agent's owner's (the hot agent and `hot_owner_agents - 1` others) or the next biggest
   owner's, and keys with neither are the deployment's (every agent's share summed).

Flagged: a partition key over 1,000 WCU/s or 3,000 RCU/s (DynamoDB's per-partition limits; a
single item cannot be split further, so an item over 1,000 WCU/s is over for good), and an item
in more than `TX_HOT` transactions a second (transactions on one item that overlap are
cancelled: TransactionConflict). Not a benchmark of time: units are deterministic.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import boto3  # noqa: E402
from bench_core.clock import SYSTEM_CLOCK, FixedClock  # noqa: E402
from bench_core.domain.keys import new_key  # noqa: E402
from bench_core.domain.live import LiveConnection  # noqa: E402
from bench_core.domain.models import AgentRef, KeyRecord, iso  # noqa: E402
from bench_core.store.dynamodb.codec.agents import COUNTER_SHARDS, DAY_SHARDS  # noqa: E402
from bench_core.store.dynamodb.codec.keys import PARTITIONS  # noqa: E402

from tests.factories import batch as wire_batch  # noqa: E402
from tests.factories import day_old  # noqa: E402
from tests.perf.dynamodb_cost import EVENTS_PER_BATCH, VERSION, Meter, Tally, batch, quiet  # noqa: E402

WCU_LIMIT = 1000.0
RCU_LIMIT = 3000.0
TX_HOT = 10.0
"""Transactions a second on one item past which they overlap: a transaction holds its items
for some 10-30 ms, so beyond about ten a second concurrent ones conflict."""
RUN_EVENTS = 5
OTLP_SPANS = 20
OTLP_SPANS_PER_RUN = 4
HOURLY = 1 / 3600
OWNERS = ("ownera", "ownerb")


@dataclass(frozen=True)
class Mix:
    """The traffic modelled. Events are SDK events or OTLP spans."""

    hot_events_per_s: float = 2000.0
    """One agent sending the SDK's steady 50-event batches, its owner's dashboard open."""
    events_per_s: float = 20000.0
    """The whole deployment, the hot agent included."""
    agents: int = 1000
    owners: int = 10
    hot_owner_agents: int = 200
    """Agents of the hot agent's owner (the hot one included); the rest share the other owners
    evenly."""
    sdk_share: float = 0.7
    """Of the other agents' events: in the SDK's 50-event batches..."""
    run_share: float = 0.15
    """...one run (5 events) per request (agents that flush each run, the original client)..."""
    otlp_share: float = 0.15
    """...and OTLP spans, 20 per export (traces of 4 spans, one run each)."""
    watched: float = 0.05
    """Share of the other agents whose owner has a dashboard open (a live push per request)."""

    @property
    def other_agents(self) -> int:
        return self.agents - 1

    @property
    def other_events_per_s(self) -> float:
        """Events per second of each agent but the hot one."""
        return (self.events_per_s - self.hot_events_per_s) / self.other_agents

    @property
    def biggest_other_owner(self) -> int:
        """Agents of the biggest owner but the hot agent's."""
        return -(-(self.agents - self.hot_owner_agents) // (self.owners - 1))

    def hot_rates(self) -> dict[str, float]:
        """Operations per second of the hot agent."""
        batches = self.hot_events_per_s / EVENTS_PER_BATCH
        return {"sdk batch": batches, "eval": self.hot_events_per_s / RUN_EVENTS,
                "live push": batches, "cluster": HOURLY}

    def other_rates(self) -> dict[str, float]:
        """Operations per second of each other agent."""
        e = self.other_events_per_s
        requests = {"sdk batch": e * self.sdk_share / EVENTS_PER_BATCH,
                    "run request": e * self.run_share / RUN_EVENTS,
                    "otlp export": e * self.otlp_share / OTLP_SPANS}
        runs = (e * (self.sdk_share + self.run_share) / RUN_EVENTS
                + e * self.otlp_share / OTLP_SPANS_PER_RUN)
        return {**requests, "eval": runs, "live push": self.watched * sum(requests.values()),
                "cluster": HOURLY}

    def deployment_rates(self) -> dict[str, float]:
        """Operations per second of the deployment as a whole (not per agent)."""
        return {"sweep": HOURLY}

    def requests_per_s(self) -> float:
        """Requests per second on the ingest routes, the hot agent's included."""
        ingest = ("sdk batch", "run request", "otlp export")
        return (sum(self.hot_rates().get(op, 0.0) for op in ingest)
                + self.other_agents * sum(self.other_rates()[op] for op in ingest))


# ---- measuring ---------------------------------------------------------------------------------


@dataclass
class KeyLoad:
    """What one operation put on one key template, over all its repetitions for one sample
    agent."""

    tally: Tally = field(default_factory=Tally)
    instances: int = 0
    """How many keys of this template were touched, summed over the repetitions."""


Load = dict[tuple[str, ...], KeyLoad]
"""Per key template: ("P", where, pk) for a partition key, ("I", pk, sk) for an item."""


@dataclass
class Operation:
    """An operation measured: per sample agent, what its repetitions put on each key."""

    name: str
    count: int = 0
    """How many operations the repetitions of one sample agent made."""
    by_agent: list[Load] = field(default_factory=list)
    metered: Tally = field(default_factory=Tally)
    """The meter's own totals over every repetition (what `units` must add up to)."""

    def units(self) -> tuple[float, float]:
        """WRU and RRU per operation, the sample agents' mean: every unit the meter counts
        lands on one partition key (the table's or an index's)."""
        tallies = [t.tally for load in self.by_agent for k, t in load.items() if k[0] == "P"]
        n = self.count * len(self.by_agent)
        return sum(t.wru for t in tallies) / n, sum(t.rru for t in tallies) / n


@dataclass
class Sample:
    """A sample agent: its names and its key."""

    ref: AgentRef
    raw_key: str
    key: KeyRecord


class Recorder:
    """Stands in for what is not DynamoDB (SQS, Lambda, API Gateway's management API): records
    what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def send_message(self, **params: Any) -> dict[str, Any]:
        self.calls.append(("send_message", params))
        return {}

    def post_to_connection(self, **params: Any) -> dict[str, Any]:
        return {}

    def dispatch(self, ref: AgentRef, bodies: list[dict[str, Any]]) -> None:
        self.calls.append(("dispatch", {"ref": ref, "bodies": bodies}))

    def take(self, kind: str) -> list[dict[str, Any]]:
        taken = [params for k, params in self.calls if k == kind]
        self.calls = [(k, p) for k, p in self.calls if k != kind]
        return taken


class Harness:
    """The deployment's services on a moto table, metered, on a clock that stands still."""

    def __init__(self, store: Any, meter: Meter) -> None:
        from bench_core.live.apigw import ApiGatewayTransport
        from bench_core.reads.live_feed import LiveFeed
        from bench_core.runtime.adapters import Services
        from bench_core.settings import Limits, Settings
        from bench_core.workflows.eval_queue import EvalQueue
        from bench_core.workflows.stepfunctions import StepFunctionsStarter

        self.store, self.meter = store, meter
        self.recorder = Recorder()
        settings = Settings(store="dynamodb", limits=Limits(key_requests_per_s=10**9))
        self.services = Services(settings, store)
        transport = ApiGatewayTransport(store, "https://live.example", client=self.recorder,
                                        clock=store.clock)
        self.services.provide(
            workflows=StepFunctionsStarter(EvalQueue("https://sqs.example/evals", store.evals,
                                                     client=self.recorder, clock=store.clock),
                                           None, clock=store.clock),
            live_transport=transport,
            live=LiveFeed(store, transport, dispatch=self.recorder))
        self.day = iso(store.clock.now())[:10]

    def sample(self, login: str, slug: str) -> Sample:
        self.store.agents.create_agent(day_old(login, slug))
        raw, record = new_key(login, slug, now=self.store.clock.now())
        self.store.accounts.create_key(record)
        self.store.accounts.add_connection(LiveConnection(
            f"conn-{login}", login, None, login, iso(self.store.clock.now() + timedelta(hours=2))))
        return Sample(AgentRef(login, slug), raw, record)

    def _later(self, fn: Callable[..., Any], *args: Any) -> None:
        asyncio.run(fn(*args))

    def send(self, sample: Sample, events: list[dict[str, Any]]) -> None:
        """`POST /ingest` as its route runs it."""
        from bench_core.http.deps import authenticate_sender
        from bench_core.ingest.pipeline import accept_batch

        key = authenticate_sender(self.services, sample.raw_key)
        body = json.dumps(wire_batch(sample.ref.slug, events, model="llama-3.3-70b",
                                     version=VERSION)).encode()
        _, outcome = accept_batch(self.services, key, body, later=self._later)
        assert outcome.accepted == len(events), outcome

    def export(self, sample: Sample, seed: int) -> None:
        """`POST /v1/traces` as its route runs it."""
        from bench_core.http.deps import authenticate_sender
        from bench_core.ingest.otlp import export_traces

        from tests.perf.otlp import export_request

        key = authenticate_sender(self.services, sample.raw_key)
        result = export_traces(self.services, key, export_request(random.Random(seed), OTLP_SPANS),
                               "protobuf", sample.ref.slug, later=self._later)
        assert result.spans == OTLP_SPANS and not result.rejected, result

    def evals(self) -> int:
        """Deliver the eval messages the ingest ops queued, each on its own (a busy agent's
        are gathered ten to a delivery, which this leaves out); how many runs they judged."""
        from bench_core.evals.workflow import run_eval

        states = [json.loads(p["MessageBody"]) for p in self.recorder.take("send_message")]
        for state in states:
            run_eval(self.services, state)
        return sum(len(state["task_ids"]) for state in states)

    def pushes(self) -> int:
        """Run the live pushes the ingest ops handed off; how many."""
        handed = self.recorder.take("dispatch")
        for params in handed:
            asyncio.run(self.services.live.push(params["ref"], params["bodies"]))
        return len(handed)

    def cluster(self, sample: Sample) -> int:
        from bench_core.clustering.workflow import cluster_agent

        cluster_agent(self.services, {"agent": sample.ref.path})
        return 1

    def sweep(self) -> int:
        from bench_core.clustering.workflow import due_agents, sweep_evals

        sweep_evals(self.services, {}, min_age=timedelta(0))
        due_agents(self.services, {})
        self.recorder.take("send_message")
        return 1


SPREAD = ((re.compile(r"(META#C)\d+$"), COUNTER_SHARDS),
          (re.compile(r"(VER#[^#]+#)\d+$"), COUNTER_SHARDS),
          (re.compile(r"(DAY#\d{4}-\d\d-\d\d#)\d+$"), DAY_SHARDS),
          (re.compile(r"^(TS#[HD]#[^#]*#[^#]+#)\d+$"), COUNTER_SHARDS),
          (re.compile(r"^(PART#.*#)\d+$"), PARTITIONS))
"""Items one of which an operation picks at random (an agent's counter, version and day
shards, its buckets over time on the counter shard's `n`), and partition keys one of which a
hash of a task's or page's id picks (an agent's partitions, `codec.keys`): written as one
template `{n}`, whose load is spread evenly over them."""
SHARD = "{n}"
RUN_ID = re.compile(r"(run[a-z]\d+x\d+|[0-9a-f]{16,})(-\d+)?")
"""What names one run or one request: the ids of the runs each repetition sends, OTLP's trace
and span ids, a batch's uuid."""
NEW = "{run}"


def template(text: str, samples: list[Sample]) -> str:
    for sample in samples:
        text = text.replace(sample.key.key_hash, "{key}")
    text = RUN_ID.sub(NEW, text)
    for pattern, _ in SPREAD:
        text = pattern.sub(r"\1" + SHARD, text)
    for sample in samples:
        text = text.replace(sample.ref.slug, "{agent}").replace(sample.ref.login, "{owner}")
    return text


def tallied(meter: Meter, samples: list[Sample]) -> dict[tuple[str, ...], KeyLoad]:
    """The meter's tallies since its reset, per key template."""
    out: dict[tuple[str, ...], KeyLoad] = defaultdict(KeyLoad)
    for prefix, tallies in (("P", meter.by_partition), ("I", meter.by_item)):
        for key, tally in tallies.items():
            into = out[(prefix, *(template(part, samples) for part in key))]
            into.tally.wru += tally.wru
            into.tally.rru += tally.rru
            into.tally.transactions += tally.transactions
            into.instances += 1
    return out


def recurs(key: tuple[str, ...]) -> bool:
    """Whether the same key is touched again by the next operation (an agent's META, its
    partition, an index partition, a shard), not one of its own (a run's task)."""
    return not any(NEW in part for part in key)


@contextmanager
def harness() -> Iterator[Harness]:
    from tests.aws.moto_table import TABLE_NAME, dynamo_store

    with quiet(), dynamo_store(clock=FixedClock(SYSTEM_CLOCK.now())) as store:
        meter = Meter(TABLE_NAME, boto3.client("dynamodb"))
        meter.attach(store.client)
        yield Harness(store, meter)


def measure(agents: int = 4, reps: int = 3) -> dict[str, Operation]:
    """Every operation of the model, measured for `agents` sample agents `reps` times each."""
    if not 1 <= agents <= 9 or reps < 1:
        raise ValueError("1 to 9 sample agents (`bot-{n}`: one digit), 1 repetition or more")
    operations: dict[str, Operation] = {}
    with harness() as h:
        samples = [h.sample(OWNERS[i % 2], f"bot-{i}") for i in range(agents)]
        for n, sample in enumerate(samples):  # each ranks already (a day old, >= 10 runs)
            h.send(sample, batch(f"warm{n}", day=h.day))
        h.evals()
        h.pushes()

        def metered(name: str, run: Callable[[Sample, int], int], who: list[Sample]) -> None:
            op = operations.setdefault(name, Operation(name))
            for sample in who:
                load: Load = defaultdict(KeyLoad)
                count = 0
                for rep in range(reps):
                    h.meter.reset()
                    count += run(sample, rep)
                    op.metered.wru += h.meter.wru
                    op.metered.rru += h.meter.rru
                    for key, found in tallied(h.meter, samples).items():
                        into = load[key]
                        into.tally.wru += found.tally.wru
                        into.tally.rru += found.tally.rru
                        into.tally.transactions += found.tally.transactions
                        into.instances += found.instances
                op.count = count
                op.by_agent.append(load)

        def run_ids(op: str, rep: int, s: Sample) -> str:
            return f"run{op}{rep}x{samples.index(s)}"  # RUN_ID

        def sdk_batch(s: Sample, rep: int) -> int:
            h.send(s, batch(run_ids("b", rep, s), day=h.day))
            return 1

        def run_request(s: Sample, rep: int) -> int:
            h.send(s, batch(run_ids("r", rep, s), day=h.day)[:RUN_EVENTS])
            return 1

        def otlp_export(s: Sample, rep: int) -> int:
            h.export(s, seed=rep * 16 + samples.index(s))
            return 1

        def evals(s: Sample, rep: int) -> int:
            h.send(s, batch(run_ids("e", rep, s), day=h.day))  # unmetered: its evals are
            h.pushes()
            h.meter.reset()
            return h.evals()

        def pushes(s: Sample, rep: int) -> int:
            h.send(s, batch(run_ids("p", rep, s), day=h.day))
            h.evals()
            h.meter.reset()
            return h.pushes()

        for name, run in (("sdk batch", sdk_batch), ("run request", run_request),
                          ("otlp export", otlp_export)):
            metered(name, run, samples)
            h.evals()
            h.pushes()
        metered("eval", evals, samples)
        metered("live push", pushes, samples)
        metered("cluster", lambda s, rep: h.cluster(s), samples)
        metered("sweep", lambda s, rep: h.sweep(), samples[:1])
    return operations


# ---- the model ---------------------------------------------------------------------------------


@dataclass
class Hot:
    """One key's load per second in a scenario."""

    key: tuple[str, ...]
    wcu: float = 0.0
    rcu: float = 0.0
    tx: float = 0.0
    whose: str = ""

    @property
    def over(self) -> list[str]:
        flags = []
        if self.wcu > WCU_LIMIT:
            flags.append("WCU")
        if self.rcu > RCU_LIMIT:
            flags.append("RCU")
        if self.key[0] == "I" and self.tx > TX_HOT:
            flags.append("TX")
        return flags


def scope(key: tuple[str, ...]) -> str:
    text = "".join(key)
    if "{agent}" in text or "{key}" in text:
        return "agent"
    return "owner" if "{owner}" in text else "deployment"


def shards(key: tuple[str, ...]) -> int:
    """Over how many items a key template's load spreads (`SPREAD`)."""
    if not key[-1].endswith(SHARD):  # a partition key (P) or an item's sort key (I)
        return 1
    return next(n for pattern, n in SPREAD if pattern.search(key[-1].replace(SHARD, "0")))


def per_op(op: Operation, agent: int | None, key: tuple[str, ...]) -> Tally:
    """Units per operation on `key`, sample agent `agent`'s or the samples' mean (None); on a
    key new in each operation, the units one such key took; on a shard, its share."""
    loads = op.by_agent if agent is None else [op.by_agent[agent]]
    found = [load[key] for load in loads if key in load]
    out = Tally()
    for f in found:
        divide = (op.count * len(loads)) if recurs(key) else sum(x.instances for x in found)
        divide *= shards(key)
        out.wru += f.tally.wru / divide
        out.rru += f.tally.rru / divide
        out.transactions += f.tally.transactions / divide
    return out


def load_of(ops: dict[str, Operation], rates: dict[str, float], agent: int | None,
            key: tuple[str, ...], times: float = 1.0) -> Tally:
    """Per second on `key`, `times` over: each operation's units on it at its rate, or, on a
    key new in each operation, its units once (as within one second)."""
    out = Tally()
    for name, rate in rates.items():
        if name not in ops:
            continue
        units = per_op(ops[name], agent, key)
        scale = (rate if recurs(key) else min(rate, 1.0)) * times
        out.wru += units.wru * scale
        out.rru += units.rru * scale
        out.transactions += units.transactions * scale
    return out


def scenario(ops: dict[str, Operation], mix: Mix, everyone: bool) -> list[Hot]:
    """Every key's busiest instance per second: the hot agent alone, or the deployment."""
    keys = {key for op in ops.values() for load in op.by_agent for key in load}
    hot, other = mix.hot_rates(), mix.other_rates()
    hots: list[Hot] = []
    for key in keys:
        kind = scope(key)
        candidates: list[tuple[str, list[tuple[dict[str, float], int | None, float]]]] = [
            ("hot agent", [(hot, 0, 1.0)])]
        if everyone and kind == "agent":
            candidates.append(("another agent", [(other, None, 1.0)]))
        elif everyone and kind == "owner":
            candidates = [("hot agent's owner", [(hot, 0, 1.0),
                                                 (other, None, mix.hot_owner_agents - 1)]),
                          ("another owner", [(other, None, mix.biggest_other_owner)])]
        elif everyone:
            candidates = [("deployment", [(hot, 0, 1.0), (other, None, mix.other_agents),
                                          (mix.deployment_rates(), 0, 1.0)])]
        for whose, parts in candidates:
            total = Hot(key, whose=whose)
            for rates, agent, times in parts:
                t = load_of(ops, rates, agent, key, times)
                total.wcu += t.wru
                total.rcu += t.rru
                total.tx += t.transactions
            hots.append(total)
    return [h for h in hots if h.wcu or h.rcu]


# ---- the report --------------------------------------------------------------------------------


def busiest(hots: list[Hot], kind: str, top: int) -> list[Hot]:
    chosen = [h for h in hots if h.key[0] == kind]
    if kind == "P":
        return sorted(chosen, key=lambda h: -max(h.wcu / WCU_LIMIT, h.rcu / RCU_LIMIT))[:top]
    return sorted(chosen, key=lambda h: (-max(h.wcu / WCU_LIMIT, h.tx / TX_HOT)))[:top]


def report(ops: dict[str, Operation], mix: Mix, show: Callable[[str], None] = print,
           top: int = 10) -> list[Hot]:
    """Print the model; return every flagged key of both scenarios."""
    show(f"Traffic: a hot agent at {mix.hot_events_per_s:,.0f} events/s in "
         f"{EVENTS_PER_BATCH}-event batches (10 runs of {RUN_EVENTS}), watched; a deployment "
         f"at {mix.events_per_s:,.0f} events/s over {mix.agents:,} agents of {mix.owners} "
         f"owners (the hot one's owner has {mix.hot_owner_agents}), the others at "
         f"{mix.other_events_per_s:.1f} events/s each: {mix.sdk_share:.0%} in 50-event "
         f"batches, {mix.run_share:.0%} one run per request, {mix.otlp_share:.0%} OTLP spans "
         f"({OTLP_SPANS} per export); {mix.watched:.0%} of them watched; every finished run "
         "evaluated; sweep and clusters hourly.")
    show(f"Ingest requests/s: hot agent {mix.hot_rates()['sdk batch']:,.0f}, deployment "
         f"{mix.requests_per_s():,.0f}.")
    show("")
    show(f"{'measured per operation':34}{'WRU':>9}{'RRU':>9}{'hot /s':>10}{'other /s':>10}")
    for name, op in ops.items():
        w, r = op.units()
        show(f"  {name:32}{w:9.2f}{r:9.2f}{mix.hot_rates().get(name, 0):10.3f}"
             f"{mix.other_rates().get(name, mix.deployment_rates().get(name, 0)):10.3f}")
    flagged: list[Hot] = []
    for title, everyone in (("the hot agent alone", False), ("the deployment", True)):
        hots = scenario(ops, mix, everyone)
        flagged += [h for h in hots if h.over]
        show("")
        show(f"Busiest partition keys, {title} (limits {WCU_LIMIT:,.0f} WCU/s, "
             f"{RCU_LIMIT:,.0f} RCU/s per partition):")
        show(f"  {'where':9}{'partition key':44}{'whose':20}{'WCU/s':>9}{'RCU/s':>9}  over")
        for h in busiest(hots, "P", top):
            show(f"  {h.key[1]:9}{h.key[2]:44}{h.whose:20}{h.wcu:9,.0f}{h.rcu:9,.0f}  "
                 f"{' '.join(h.over)}")
        show(f"Busiest items, {title} (over: {WCU_LIMIT:,.0f} WCU/s, or {TX_HOT:.0f} "
             "transactions/s):")
        show(f"  {'item (pk | sk)':62}{'whose':20}{'WCU/s':>9}{'tx/s':>8}  over")
        for h in busiest(hots, "I", top):
            show(f"  {(h.key[1] + ' | ' + h.key[2])[:61]:62}{h.whose:20}{h.wcu:9,.0f}"
                 f"{h.tx:8,.0f}  {' '.join(h.over)}")
    return flagged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=4, help="sample agents measured")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of each operation")
    parser.add_argument("--top", type=int, default=10, help="rows per table")
    args = parser.parse_args()
    ops = measure(args.agents, args.reps)
    flagged = report(ops, Mix(), top=args.top)
    print(f"\n{len(flagged)} partition keys or items over a limit.")


if __name__ == "__main__":
    main()
