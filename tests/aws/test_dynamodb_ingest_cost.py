"""DynamoDB ingest: what a batch costs all in (its write, the eval of every run it finishes and
the look for watchers), what a run the judge budget skips costs, and that a batch cut short at
any request counts once when it is sent again.

The cost is counted in capacity units by DynamoDB's sizing rules (`tests/perf/dynamodb_cost.py`),
which are deterministic for a given batch: a budget, not a timing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from bench_core.domain.models import AgentMeta, AgentRef
from bench_core.store.dynamodb.store import DynamoStore

from tests.aws.moto_table import dynamo_store
from tests.factories import clean, ev, task_events
from tests.perf.dynamodb_cost import measure

MAX_WRITE_UNITS_PER_EVENT = 2.5
MAX_READ_UNITS_PER_EVENT = 0.45
"""Ingest and the evals: the hourly round adds up to 0.003 an event (an agent sending a batch a
minute, `tests/perf/dynamodb_cost.py`), within the 0.5 all in."""
REF = AgentRef("alice", "crashy")


@pytest.mark.parametrize("nested", [False, True], ids=["flat runs", "runs three levels deep"])
def test_a_steady_batch_costs_at_most_two_and_a_half_write_units_and_half_a_read_unit_per_event(
        nested: bool) -> None:
    """All in: every run the batch finishes is judged and recorded. Also with subtasks, each a
    row in its run's `spans` (and no listing: see below)."""
    wru, rru = measure(batches=3, nested=nested).ingest
    assert wru <= MAX_WRITE_UNITS_PER_EVENT, f"{wru:.2f} WRU per event"
    assert rru <= MAX_READ_UNITS_PER_EVENT, f"{rru:.2f} RRU per event"


def test_a_run_per_request_costs_at_most_five_write_units_per_event_when_the_queue_gathers_them(
        ) -> None:
    """An agent sending a run per request faster than the eval queue gathers (ten requests a
    delivery): its runs share the agent's write."""
    wru, rru = measure(batches=10, runs=1, gathered=True).ingest
    assert wru <= 5.0, f"{wru:.2f} WRU per event"


def test_an_otlp_span_with_two_kilobytes_of_content_costs_at_most_four_write_units_all_in(
        ) -> None:
    """Exports of traces of four spans (an agent, two chats, a tool), each with 2 KB of
    content: a trace's subtasks, which hand nothing to their run, are one pack written alone
    (`codec.packs`: one item of under 1 KB and one `spans` entry, where they were three items
    and three entries), the root with its short verdict stays within 1 KB, and six exports
    5 s apart (OpenTelemetry's batch span processor) re-rank the agent once, not six times
    (`leaderboard.RANK_EVERY`)."""
    wru, _ = measure(batches=6, otlp=True).ingest
    assert wru <= 4.0, f"{wru:.2f} WRU per span"


def test_every_run_a_turn_of_two_conversations_costs_at_most_two_write_units_per_event(
        ) -> None:
    """Issue 29's budget with sessions: a batch's turns of one session share one item listing
    them, beside the session's counters in the transaction."""
    wru, rru = measure(batches=3, sessions=2).ingest
    assert wru <= 2.0, f"{wru:.2f} WRU per event"
    assert rru <= MAX_READ_UNITS_PER_EVENT, f"{rru:.2f} RRU per event"


def test_a_subtask_that_hands_nothing_up_is_written_outside_the_transaction() -> None:
    """Only what must count once with the run goes in the batch's transaction: the root, the
    child handing it a cost, and the counters; the quiet subtasks are written each alone."""
    with dynamo_store() as store:
        written: dict[str, list[str]] = {"TransactWriteItems": [], "UpdateItem": []}

        def note(model: Any, params: dict[str, Any], **_: Any) -> None:
            if model.name == "TransactWriteItems":
                written[model.name] += [a["Update"]["Key"]["sk"]["S"]
                                        for a in params["TransactItems"] if "Update" in a]
            elif model.name == "UpdateItem":
                written[model.name].append(params["Key"]["sk"]["S"])

        store.client.meta.events.register("before-parameter-build.dynamodb", note)
        store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), clean(the_batch()))
        assert {"TASK#parent", "TASK#child"} <= set(written["TransactWriteItems"])
        assert {"TASK#quiet", "TASK#quieter"} <= set(written["UpdateItem"])
        assert not {"TASK#quiet", "TASK#quieter"} & set(written["TransactWriteItems"])
        assert store.ingest.subtask_ids(REF, ["parent", "quiet"]) == {
            "parent": ["child", "quiet"], "quiet": ["quieter"]}


def test_a_task_below_a_root_enters_one_index_its_runs_spans() -> None:
    """A subtask's write makes one index entry, its row in `spans`: the listings (`tasks`,
    `tstatus`) hold roots only, and a task's subtasks are listed from its run's spans."""
    with dynamo_store() as store:
        store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), clean([
            *task_events("root"), *task_events("kid", parent="root"),
            *task_events("grandkid", parent="kid", status="failed")]))
        items = store.client.scan(TableName=store.table_name)["Items"]
        indexed = {i["sk"]["S"]: {k for k in ("tlpk", "tspk", "spk") if k in i}
                   for i in items if i["sk"]["S"].startswith("TASK#")}
        assert indexed == {"TASK#root": {"tlpk", "tspk"}, "TASK#kid": {"spk"},
                           "TASK#grandkid": {"spk"}}
        assert store.ingest.subtask_ids(REF, ["root", "kid"]) == {"root": ["kid"],
                                                                   "kid": ["grandkid"]}
        failed, _ = store.ingest.list_tasks(REF, parent="kid", status="failed")
        assert [t.task_id for t in failed] == ["grandkid"]


