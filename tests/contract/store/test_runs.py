"""The runs contract (`Store.run_spans`, `Store.run_counts`, `Store.list_runs`): a task records
its run whatever order its ancestors arrive in, and both adapters read a run a bounded page at
a time, count it without reading it, and list runs alike."""

from __future__ import annotations

import gc
import json
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from bench_core.domain.errors import NotFound
from bench_core.domain.models import TASK_CONTENT, AgentMeta, AgentRef, TaskState
from bench_core.domain.privacy import ANONYMOUS, HIDDEN, Viewer
from bench_core.domain.run_list import Range, RunFilter
from bench_core.domain.runs import build_tree, span_key, walk
from bench_core.http.runs import run_json_body
from bench_core.ports.store import RunCounts, RunHead, Store
from bench_core.reads import runs as reads
from bench_core.runtime.adapters import Services
from bench_core.settings import Settings
from bench_core.store.dynamodb.codec.keys import AgentKeys, task_sort_key
from bench_core.store.dynamodb.codec.tasks import ADDED
from bench_core.store.sqlite.store import MIGRATIONS, RUNS_SINCE, SqliteStore

from tests.contract.store.test_run_list import without_run_text
from tests.factories import clean, ev, task_events, ts

REF = AgentRef("alice", "agent-1")
META = AgentMeta(slug="agent-1")


def ingest(store: Store, events) -> None:
    store.ingest.ingest("alice", META, clean(events))


WHOLE = 10_000
"""A page longer than any run these tests make: the run read whole."""


def tasks_of(store: Store, run_id: str, **options: Any) -> list[TaskState]:
    """The run's root and every span under it, as a reader that knows the run is small reads
    it: the root by key, then one page."""
    root = store.ingest.get_task(REF, run_id)
    assert root is not None, run_id
    return [root, *store.runs.run_spans(REF, root, limit=WHOLE, **options)]


def run_of(store: Store, run_id: str) -> dict[str, str | None]:
    return {t.task_id: t.parent_task_id for t in tasks_of(store, run_id)}


def test_a_run_is_read_whole_with_its_subtasks_logs_and_only_its_own_tasks(store: Store) -> None:
    ingest(store, [*task_events("root", "plan"), *task_events("a", parent="root"),
                   ev("task.log", "a", data={"label": "found", "value": 3}),
                   *task_events("a1", parent="a", status="failed", output="boom"),
                   *task_events("other", "unrelated")])
    assert run_of(store, "root") == {"root": None, "a": "root", "a1": "a"}
    assert run_of(store, "other") == {"other": None}
    root = store.ingest.get_task(REF, "root")
    assert root is not None
    assert store.runs.run_spans(AgentRef("bob", "agent-1"), root, limit=WHOLE) == []
    assert store.runs.run_counts(AgentRef("bob", "agent-1"), root) == RunCounts(0, 0, None)
    assert store.runs.run_counts(REF, root) == RunCounts(2, 1, "a1")
    task = {t.task_id: t for t in tasks_of(store, "root")}["a"]
    assert task.run_id == "root"
    assert [entry["data"] for entry in task.logs] == [{"label": "found", "value": 3}]


@pytest.mark.parametrize("order", [("leaf", "middle", "root"), ("middle", "leaf", "root"),
                                   ("leaf", "root", "middle"), ("root", "leaf", "middle")])
def test_spans_arriving_before_their_ancestors_end_up_in_their_run(store: Store,
                                                                   order: tuple[str, ...]) -> None:
    """OTLP exporters send a child span before its parent: each batch is one span here."""
    spans = {"root": task_events("root", "agent"),
             "middle": task_events("middle", "tool", parent="root"),
             "leaf": task_events("leaf", "llm", parent="middle")}
    for name in order:
        ingest(store, spans[name])
    assert run_of(store, "root") == {"root": None, "middle": "root", "leaf": "middle"}


def test_a_deep_chain_sent_leaf_first_in_separate_batches_is_one_run(store: Store) -> None:
    depth = 8
    for level in reversed(range(depth)):
        ingest(store, task_events(f"t{level}", parent=f"t{level - 1}" if level else None))
    assert len(run_of(store, "t0")) == depth


def test_runs_list_filters_newest_first_and_pages(store: Store) -> None:
    ingest(store, [*task_events("r1", "search", duration_ms=50),
                   *task_events("r2", "fetch", status="failed", duration_ms=900),
                   *task_events("r2a", "fetch", parent="r2", duration_ms=10),
                   *task_events("r3", "search", duration_ms=2000, input={"q": "needle"})])

    def ids(where: RunFilter = RunFilter(), **kw) -> list[str]:
        return [t.task_id for t in store.runs.list_runs(REF, where, **kw).runs]

    assert ids() == ["r3", "r2", "r1"]
    assert ids(RunFilter(status="failed")) == ["r2"]
    assert ids(RunFilter(name="search")) == ["r3", "r1"]
    assert ids(RunFilter(duration=Range(low=800))) == ["r3", "r2"]
    assert ids(RunFilter(text="FET")) == ["r2"]
    assert ids(RunFilter(text="needle")) == []
    assert ids(RunFilter(text="needle", content=True)) == ["r3"]
    first = store.runs.list_runs(REF, RunFilter(), limit=2)
    assert [t.task_id for t in first.runs] == ["r3", "r2"] and first.next_cursor
    rest = store.runs.list_runs(REF, RunFilter(), limit=2, cursor=first.next_cursor)
    assert [t.task_id for t in rest.runs] == ["r1"] and rest.next_cursor is None


