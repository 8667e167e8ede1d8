"""The table's migration (`store/dynamodb/migration.py`) and the reads around it: before it, the
read routes of a deployment answer items of older layouts as they are, writing nothing; the
stack's `Custom::TableMigration` (its handler loaded as Lambda loads it, with the template's
environment, answering at a real `ResponseURL`) rewrites them; after it, every route answers
the same. Every read any of them makes is decoded by the adapter's fast path (`wire`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import botocore.client
import pytest
from bench_core.cli import main
from bench_core.domain.models import AgentMeta, AgentRef
from bench_core.store.dynamodb import migration, wire
from bench_core.store.dynamodb.codec.keys import AgentKeys
from bench_core.store.dynamodb.migration import MARKER, migrate
from bench_core.store.dynamodb.store import DynamoStore

from tests.aws import cfn
from tests.aws.lambda_runtime import LambdaContext, fresh_function_module
from tests.aws.moto_table import TABLE_NAME, WRITES, dynamo_store, requests_made
from tests.aws.test_handlers import Deployment, assert_granted
from tests.aws.test_handlers import deployment as _deployment  # noqa: F401 - the fixture
from tests.aws.test_session_secret import CloudFormation
from tests.contract.store.test_runs import old_layout, runs_layout, where_it_was
from tests.factories import clean, ev, task_events

REF = AgentRef("alice", "agent-1")
KEYS = AgentKeys("alice", "agent-1")
A = "/u/alice/agent-1"
API = "/api/agents/alice/agent-1"
READS = [A, f"{A}/runs", (f"{A}/runs", "status=failed"), f"{A}/runs/root",
         (f"{A}/runs/root", "span=kid"), f"{A}/runs/kid", f"{A}/runs/root2", f"{A}/runs/t1",
         API, f"{API}/runs", (f"{API}/runs", "status=failed"), f"{API}/runs/root",
         f"{API}/runs/grandkid", f"{API}/runs/root2", f"{API}/runs/t1", f"{API}/tasks",
         (f"{API}/tasks", "parent=kid"), f"{API}/tasks/kid", f"{API}/events",
         "/leaderboard", "/api/leaderboard", "/badge/alice/agent-1.svg", "/embed/alice/agent-1",
         "/og/alice/agent-1.png", "/vs/@alice/agent-1/@alice/agent-1"]
"""What a visitor reads of the agent: its profile, runs (a run stored before runs existed,
one whose late parent's move missed a task, one of a task stored one attribute per field, a
root indexed as roots once were), tasks, events, and the surfaces that list it."""


def ingest(store: DynamoStore, events: list[dict[str, Any]]) -> None:
    store.ingest.ingest("alice", AgentMeta(slug="agent-1"), clean(events))


def item(store: DynamoStore, task: str) -> dict[str, Any]:
    """Task `task`'s item as DynamoDB sends it, where it lives or where it was."""
    for key in (KEYS.key(f"TASK#{task}"), {"pk": {"S": KEYS.pk}, "sk": {"S": f"TASK#{task}"}}):
        found = store.client.get_item(TableName=store.table_name, Key=key).get("Item")
        if found:
            return dict(found)
    raise KeyError(task)


def spread_items(store: DynamoStore) -> list[dict[str, Any]]:
    """The agent's tasks, chunks, pages and claims where they now live (`codec.keys`)."""
    items = store.client.scan(TableName=store.table_name)["Items"]
    return [i for i in items if i["pk"]["S"].startswith("PART#")]


def put(store: DynamoStore, attributes: dict[str, Any]) -> None:
    store.client.put_item(TableName=store.table_name, Item=attributes)


def older_layouts(store: DynamoStore) -> None:
    """An agent whose items are what older versions of Bench, and a race, left: a run stored
    before runs existed, one attribute per field; a task stored one attribute per field; a
    run's root in the `runs` index; spans in the `runs` index, as before `spans`; a task a move
    of its run missed, recently, in `runs` too."""
    ingest(store, [*task_events("root", "plan"), *task_events("kid", parent="root"),
                   ev("task.log", "kid", data={"label": "step", "value": 1}),
                   *task_events("grandkid", parent="kid", output={"deep": [1, 2]},
                                status="failed")])
    ingest(store, [ev("task.start", "t1", name="draft", input={"q": "why"}),
                   ev("task.log", "t1", data={"label": "note", "value": 2}),
                   *task_events("t1a", parent="t1", cost=0.25)])
    ingest(store, task_events("leaf", "llm", parent="middle"))
    ingest(store, [*task_events("root2", "agent"), *task_events("middle", "tool",
                                                                  parent="root2")])
    for task in ("root", "kid", "grandkid"):
        old_layout(store, task, before_runs=True)
    old_layout(store, "t1")
    put(store, {**item(store, "root2"), "gsi3pk": {"S": f"RUN#{KEYS.name}#root2"},
                "gsi3sk": {"S": item(store, "root2")["tlsk"]["S"]}})
    for task in ("middle", "t1a"):
        runs_layout(store, task)
    leaf = runs_layout(store, "leaf")
    put(store, {**leaf, "sk": {"S": "TASK#late"}, "run_id": {"S": "middle"},
                "gsi3pk": {"S": f"RUN#{KEYS.name}#middle"},
                "gsi3sk": {"S": leaf["gsi3sk"]["S"].replace("leaf", "late")}})
    for spread in spread_items(store):  # and the rest, as before the partitions
        where_it_was(store, spread["sk"]["S"])
    store.agents.update_agent(REF, {"hide_inputs": False, "hide_outputs": False})