def test_runs_the_budget_skips_start_no_eval_and_each_is_written_once() -> None:
    """Recorded `skipped` at ingest: nothing queued, one write of each run's task, and the
    agent's items once for the batch (in one transaction)."""
    from tests.perf.dynamodb_cost import Pipeline, batch

    with dynamo_store() as store:
        pipeline = Pipeline.over(store, sample_rate=0.0)
        writes: list[str] = []

        def count(model: Any, params: dict[str, Any], **_: Any) -> None:
            if model.name == "TransactWriteItems":
                writes.extend(next(iter(a.values()))["Key"]["sk"]["S"] for a in params["TransactItems"])
            elif model.name in ("UpdateItem", "PutItem", "DeleteItem"):
                writes.append((params.get("Key") or params["Item"])["sk"]["S"])

        events = batch("skip")
        ingested = store.ingest.ingest  # the batch's own writes are not what is counted

        def ingest_then_count(*args: Any, **kwargs: Any) -> Any:
            outcome = ingested(*args, **kwargs)
            store.client.meta.events.register("before-parameter-build.dynamodb", count)
            return outcome

        store.ingest.ingest = ingest_then_count  # type: ignore[method-assign]
        pipeline.send("skipper", events)
        runs = {e["task_id"] for e in events}
        assert pipeline.sends.bodies == []
        assert sorted(w for w in writes if w.startswith("TASK#")) == sorted(f"TASK#{r}" for r in runs)
        # one of the agent's counter shards (never its META item), and the agent due for its
        # failure clusters (the batch has failed runs)
        others = [w for w in writes if not w.startswith("TASK#")]
        assert [w.rstrip("0123456789") for w in others] == ["META#C", "alice#skipper"]
        task = store.ingest.get_task(AgentRef("alice", "skipper"), next(iter(runs)))
        assert task is not None and task.eval is not None and task.eval.status == "skipped"


class Crash(Exception):
    """The process dies before this request reaches DynamoDB."""


def requests_of(store: DynamoStore, run: Callable[[], Any]) -> int:
    """How many requests `run` makes."""
    made: list[str] = []

    def handler(model: Any, **_: Any) -> None:
        made.append(model.name)

    store.client.meta.events.register("before-call.dynamodb", handler)
    try:
        run()
    finally:
        store.client.meta.events.unregister("before-call.dynamodb", handler)
    return len(made)


def crash_at(store: DynamoStore, n: int) -> Callable[..., None]:
    """A hook that lets `n` requests through and fails the next one."""
    seen = [0]

    def hook(**_: Any) -> None:
        seen[0] += 1
        if seen[0] == n + 1:
            raise Crash(f"request {n + 1}")

    store.client.meta.events.register("before-call.dynamodb", hook)
    return hook


def the_batch(session: str | None = None) -> list[dict[str, Any]]:
    """A run whose child hands its cost up, beside two subtasks that hand nothing (written
    alone, before the transaction), an open run, an event of no task and a log; with a
    `session`, the run and another (`reply`) are its turns (their item put before the
    transaction)."""
    parent = task_events("parent", cost=0.25)
    if session is None:
        turns: list[dict[str, Any]] = []
    else:
        parent[0]["session_id"] = session
        turns = task_events("reply")
        turns[0]["session_id"] = session
    return [*parent, *task_events("child", parent="parent", cost=0.5),
            *task_events("quiet", parent="parent"), *task_events("quieter", parent="quiet"),
            *task_events("open")[:1], ev("custom"), ev("note", "parent"), *turns]


TASKS = ("parent", "child", "quiet", "quieter", "open", "reply")


def state(store: DynamoStore) -> tuple[Any, ...]:
    agent = store.agents.get_agent(REF)
    assert agent is not None
    s = agent.stats
    tasks = {t: store.ingest.get_task(REF, t) for t in TASKS}
    return ((s.runs, s.successes, round(s.cost_usd_total, 9), s.dropped_events),
            {t: (task.status, task.cost_usd, task.child_cost_usd) for t, task in tasks.items()
             if task is not None},
            {t: [e["id"] for e in store.ingest.task_events(REF, t)] for t in tasks},
            sorted(e["id"] for e in store.ingest.recent_events(REF, 100)),
            store.ingest.daily(REF, "2000-01-01"),
            _session(store))


def _session(store: DynamoStore) -> tuple[Any, ...]:
    stats, runs = store.runs.session_runs(REF, "chat", limit=100)
    return (stats and (stats.runs, stats.successes, round(stats.cost_usd_total, 9)),
            [r.run_id for r in runs])


def test_a_batch_cut_short_at_any_request_counts_once_when_sent_again() -> None:
    """Its runs in their session too: counted once, each listed once."""
    batch = clean(the_batch("chat"))
    with dynamo_store() as store:
        total = requests_of(store, lambda: store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug),
                                                         batch, dropped=3))
        expected = state(store)
    assert total >= 4
    assert expected[0] == (2, 2, 0.25, 3)
    assert expected[5] == ((2, 2, 0.25), ["parent", "reply"])
    for n in range(total):
        with dynamo_store() as store:
            hook = crash_at(store, n)
            with pytest.raises(Crash):
                store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), batch, dropped=3)
            store.client.meta.events.unregister("before-call.dynamodb", hook)
            outcome = store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), batch, dropped=3)
            again = store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), batch, dropped=3)
            assert again.accepted == 0, n
            got = state(store)
            assert got[:4] == expected[:4], (n, outcome)
            assert got[5] == expected[5], n
            assert [d["runs"] for d in got[4]] == [d["runs"] for d in expected[4]], n