def test_sqlite_migration_gives_stored_tasks_their_run_and_logs(tmp_path: Path) -> None:
    """A database from before runs existed: the upgrade backfills run ids and logs itself."""
    path = tmp_path / "old.db"
    old = SqliteStore.open(path)
    ingest(old, [*task_events("root"), *task_events("kid", parent="root"),
                 ev("task.log", "kid", data={"label": "step", "value": 1}),
                 *task_events("grandkid", parent="kid")])
    old.close()
    conn = sqlite3.connect(path)  # back to the schema before the runs migration
    without_run_text(conn)  # and the migrations after it
    conn.execute("DROP INDEX tasks_by_run")
    conn.execute("DROP INDEX tasks_failed_by_run")  # and the migrations after it
    conn.execute(f"PRAGMA user_version = {RUNS_SINCE - 1}")
    conn.execute("ALTER TABLE tasks DROP COLUMN run_id")
    conn.execute("ALTER TABLE tasks DROP COLUMN logs")
    conn.execute("ALTER TABLE live_connections DROP COLUMN grant_id")
    conn.execute("ALTER TABLE benchmark_runs DROP COLUMN status")
    conn.execute("ALTER TABLE agents DROP COLUMN latest_run")
    conn.execute("ALTER TABLE agents DROP COLUMN latest_failure")
    conn.execute("ALTER TABLE invocation_usage DROP COLUMN caller_agent")
    conn.execute("ALTER TABLE tasks DROP COLUMN recorded")
    conn.execute("ALTER TABLE tasks DROP COLUMN called_model")
    conn.execute("ALTER TABLE tasks DROP COLUMN agent_version")
    conn.execute("DROP TABLE agent_versions")
    conn.commit()
    conn.close()
    upgraded = SqliteStore.open(path)
    assert upgraded.schema_version == len(MIGRATIONS)
    assert run_of(upgraded, "root") == {"root": None, "kid": "root", "grandkid": "kid"}
    kid = {t.task_id: t for t in tasks_of(upgraded, "root")}["kid"]
    assert [e["data"]["label"] for e in kid.logs] == ["step"]
    upgraded.close()


def where_it_was(store: Any, sk: str) -> dict[str, Any]:
    """Agent-1's item `sk` (as DynamoDB sends it) moved where Bench kept it before an agent's
    tasks and events were spread over partitions (`codec.keys`): under the agent's own key, the
    table's migration marked as not through that step yet (`layout.py`; nor through any it was
    marked as not through), as a deployment of the code that spreads them finds an older
    table."""
    from bench_core.store.dynamodb.layout import MARKER, SPREAD, Layout

    keys, table = AgentKeys("alice", "agent-1"), store.table_name
    home = keys.key(sk)
    item = store.client.get_item(TableName=table, Key=home).get("Item")
    if item is not None:
        store.client.delete_item(TableName=table, Key=home)
        item["pk"] = {"S": keys.pk}
        item |= listed_subtask(keys, item)
        store.client.put_item(TableName=table, Item=item)
    marker = store.client.get_item(TableName=table, Key=MARKER).get("Item", {})
    done = min(int(marker.get("done", {"N": str(SPREAD - 1)})["N"]), SPREAD - 1)
    store.client.put_item(TableName=table, Item={**MARKER, "done": {"N": str(done)}})
    store.table.layout = Layout()
    return item or store.client.get_item(TableName=table, Key={**home, "pk": {"S": keys.pk}})["Item"]


def listed_subtask(keys: AgentKeys, item: dict[str, Any]) -> dict[str, Any]:
    """A subtask's entry in its parent's listing of the `tasks` index, as Bench wrote it before
    a run's spans listed them (layout version 5)."""
    task = json.loads(item["task"]["S"]) if "task" in item else {}
    parent = task.get("parent_task_id")
    if parent is None or "tlpk" in item:
        return {}
    sort_ts = task.get("started_at") or task.get("ended_at") or ""
    return {"tlpk": {"S": keys.tasks_pk(parent)},
            "tlsk": {"S": task_sort_key(sort_ts, item["sk"]["S"][len("TASK#"):])}}


def old_layout(store: Any, task: str, *, before_runs: bool = False) -> dict[str, Any]:
    """Rewrite a stored task item as Bench wrote them before a task's fields were JSON texts
    (`codec.tasks.task_fields`) and its content was read from its events (`content.py`): one
    attribute per field, content included, JSON values as JSON text, its child
    cost and evidence in numbers; and `before_runs`, also as before runs existed (no run id,
    run index keys or logs)."""
    stored = store.ingest.get_task(REF, task)  # its content, from its events
    item = where_it_was(store, f"TASK#{task}")
    fields = {**json.loads(item.pop("task")["S"]),
              **{name: getattr(stored, name) for name in TASK_CONTENT if getattr(stored, name)}}
    numbers = {"child_cost_usd": fields.pop("child_cost_usd", None),
               **{f"ev_{name}": value for name, value in fields.pop("evidence", {}).items()}}
    item |= {name: {"N": repr(value)} for name, value in numbers.items() if value is not None}
    for name, value in fields.items():
        item[name] = ({"N": repr(value)} if name in ("duration_ms", "cost_usd", "reported_cost_usd",
                                                    "cost_logged_usd") else
                      {"S": json.dumps(value)} if name in TASK_CONTENT else {"S": value})
    if before_runs:
        for name in ("run_id", "spk", "ssk", "row", "logs"):
            item.pop(name, None)
    store.client.put_item(TableName=store.table_name, Item=item)
    return item