# ---- the deployment: reads before, the stack's migration, reads after --------------------------


@pytest.fixture
def site(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
         ) -> Iterator[tuple[Deployment, list[tuple[str, bool]]]]:
    """The deployment, and every read its functions make: (operation, decoded by `wire`)."""
    deployment: Deployment = request.getfixturevalue("_deployment")
    reads: list[tuple[str, bool]] = []
    recording = botocore.client.BaseClient._make_api_call

    def observing(client: Any, operation: str, params: dict[str, Any]) -> Any:
        answer = recording(client, operation, params)
        if client.meta.service_model.service_name == "dynamodb" and operation in wire.ITEMS:
            reads.append((operation, wire.DECODED in answer))
        return answer

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", observing)
    yield deployment, reads


def read_everything(site: Deployment) -> dict[str, tuple[int, bytes]]:
    answers = {}
    for read in READS:
        path, query = (read, "") if isinstance(read, str) else read
        reply = site.request("GET", path, query=query)
        answers[f"{path}?{query}"] = (reply.status, reply.body)
    return answers


def writes_by_functions(site: Deployment) -> list[tuple[str, str]]:
    return [(function, operation) for function, service, operation, _ in site.aws.calls
            if service == "dynamodb" and operation in WRITES]


def test_reads_write_nothing_and_answer_the_same_before_and_after_the_stacks_migration(
        site: tuple[Deployment, list[tuple[str, bool]]], transformed: dict[str, Any]) -> None:
    deployment, reads = site
    older_layouts(deployment.store)
    deployment.aws.calls.clear()
    reads.clear()
    before = read_everything(deployment)
    assert writes_by_functions(deployment) == []
    assert {status for status, _ in before.values()} <= {200, 302, 303, 307}, before.keys()
    assert {operation for operation, _ in reads} == {"GetItem", "Query", "BatchGetItem"}
    assert [read for read in reads if not read[1]] == [], "reads escaped the fast decoder"

    cloudformation = CloudFormation()
    function = cfn.functions(transformed)["TableMigrationFunction"]
    environment = cfn.environment(transformed, "TableMigrationFunction", deployment.refs)
    resource = transformed["Resources"]["TableMigration"]

    def deploy(request_type: str) -> dict[str, Any]:
        deployment.aws.current = "TableMigrationFunction"
        try:
            with mock.patch.dict(os.environ, environment):
                properties = {k: cfn.resolve(v, transformed, deployment.refs)
                              for k, v in resource["Properties"].items() if k != "ServiceToken"}
                fresh_function_module(function.code_dir).handler(
                    cloudformation.request(request_type, properties),
                    LambdaContext("TableMigrationFunction"))
        finally:
            deployment.aws.current = "test"
        return cloudformation.answers[-1]

    try:
        answer = deploy("Create")
        assert answer["Status"] == "SUCCESS", answer
        assert {k: answer["Data"][k] for k in ("done", "runs", "tasks", "moved")} == {
            "done": "True", "runs": "1", "tasks": "9", "moved": "1"}
        assert float(answer["Data"]["read_units"]) > 0 < float(answer["Data"]["write_units"])
        assert_granted(transformed, deployment.aws.calls, ("TableMigrationFunction",))
        assert "run_id" in item(deployment.store, "kid")
        assert "gsi3pk" not in item(deployment.store, "root2")
        for span in ("kid", "middle", "leaf", "late"):
            assert "gsi3pk" not in item(deployment.store, span)
            assert {"spk", "ssk", "row"} <= item(deployment.store, span).keys()
        assert "task" in item(deployment.store, "t1")
        assert item(deployment.store, "late")["run_id"] == {"S": "root2"}

        deployment.aws.calls.clear()
        reads.clear()
        after = read_everything(deployment)
        assert writes_by_functions(deployment) == []
        assert [read for read in reads if not read[1]] == [], "reads escaped the fast decoder"
        for read, (status, body) in before.items():
            assert after[read][0] == status, read
            if read.startswith("/api/"):
                assert after[read][1] == body, read

        deployment.aws.calls.clear()
        answer = deploy("Update")  # the next deployment: the table is through
        assert (answer["Status"], answer["Data"]["done"], answer["Data"]["scanned"]) == (
            "SUCCESS", "True", "0")
        assert [call[2] for call in deployment.aws.calls] == ["GetItem"]
        assert deploy("Delete")["Status"] == "SUCCESS"
    finally:
        cloudformation.server.shutdown()


