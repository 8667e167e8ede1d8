"""An agent's tasks and events on DynamoDB are spread over its partitions (`codec/keys.py`), so a
hot agent's writes do not meet on one partition key; a table whose items older code kept under
the agent's own key answers the same while its migration moves them (`layout.py`,
`rehome.py`), a batch or an eval writing an old task moves it first, and nothing is counted
twice or written beside an old copy."""

from __future__ import annotations

from typing import Any

from bench_core.domain.models import AgentMeta, AgentRef, EvalResult
from bench_core.store.dynamodb.codec.keys import PARTITIONS, AgentKeys
from bench_core.store.dynamodb.migration import migrate
from bench_core.store.dynamodb.store import DynamoStore

from tests.aws.moto_table import dynamo_store
from tests.contract.store.test_runs import where_it_was
from tests.factories import clean, ev, task_events

REF = AgentRef("alice", "agent-1")
KEYS = AgentKeys(REF.login, REF.slug)
SPREAD_KINDS = ("TASK#", "TASKX#", "B#", "EV#")


def ingest(store: DynamoStore, events: list[dict[str, Any]]) -> tuple[int, int]:
    outcome = store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), clean(events))
    return outcome.accepted, outcome.duplicates


def items(store: DynamoStore) -> list[dict[str, Any]]:
    found = store.client.scan(TableName=store.table_name)["Items"]
    return [{k: next(iter(v.values())) for k, v in i.items() if k in ("pk", "sk")} for i in found]


def under_agent(store: DynamoStore) -> list[str]:
    """The sort keys of the agent's tasks and events still under its own partition key."""
    return [i["sk"] for i in items(store)
            if i["pk"] == KEYS.pk and i["sk"].startswith(SPREAD_KINDS)]


def test_a_busy_agents_tasks_and_events_are_spread_over_its_partitions() -> None:
    with dynamo_store() as store:
        for n in range(8):
            ingest(store, [e for r in range(5) for e in task_events(f"run-{n}-{r}")]
                   + [ev("agent.note", data={"n": n})])  # an event of no task: a claim
        kinds = {kind: {i["pk"] for i in items(store) if i["sk"].startswith(kind)}
                 for kind in ("TASK#", "B#", "EV#")}
        assert under_agent(store) == []
        assert all(pk.startswith("PART#alice#agent-1#") for pks in kinds.values() for pk in pks)
        assert len(kinds["TASK#"]) >= PARTITIONS - 2  # 40 tasks: nearly every partition
        assert len(kinds["B#"]) >= 3
        own = {i["sk"].split("#")[0] for i in items(store) if i["pk"] == KEYS.pk}
        assert own <= {"META", "DAY"}, own
        task = store.ingest.get_task(REF, "run-3-2")
        assert task is not None and task.status == "success"
        assert [e["kind"] for e in store.ingest.task_events(REF, "run-3-2")] == [
            "task.start", "task.end"]
        newest = store.ingest.recent_events(REF, 3)
        assert [e["kind"] for e in newest] == ["agent.note", "task.end", "task.start"]
        assert newest[0]["data"] == {"n": 7}


def test_an_older_tables_items_answer_the_same_and_move_as_they_are_written() -> None:
    """Every task, page and claim put back under the agent's own key, the migration marked as
    not through that step: reads answer as before; a batch that finishes an old task and resends
    one of its events moves the task first (the resent event a duplicate, the run counted
    once); an eval of an old run moves it too, writing no partial copy; the migration moves
    the rest, and the answers stay."""
    with dynamo_store() as store:
        started = ev("task.start", "open", name="draft", input={"q": "why"})
        done = task_events("done")
        ingest(store, [*done, started, ev("agent.note", data={"n": 1})])
        ingest(store, task_events("judged"))
        before = (store.ingest.get_task(REF, "done"), store.ingest.get_task(REF, "open"),
                  store.ingest.task_events(REF, "done"), store.ingest.recent_events(REF, 10),
                  store.agents.get_agent(REF))
        for item in items(store):
            if item["pk"].startswith("PART#"):
                where_it_was(store, item["sk"])
        assert len(under_agent(store)) >= 5 and not [
            i for i in items(store) if i["pk"].startswith("PART#")]
        after = (store.ingest.get_task(REF, "done"), store.ingest.get_task(REF, "open"),
                 store.ingest.task_events(REF, "done"), store.ingest.recent_events(REF, 10),
                 store.agents.get_agent(REF))
        assert after == before

        end = ev("task.end", "open", name="draft", status="failed", output="boom",
                 duration_ms=5)
        assert ingest(store, [started, end]) == (1, 1)
        assert "TASK#open" not in under_agent(store)
        finished = store.ingest.get_task(REF, "open")
        assert finished is not None and (finished.status, finished.input, finished.output) == (
            "failed", {"q": "why"}, "boom")
        agent = store.agents.get_agent(REF)
        assert agent is not None and (agent.stats.runs, agent.stats.failures) == (3, 1)

        result = EvalResult(status="scored", score=0.9, judge="offline", reasoning="ok",
                            attempts=1, at="2026-01-01T00:00:00.000Z")
        assert store.evals.record_evals(REF, {"judged": result}) == {"judged"}
        assert "TASK#judged" not in under_agent(store)
        judged = store.ingest.get_task(REF, "judged")
        assert judged is not None and judged.eval == result and judged.name == "search"

        report = migrate(store.table)
        assert report.done and report.spread >= 3
        assert under_agent(store) == []
        assert store.ingest.get_task(REF, "done") == before[0]
        assert store.ingest.task_events(REF, "done") == before[2]
        assert [e["id"] for e in store.ingest.recent_events(REF, 10)] == [
            end["id"], *(e["id"] for e in before[3][:9])]
        assert ingest(store, done[:1]) == (0, 1)  # still known once moved