def runs_layout(store: Any, task: str) -> dict[str, Any]:
    """Rewrite a stored span's item as Bench wrote them before the `spans` index: in the `runs`
    index (ALL), under `gsi3pk`/`gsi3sk`, without a row; the table's migration marked as not
    through that step yet (`layout.SPANS`)."""
    from bench_core.store.dynamodb.layout import MARKER, SPANS, Layout

    item = where_it_was(store, f"TASK#{task}")
    item |= {"gsi3pk": item.pop("spk"), "gsi3sk": item.pop("ssk")}
    del item["row"]
    store.client.put_item(TableName=store.table_name, Item=item)
    store.client.put_item(TableName=store.table_name,
                          Item={**MARKER, "done": {"N": str(SPANS - 1)}})
    store.table.layout = Layout()
    return item


def as_read(tasks: list[TaskState]) -> list[TaskState]:
    """What a reader sees of tasks: neither the version they were stored at nor (the same for
    every span of one run) their run id."""
    return [replace(t, version=0, run_id=None) for t in tasks]


def test_dynamodb_reads_a_run_stored_before_runs_existed_without_writing_until_it_is_migrated(
) -> None:
    """Items without `run_id` (written before runs existed), one attribute per field: a read
    walks the tree through the listings and takes the logs from the stored events, writing
    nothing; the table's migration stores the run so, and the same run comes from one Query."""
    from bench_core.store.dynamodb.migration import migrate

    from tests.aws.moto_table import WRITES, dynamo_store, requests_made

    with dynamo_store() as store:
        ingest(store, [*task_events("root"), *task_events("kid", parent="root"),
                       ev("task.log", "kid", data={"label": "step", "value": 1}),
                       *task_events("grandkid", parent="kid", output={"deep": [1, 2]})])
        for task in ("root", "kid", "grandkid"):
            assert "name" in old_layout(store, task, before_runs=True)
        root = store.ingest.get_task(REF, "root")
        assert root is not None and root.run_id is None
        with requests_made(store.client) as made:
            before = tasks_of(store, "root")
            counts = store.runs.run_counts(REF, before[0])
        assert not WRITES & set(made), made
        assert {t.task_id: t.parent_task_id for t in before} == {
            "root": None, "kid": "root", "grandkid": "kid"}
        tasks = {t.task_id: t for t in before}
        assert [e["data"]["label"] for e in tasks["kid"].logs] == ["step"]
        assert tasks["grandkid"].output == {"deep": [1, 2]}
        assert tasks["grandkid"].duration_ms == 100.0
        assert counts == RunCounts(2, 0, None)
        assert "run_id" not in store.table.get(AgentKeys("alice", "agent-1").key("TASK#kid"))
        report = migrate(store.table)
        assert (report.done, report.runs, report.tasks) == (True, 1, 3)
        item = store.table.get(AgentKeys("alice", "agent-1").key("TASK#kid"))
        assert item is not None and "task" in item and "name" not in item
        assert item["run_id"] == "root" and item["spk"] == "RUN#alice#agent-1#root"
        with requests_made(store.client) as made:
            after = tasks_of(store, "root")
            root = store.ingest.get_task(REF, "root")
            assert root is not None and store.runs.run_counts(REF, root) == counts
        assert made == ["GetItem", "Query", "Query", "BatchGetItem", "GetItem", "Query",
                        "Query"], "a run is one Query of each index now, its content by key"
        assert as_read(after) == as_read(before)


def test_dynamodb_reads_tasks_stored_one_attribute_per_field_and_rewrites_them_on_the_next_fold(
) -> None:
    from tests.aws.moto_table import dynamo_store

    with dynamo_store() as store:
        ingest(store, [ev("task.start", "t1", name="plan", input={"q": "why"}),
                       ev("task.log", "t1", data={"label": "note", "value": 1}),
                       ev("task.log", "t1", data=EVIDENCE),
                       *task_events("kid", parent="t1", cost=0.25)])
        before = store.ingest.get_task(REF, "t1")
        assert before is not None and before.evidence is not None
        old = old_layout(store, "t1")
        assert {"name", "input", "logs", "status", "ev_calls", "child_cost_usd"} <= old.keys()
        assert "task" not in old
        assert store.ingest.get_task(REF, "t1") == before
        ingest(store, [ev("task.end", "t1", status="failed", output="boom", duration_ms=5)])
        after = store.ingest.get_task(REF, "t1")
        assert after is not None
        assert (after.name, after.input, after.output, after.status, after.logs) == (
            "plan", {"q": "why"}, "boom", "failed", before.logs)
        assert (after.evidence, after.child_cost_usd) == (before.evidence, 0.25)
        item = store.table.get(AgentKeys("alice", "agent-1").key("TASK#t1"))
        assert item is not None
        assert not item.keys() & {"name", "input", "output", "status", "logs", "duration_ms",
                                  *ADDED}
        assert json.loads(item["task"])["status"] == "failed"
        assert json.loads(item["content"])["output"] == "boom"


EVIDENCE = {"label": "evidence", "provider": "openai", "model": "gpt-4o-mini",
            "input_tokens": 300, "output_tokens": 80}