def test_the_migration_runs_on_every_deployment_that_brings_new_code(
        transformed: dict[str, Any]) -> None:
    """CloudFormation updates a custom resource only when its properties change: the core
    layer's version changes with the code."""
    properties = cfn.load_template()["Resources"]["TableMigration"]["Properties"]
    assert properties["Code"] == {"Ref": "CoreLayer"}
    assert properties["Table"] == {"Ref": "BenchTable"}
    function = transformed["Resources"]["TableMigrationFunction"]["Properties"]
    assert function["Timeout"] == 900


# ---- the pass itself ----------------------------------------------------------------------------


def snapshot(store: DynamoStore) -> list[dict[str, Any]]:
    """Every item but the migration's own, in key order."""
    items = store.client.scan(TableName=store.table_name)["Items"]
    return sorted((i for i in items if i["pk"] != MARKER["pk"]),
                  key=lambda i: (i["pk"]["S"], i["sk"]["S"]))


def test_a_second_pass_writes_nothing_and_a_migrated_table_costs_one_read() -> None:
    with dynamo_store() as store:
        older_layouts(store)
        first = migrate(store.table)
        assert first.done and first.tasks == 9
        migrated = snapshot(store)
        store.table.delete(MARKER)
        with requests_made(store.client) as made:
            again = migrate(store.table)
        assert (again.done, again.runs, again.tasks, again.moved) == (True, 0, 0, 0)
        assert [op for op in made if op in WRITES] == ["UpdateItem"]  # where the pass is
        assert snapshot(store) == migrated
        with requests_made(store.client) as made:
            assert migrate(store.table).done
        assert made == ["GetItem"]


def test_a_pass_stopped_by_its_deadline_goes_on_where_it_stopped() -> None:
    with dynamo_store() as store:
        older_layouts(store)
        total = len(store.client.scan(TableName=store.table_name)["Items"])
        first = migrate(store.table, deadline=time.monotonic(), page=4)
        assert not first.done and first.scanned == 4
        assert "resume" in (store.table.get(MARKER) or {})
        rest = migrate(store.table, page=4)
        # and the marker, and the items it moved where the Scan had not been yet
        assert rest.done and first.scanned + rest.scanned >= total + 1
        assert (first.tasks + rest.tasks, first.moved + rest.moved) == (9, 1)
        assert "resume" not in (store.table.get(MARKER) or {})


@pytest.mark.parametrize(("task", "status"), [("t1", "failed"), ("kid", "success")])
def test_a_batch_writing_an_old_task_while_the_pass_runs_is_kept(
        task: str, status: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pass's copy of the item is stale by the time it writes: its conditional write
    fails, it reads the item again, and what the batch wrote stays (`kid` ended already,
    `t1` had not)."""
    with dynamo_store() as store:
        older_layouts(store)
        original: Callable[..., None] = migration._Pass.item
        batch = [ev("task.log", task, data={"label": "late", "value": 3}),
                 ev("task.end", task, status="failed", output="boom", duration_ms=5)]

        def racing(self: Any, found: dict[str, Any]) -> None:
            if found["sk"] == f"TASK#{task}" and batch:
                ingest(store, [batch.pop(0), batch.pop(0)])
            original(self, found)

        monkeypatch.setattr(migration._Pass, "item", racing)
        assert migrate(store.table).done and not batch
        stored = store.ingest.get_task(REF, task)
        assert stored is not None and stored.status == status
        assert stored.logs[-1]["data"] == {"label": "late", "value": 3}
        assert "task" in item(store, task) and "run_id" in item(store, task)


def test_bench_server_migrate_runs_the_pass_on_the_table_the_environment_names(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with dynamo_store() as store:
        older_layouts(store)
        monkeypatch.setenv("BENCH_STORE", "dynamodb")
        monkeypatch.setenv("BENCH_TABLE_NAME", TABLE_NAME)
        assert main(["migrate"]) == 0
        assert "done=True" in (out := capsys.readouterr().out) and "tasks=9" in out
        assert "task" in item(store, "t1")
        assert main(["migrate"]) == 0
        assert "scanned=0" in capsys.readouterr().out
    monkeypatch.setenv("BENCH_STORE", "sqlite")
    assert main(["migrate", "--data-dir", str(tmp_path)]) == 0  # SQLite migrates as it opens
    assert capsys.readouterr().out == "migration: done=True\n"