def test_dynamodb_what_subtasks_add_waits_in_numbers_until_their_parents_next_fold() -> None:
    """A leaf's evidence is in its `task` text (a run's read decodes no number for it); what
    finished subtasks add to a parent folded before them is ADDed in numbers, read as part of
    its sums, and taken into its `task` text by its next fold."""
    from tests.aws.moto_table import dynamo_store

    with dynamo_store() as store:
        keys = AgentKeys("alice", "agent-1")
        start, end = task_events("parent", "agent")
        ingest(store, [start])
        ingest(store, [*task_events("llm", parent="parent", cost=0.25)[:2],
                       ev("task.log", "llm", parent_task_id="parent", data=EVIDENCE),
                       task_events("llm", parent="parent", cost=0.25)[2]])
        leaf = store.table.get(keys.key("TASK#llm"))
        assert leaf is not None and not leaf.keys() & set(ADDED)
        assert json.loads(leaf["task"])["evidence"] == {
            "cost_usd": 0.000093, "input_tokens": 300, "output_tokens": 80, "calls": 1,
            "unpriced_calls": 0}
        waiting = store.table.get(keys.key("TASK#parent"))
        assert waiting is not None and {"ev_calls", "child_cost_usd"} <= waiting.keys()
        assert "evidence" not in json.loads(waiting["task"])
        parent = store.ingest.get_task(REF, "parent")
        assert parent is not None and parent.evidence is not None
        assert (parent.evidence.calls, parent.evidence.input_tokens) == (1, 300)
        assert parent.child_cost_usd == 0.25
        ingest(store, [end])
        folded = store.table.get(keys.key("TASK#parent"))
        assert folded is not None and not folded.keys() & set(ADDED)
        assert json.loads(folded["task"])["evidence"]["calls"] == 1
        assert json.loads(folded["task"])["child_cost_usd"] == 0.25
        after = store.ingest.get_task(REF, "parent")
        assert after is not None
        assert (after.evidence, after.child_cost_usd) == (parent.evidence, 0.25)


def test_a_run_reads_page_by_page_in_start_order_as_it_reads_whole(store: Store) -> None:
    """Pages of a run, each read on from the key of the one before's last span, are the run
    read at once, in start order (spans that start in the same millisecond by id), never
    longer than asked; a page read from a span's start (`after` its start and no id) starts
    with it. What the header counts is counted alike."""
    events = [*task_events("root", "agent")]
    for i in range(23):
        events += task_events(f"s{i:02d}", parent="root" if i < 5 else f"s{i % 5:02d}",
                              status="failed" if i in (7, 19) else "success")
    same = ts()  # after every span above, however many times the session's clock has ticked
    events += [{**ev("task.start", f"tie-{x}", parent_task_id="s01", name="tie"), "ts": same}
               for x in "ba"]
    ingest(store, events)
    root = store.ingest.get_task(REF, "root")
    assert root is not None
    whole = store.runs.run_spans(REF, root, limit=WHOLE)
    assert [t.task_id for t in whole] == [*(f"s{i:02d}" for i in range(23)), "tie-a", "tie-b"]
    pages, after = [], None
    while page := store.runs.run_spans(REF, root, limit=7, after=after):
        assert len(page) <= 7
        pages.append(page)
        after = span_key(page[-1])
    assert [len(p) for p in pages] == [7, 7, 7, 4]
    assert [t.task_id for p in pages for t in p] == [t.task_id for t in whole]
    middle = whole[10]
    assert store.runs.run_spans(REF, root, limit=2, after=(middle.sort_ts, "")) == whole[10:12]
    assert store.runs.run_counts(REF, root) == RunCounts(25, 2, "s07")


def test_dynamodb_reads_a_page_of_a_run_in_one_query_of_the_page_size() -> None:
    """250 spans in three levels: a page of 100 is one Query of the `spans` index that reads
    101 entries at most (`Limit`: the page and room for a root indexed before roots were left
    out) and one of `runs` (for tasks not migrated: none here), then with content one
    BatchGetItem of the page's spans; three pages and an empty one are the run read whole. The
    counts are one Query of each whose answers carry only the failed spans' keys. No Scan, no
    request per span."""
    from tests.aws.moto_table import dynamo_store

    events = [*task_events("root")]
    for a in range(10):
        events += task_events(f"s{a}", parent="root")
        for b in range(24):
            failed = b == 23 and a in (2, 7)
            events += [*task_events(f"s{a}-{b}", parent=f"s{a}", output={"n": b},
                                    status="failed" if failed else "success"),
                       ev("task.log", f"s{a}-{b}", data={"label": "step", "value": b})]
    with dynamo_store() as store:
        for i in range(0, len(events), 400):
            ingest(store, events[i:i + 400])
        root = store.ingest.get_task(REF, "root")
        assert root is not None
        calls: list[tuple[str, dict[str, Any]]] = []
        answers: list[dict[str, Any]] = []
        store.client.meta.events.register(
            "provide-client-params.dynamodb",
            lambda model, params, **_: calls.append((model.name, params)))
        store.client.meta.events.register(
            "after-call.dynamodb", lambda parsed, **_: answers.append(parsed))
        whole = store.runs.run_spans(REF, root, limit=WHOLE)
        light = store.runs.run_spans(REF, root, limit=100, content=False)
        del calls[:], answers[:]
        paged: list[TaskState] = []
        after = None
        while page := store.runs.run_spans(REF, root, limit=100, after=after):
            paged += page
            after = span_key(page[-1])
        assert [name for name, _ in calls] == ["Query", "Query", "BatchGetItem"] * 3 + [
            "Query", "Query"]
        queries = [(p["IndexName"], p["Limit"], len(a["Items"]))
                   for (name, p), a in zip(calls, answers, strict=True) if name == "Query"]
        assert queries == [("spans", 101, 101), ("runs", 101, 0)] * 2 + [
            ("spans", 101, 50), ("runs", 101, 0), ("spans", 101, 0), ("runs", 101, 0)]
        assert [len(p["RequestItems"]["bench-test"]["Keys"]) for name, p in calls
                if name == "BatchGetItem"] == [100, 100, 50]
        del calls[:], answers[:]
        counts = store.runs.run_counts(REF, root)
        assert [(name, p["IndexName"]) for name, p in calls] == [("Query", "spans"),
                                                                 ("Query", "runs")]
        assert (answers[0]["ScannedCount"], len(answers[0]["Items"])) == (250, 2)
    assert counts == RunCounts(250, 2, "s2-23")
    assert paged == whole and len(whole) == 250
    leaf = {t.task_id: t for t in whole}["s3-7"]
    assert (leaf.output, [e["data"]["value"] for e in leaf.logs]) == ({"n": 7}, [7])
    assert [t.task_id for t in light] == [t.task_id for t in whole[:100]]
    assert light[50].output is None and whole[50].output is not None


def test_dynamodb_reads_a_task_the_late_parents_move_missed_and_the_migration_moves_it(
) -> None:
    """A batch writes `late` under run `middle` while another moves `middle` into `root`'s run
    and misses it (the index lags the table): reads of `root`'s run find it through `middle`'s
    `moved_at`, writing nothing, for as long as such stragglers may come; the table's migration
    moves it, and forgets a move once it is that old."""
    from bench_core.store.dynamodb.migration import MARKER, migrate

    from tests.aws.moto_table import WRITES, dynamo_store, requests_made

    with dynamo_store() as store:
        ingest(store, task_events("leaf", "llm", parent="middle"))
        ingest(store, [*task_events("root", "agent"), *task_events("middle", "tool",
                                                                     parent="root")])
        assert run_of(store, "root") == {"root": None, "middle": "root", "leaf": "middle"}
        client, table = store.client, store.table_name

        keys = AgentKeys("alice", "agent-1")

        def item(task: str) -> dict:
            return client.get_item(TableName=table, Key=keys.key(f"TASK#{task}"))["Item"]

        def straggle(task: str) -> None:
            client.put_item(TableName=table, Item={
                **item("leaf"), **keys.key(f"TASK#{task}"), "run_id": {"S": "middle"},
                "spk": {"S": "RUN#alice#agent-1#middle"},
                "ssk": {"S": item("leaf")["ssk"]["S"].replace("leaf", task)}})

        straggle("late")
        assert "moved_at" in item("middle")
        with requests_made(client) as made:
            assert run_of(store, "root") == {"root": None, "middle": "root", "leaf": "middle",
                                             "late": "middle"}
        assert not WRITES & set(made), made
        assert item("late")["run_id"]["S"] == "middle"
        assert migrate(store.table).moved == 1
        assert item("late")["run_id"]["S"] == "root"
        assert item("late")["spk"]["S"] == "RUN#alice#agent-1#root"
        assert run_of(store, "root")["late"] == "middle"  # from the run's own Query now
        assert "moved_at" in item("middle")  # recently moved: stragglers may still come
        client.update_item(TableName=table, Key=keys.key("TASK#middle"),
                           UpdateExpression="SET moved_at = :old",
                           ExpressionAttributeValues={":old": {"S": "2026-01-01T00:00:00.000Z"}})
        straggle("later")
        assert "later" not in run_of(store, "root")  # reads look no more
        store.table.delete(MARKER)  # as if the code had moved on a version
        assert migrate(store.table).moved == 1
        assert run_of(store, "root")["later"] == "middle"
        assert "moved_at" not in item("middle")


def test_reading_a_run_leaves_nothing_for_the_collector_to_find(store: Store) -> None:
    """The run JSON is read with the collector held off (`runtime.collector`), which is sound
    because what the read builds is freed by reference counting alone: no cycles are left for
    the collector to find, and it runs again after."""
    events = [*task_events("root", "plan")]
    for i in range(30):
        events += [*task_events(f"s{i}", parent="root", output={"n": i}),
                   ev("task.log", f"s{i}", data={"label": "step", "value": i}),
                   ev("task.log", f"s{i}", data=EVIDENCE)]
    ingest(store, events)
    services = Services(Settings(), store)
    run_json_body(services, REF, ANONYMOUS, "root", None)  # what a first read loads

    def garbage_after_a_read() -> int:
        gc.collect()
        body = run_json_body(services, REF, ANONYMOUS, "root", None)
        assert gc.isenabled() and json.loads(body)["span_count"] == 31
        return gc.collect()

    # the fewest of three: threads of earlier tests (moto's) may leave garbage meanwhile, a
    # read that made cycles would leave them every time
    assert min(garbage_after_a_read() for _ in range(3)) == 0


def test_a_runs_head_is_what_the_three_reads_give(store: Store) -> None:
    """The agent, the task and the insights, as `get_agent`, `get_task` and `get_insights`
    read them: a subtask, an unknown task, a placeholder and an unknown agent included."""
    ingest(store, [*task_events("root"), *task_events("kid", parent="root"),
                   *task_events("orphan", parent="not-yet")])
    store.evals.save_insights(REF, {"clusters": [{"label": "timeouts", "count": 2, "share": 0.5,
                                            "example_task_ids": ["root"]}],
                              "computed_at": "2026-12-02T17:00:00.000Z", "private": False})
    for task_id in ("root", "kid", "missing", "not-yet"):
        head = store.runs.run_head(REF, task_id)
        assert head == RunHead(store.agents.get_agent(REF), store.ingest.get_task(REF, task_id),
                               store.evals.get_insights(REF)), task_id
    assert store.runs.run_head(REF, "not-yet").task is None  # a placeholder is no task yet
    nobody = store.runs.run_head(AgentRef("nobody", "agent-1"), "root")
    assert nobody == RunHead(None, None, None)


def test_dynamodb_reads_a_runs_head_in_one_request_and_its_content_from_its_pages() -> None:
    """The agent, the task and the insights in one BatchGetItem; the task's content from the
    page its events are on in one more, which the process keeps: the next read of the head
    is one request again."""
    from tests.aws.moto_table import dynamo_store

    with dynamo_store() as store:
        ingest(store, task_events("root", input={"q": "why"}))
        calls: list[str] = []
        store.client.meta.events.register(
            "provide-client-params.dynamodb", lambda model, **_: calls.append(model.name))
        head = store.runs.run_head(REF, "root")
        assert calls == ["BatchGetItem", "BatchGetItem"]
        again = store.runs.run_head(REF, "root")
    assert calls == ["BatchGetItem"] * 3 and again == head
    assert head.agent is not None and head.insights is None
    assert head.task is not None and (head.task.input, head.task.output) == ({"q": "why"}, "ok")


def test_a_run_bigger_than_a_read_is_answered_page_by_page_and_drawn_from_a_window(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """With reads of 10 spans, a run of 25 is big: its JSON pages through every span in start
    order, each page counted as the first was; its page draws the first 10 under the root,
    a focused span's subtree read from its start, and a selected span beyond the window."""
    monkeypatch.setattr(reads, "SPANS_PAGE", 10)
    events = [*task_events("root", "agent")]
    for i in range(24):
        events += task_events(f"s{i:02d}", parent="root" if i % 6 == 0 else f"s{i - i % 6:02d}",
                              status="failed" if i in (9, 20) else "success")
    ingest(store, events)
    answer = reads.run_answer(store, REF, ANONYMOUS, "root", None)
    assert (answer["span_count"], answer["failed_spans"], answer["first_failed_span"],
            answer["depth"], answer["span_order"]) == (25, 2, "s09", None, "start")
    seen = [s["task_id"] for s in answer["spans"]]
    assert len(seen) == 10 and answer["spans"][1]["children"] is None
    while answer["next_cursor"]:
        answer = reads.run_answer(store, REF, ANONYMOUS, "root", answer["next_cursor"])
        assert (answer["span_count"], answer["first_failed_span"]) == (25, "s09")
        seen += [s["task_id"] for s in answer["spans"]]
    assert seen == ["root", *(f"s{i:02d}" for i in range(24))]
    page = reads.run_page(store, REF, ANONYMOUS, "root", span="root")
    assert isinstance(page, dict)
    assert [r["row"].node.task_id for r in page["rows"]] == ["root", *(
        f"s{i:02d}" for i in range(10))]
    window = page["window"]
    assert {k: window[k] for k in ("page", "of", "position", "read")} == {
        "page": 10, "of": 24, "position": 0, "read": 10}
    drawn = [r["row"].node.task_id for r in page["rows"]]
    while window["next"]:  # window by window, each span under its parent (read by key)
        page = reads.run_page(store, REF, ANONYMOUS, "root", after=window["next"])
        assert isinstance(page, dict)
        window = page["window"]
        drawn += [r["row"].node.task_id for r in page["rows"] if r["row"].node.task_id
                  not in drawn]
    assert sorted(drawn) == ["root", *(f"s{i:02d}" for i in range(24))]
    assert [r["row"].node.task_id for r in page["rows"]] == ["root", "s18", *(
        f"s{i:02d}" for i in range(20, 24))]
    assert (window["position"], window["read"], window["next"]) == (20, 4, None)
    plain = reads.run_page(store, REF, ANONYMOUS, "root")  # opens on its first failure
    assert isinstance(plain, dict) and plain["selected"]["task_id"] == "s09"
    page = reads.run_page(store, REF, ANONYMOUS, "root", span="s20")  # beyond the window
    assert isinstance(page, dict)
    assert [r["row"].node.task_id for r in page["rows"]] == ["root", "s18", *(
        f"s{i:02d}" for i in range(20, 24))]
    assert page["selected"]["task_id"] == "s20" and page["selected_drawn"]
    assert page["selected"]["children"] is None and page["window"]["position"] is None
    focused = reads.run_page(store, REF, ANONYMOUS, "root", focus="s18")
    assert isinstance(focused, dict)
    assert [r["row"].node.task_id for r in focused["rows"]] == [f"s{i}" for i in range(18, 24)]
    assert [n.task_id for n in focused["trail"]] == ["root"]
    with pytest.raises(NotFound):
        reads.run_page(store, REF, ANONYMOUS, "root", focus="not-in-this-run")


def test_an_answer_stops_at_its_bytes_and_a_span_bigger_than_them_goes_out_alone(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """With answers of 10,000 bytes of spans, a run of a small root and spans of some 4,000
    bytes (one of 30,000) is answered two or three spans at a time, the big one alone, every
    span once in start order; each page counted as the first was. The same run fits one
    answer of the usual size: whole, in tree order."""
    events = [*task_events("root", "agent")]
    for name, chars in (("s0", 3500), ("s1", 3500), ("s2", 3500), ("s3", 3500),
                        ("big", 30_000), ("s4", 3500), ("s5", 3500)):
        events += task_events(name, parent="root", output="x" * chars)
    ingest(store, events)
    owner = Viewer("alice")
    assert reads.run_answer(store, REF, owner, "root", None)["span_order"] == "tree"
    monkeypatch.setattr(reads, "ANSWER_BYTES", 10_000)
    pages, cursor = [], None
    while True:
        answer = reads.run_answer(store, REF, owner, "root", cursor)
        assert (answer["span_order"], answer["span_count"]) == ("start", 8)
        pages.append([s["task_id"] for s in answer["spans"]])
        assert all(s["output"] in ("ok", "x" * 3500, "x" * 30_000) for s in answer["spans"])
        if not (cursor := answer["next_cursor"]):
            break
    assert pages == [["root", "s0", "s1"], ["s2", "s3"], ["big"], ["s4", "s5"]]


def test_the_json_of_a_run_that_fits_one_answer_reads_each_span_once_content_and_all(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of 250 spans (reads of `CONTENT_READ` at a time) is answered whole from the
    spans its answer reads, in tree order and placed in its tree (depth, start, what lies
    below), without reading them first without content: each span is read once, as the
    visitor and as the owner."""
    events = [*task_events("root", "agent")]
    for i in range(249):
        events += task_events(f"s{i:03d}", parent="root" if i < 10 else f"s{i % 10:03d}",
                              status="failed" if i == 123 else "success")
    ingest(store, events)
    root, *spans = tasks_of(store, "root")
    drawn = list(walk(build_tree(root, spans)))
    expected = {n.task_id: (n.depth, n.start_offset_ms, len(n.children), n.descendants,
                            n.failed_below) for n in drawn}
    reading = store.runs.run_spans
    read: list[tuple[str, bool]] = []

    def run_spans(*args: Any, content: bool = True, **options: Any) -> list[TaskState]:
        found = reading(*args, content=content, **options)
        read.extend((t.task_id, content) for t in found)
        return found

    monkeypatch.setattr(store.runs, "run_spans", run_spans)
    for viewer in (ANONYMOUS, Viewer("alice")):
        read.clear()
        answer = reads.run_answer(store, REF, viewer, "root", None)
        assert (answer["span_order"], answer["next_cursor"], answer["span_count"],
                answer["failed_spans"], answer["first_failed_span"], answer["depth"]) == (
            "tree", None, 250, 1, "s123", 2)
        assert sorted(read) == [(f"s{i:03d}", True) for i in range(249)]
        assert [s["task_id"] for s in answer["spans"]] == [n.task_id for n in drawn]
        assert {s["task_id"]: (s["depth"], s["start_offset_ms"], s["children"],
                               s["descendants"], s["failed_below"])
                for s in answer["spans"]} == expected
        assert answer["spans"][5]["output"] == ("ok" if viewer.login else HIDDEN)


@pytest.mark.parametrize("hidden", [("hide_inputs",), ("hide_outputs",),
                                    ("hide_inputs", "hide_outputs")])
def test_a_run_read_for_a_visitor_leaves_out_only_what_the_visitor_may_not_see(
        store: Store, hidden: tuple[str, ...]) -> None:
    """The JSON reads a run's spans for its viewer (`run_spans`' `inputs` and `outputs`):
    SQLite leaves out the inputs or outputs a visitor may not see, the rest of a span is read
    as ever, and the answer shows what the agent shows and hides the rest, on every store."""
    ingest(store, [*task_events("root", "agent"),
                   *task_events("s1", parent="root", output="the answer"),
                   ev("task.log", "s1", data={"label": "evidence", "provider": "openai",
                                              "model": "gpt-4o-mini", "input_tokens": 3})])
    store.agents.update_agent(REF, {"hide_inputs": "hide_inputs" in hidden,
                                    "hide_outputs": "hide_outputs" in hidden})
    root, whole = tasks_of(store, "root")
    inputs, outputs = "hide_inputs" not in hidden, "hide_outputs" not in hidden
    (read,) = store.runs.run_spans(REF, root, limit=WHOLE, inputs=inputs, outputs=outputs)
    assert read == replace(whole, input=whole.input if inputs else read.input,
                           output=whole.output if outputs else read.output)
    if isinstance(store, SqliteStore):
        assert (read.input is None) != inputs and (read.output is None) != outputs
    span = reads.run_answer(store, REF, ANONYMOUS, "root", None)["spans"][1]
    assert span["input"] == (whole.input if inputs else HIDDEN)
    assert span["output"] == ("the answer" if outputs else HIDDEN)
    assert span["evidence"]["input_tokens"] == 3 and span["name"] == whole.name
    owned = reads.run_answer(store, REF, Viewer("alice"), "root", None)["spans"][1]
    assert (owned["input"], owned["output"]) == (whole.input, "the answer")


def test_dynamodb_reads_a_page_of_the_runs_list_by_what_it_shows() -> None:
    """300 runs: an unfiltered page of 50 reads 50 roots by key (and 51 keys of the index, one
    to know the list goes on), under 27 RRU by DynamoDB's sizing rules; a filtered page reads
    on past the roots it skips, and only them. Paged with the cursor, each filter gives every
    run it keeps, newest first, as the whole list filtered does."""
    import boto3

    from tests.aws.moto_table import TABLE_NAME, dynamo_store
    from tests.perf.dynamodb_cost import Meter

    def run_events(n: int) -> list[dict[str, Any]]:
        return task_events(f"r{n:03d}", "search" if n % 2 else "fetch",
                           status="failed" if n % 3 == 0 else "success",
                           duration_ms=100 * (n % 10))

    with dynamo_store() as store:
        for first in range(0, 300, 50):
            ingest(store, [e for n in range(first, first + 50) for e in run_events(n)])
        meter = Meter(TABLE_NAME, boto3.client("dynamodb"))
        meter.attach(store.client)
        by_key: list[int] = []
        scanned: list[int] = []
        store.client.meta.events.register(
            "provide-client-params.dynamodb.BatchGetItem",
            lambda params, **_: by_key.extend(len(r["Keys"]) for r in params["RequestItems"].values()))
        store.client.meta.events.register(
            "after-call.dynamodb.Query", lambda parsed, **_: scanned.append(parsed["ScannedCount"]))

        def paged(where: RunFilter) -> list[list[str]]:
            pages, cursor = [], None
            while True:
                found = store.runs.list_runs(REF, where, limit=50, cursor=cursor)
                cursor = found.next_cursor
                pages.append([t.task_id for t in found.runs])
                if cursor is None:
                    return pages

        meter.reset()
        found = store.runs.list_runs(REF, RunFilter(), limit=50)
        assert len(found.runs) == 50 and found.next_cursor
        assert (sum(by_key), sum(scanned)) == (50, 51)
        assert meter.rru <= 27, f"{meter.rru:.1f} RRU for a page of 50"
        newest_first = [f"r{n:03d}" for n in reversed(range(300))]
        filters = {RunFilter(): lambda n: True, RunFilter(status="failed"): lambda n: n % 3 == 0,
                   RunFilter(name="search"): lambda n: n % 2 == 1,
                   RunFilter(duration=Range(low=800)): lambda n: n % 10 >= 8}
        for where, keeps in filters.items():
            del by_key[:]
            pages = paged(where)
            expected = [i for i in newest_first if keeps(int(i[1:]))]
            assert [i for p in pages for i in p] == expected, where
            assert all(len(p) == 50 for p in pages[:-1]), where
            roots = 300 if where.status is None else len(expected)
            assert sum(by_key) <= roots, (where, sum(by_key))


def test_siblings_that_start_in_one_millisecond_keep_the_order_they_were_recorded(
        store: Store) -> None:
    """Four calls start (and end) in the same millisecond, recorded c, d, a, b over two
    batches (d starts in the first and ends in the second, which ends with the run a
    millisecond later): the tree draws them in that order, not by their ids, from the rows
    the page reads and from the spans read whole."""
    at = ts(0)

    def call(kind: str, task_id: str, **fields: Any) -> dict[str, Any]:
        return {**ev(kind, task_id, name=task_id, parent_task_id="root", **fields), "ts": at}

    def calls(task_id: str) -> list[dict[str, Any]]:
        return [call("task.start", task_id), call("task.end", task_id, status="success",
                                                    output="ok", duration_ms=0)]

    ingest(store, [{**ev("task.start", "root", name="agent"), "ts": at}, *calls("c"),
                   call("task.start", "d")])
    ingest(store, [call("task.end", "d", status="success", output="ok", duration_ms=0),
                   *calls("a"), *calls("b"),
                   {**ev("task.end", "root", status="success", output="ok", duration_ms=1),
                    "ts": ts(1)}])
    root = store.ingest.get_task(REF, "root")
    assert root is not None
    for content in (False, True):
        spans = store.runs.run_spans(REF, root, limit=WHOLE, content=content)
        tree = build_tree(root, spans)
        assert [child.task_id for child in tree.children] == ["c", "d", "a", "b"], content


def test_a_span_keeps_the_model_its_first_evidence_record_names(store: Store) -> None:
    """What the run page's rows show beside a span, read with its row and whole: the model and
    the tokens (and evidence cost) its records proved; a span that proved no usage names
    none."""
    evidence = {"label": "evidence", "provider": "openai", "model": "gpt-4o-mini",
                "input_tokens": 10, "output_tokens": 2}
    ingest(store, [*task_events("root", "agent")[:1],
                   ev("task.start", "llm", name="chat", parent_task_id="root"),
                   ev("task.log", "llm", data=evidence),
                   ev("task.log", "llm", data={**evidence, "model": "gpt-4o"}),
                   ev("task.end", "llm", status="success", output="ok", duration_ms=3),
                   *task_events("tool", "search", parent="root"),
                   *task_events("root", "agent")[1:]])
    root = store.ingest.get_task(REF, "root")
    assert root is not None
    for content in (False, True):
        read = store.runs.run_spans(REF, root, limit=WHOLE, content=content)
        assert {t.task_id: t.model for t in read} == {"llm": "gpt-4o-mini", "tool": None}
        usage = {t.task_id: t.evidence and (t.evidence.input_tokens, t.evidence.output_tokens,
                                            t.evidence.calls, t.evidence.cost_usd is not None)
                 for t in read}  # the tokens and evidence cost its tree row shows
        assert usage == {"llm": (20, 4, 2, True), "tool": None}, content


def test_a_runs_counts_keep_where_its_failed_spans_stand_in_start_order(store: Store) -> None:
    """What a run too big to read whole goes from error to error by."""
    events = [*task_events("root", "agent")]
    for i in (3, 1, 2, 0):
        events += task_events(f"s{i}", parent="root", status="failed" if i != 2 else "success")
    ingest(store, events)
    root = store.ingest.get_task(REF, "root")
    assert root is not None
    spans = {t.task_id: t for t in store.runs.run_spans(REF, root, limit=WHOLE)}
    counts = store.runs.run_counts(REF, root)
    assert counts.failures == tuple(span_key(spans[f"s{i}"]) for i in (3, 1, 0))
    assert counts.first_failed == "s3"
