"""The Store contract for ingest, on every adapter: batches folded into runs and tasks exactly
once (replays, concurrent senders, events in any order), and the reads of what they made:
recent events, task listings and subtasks, a task's events, daily counters."""

from __future__ import annotations

from dataclasses import replace

import pytest
from bench_core.domain import stats
from bench_core.domain.models import Agent, AgentMeta, AgentRef, IngestOutcome, IngestWrite
from bench_core.domain.sessions import SessionFilter
from bench_core.ports.store import Store

from tests.concurrency import in_parallel
from tests.factories import clean, ev, task_events, ts

REF = AgentRef("alice", "agent-1")
META = AgentMeta(slug="agent-1")


def ingest(store: Store, events, meta: AgentMeta = META, login: str = "alice", dropped: int = 0):
    return store.ingest.ingest(login, meta, clean(events), dropped=dropped)


# ---- folding ---------------------------------------------------------------------------------


def test_start_and_end_make_a_finished_run_with_counters(store: Store) -> None:
    out = ingest(store, task_events("t1", cost=0.004, duration_ms=412))
    assert (out.accepted, out.duplicates, out.finished) == (3, 0, [("t1", True)])
    task = store.ingest.get_task(REF, "t1")
    assert (task.status, task.name, task.duration_ms, task.cost_usd) == ("success", "search",
                                                                         412, 0.004)
    assert task.input == {"q": "t1"} and task.output == "ok"
    s = store.agents.get_agent(REF).stats
    assert (s.runs, s.successes, s.failures) == (1, 1, 0)
    assert abs(s.cost_usd_total - 0.004) < 1e-12
    assert s.latency_hist[stats.bucket_index(412)] == 1 and sum(s.latency_hist) == 1


def test_a_batch_hands_back_its_agent_whose_settings_decide_its_evals(store: Store) -> None:
    ingest(store, task_events("t0"))
    store.agents.update_agent(REF, {"judge_sample_rate": 0.25, "hide_inputs": True})
    agent = ingest(store, task_events("t1")).agent
    assert agent is not None and (agent.login, agent.slug) == (REF.login, REF.slug)
    assert (agent.judge_sample_rate, agent.hide_inputs) == (0.25, True)


def test_a_temporary_agent_past_its_expiry_is_not_handed_back(store: Store) -> None:
    assert store.agents.create_agent(Agent(login="alice", slug="agent-1", visibility="private",
                                           created_at=ts(0), expires_at=ts(1)))
    assert ingest(store, task_events("t1")).agent is None


def test_a_start_alone_is_a_running_task_and_not_a_run(store: Store) -> None:
    ingest(store, task_events("t1")[:1])
    assert store.ingest.get_task(REF, "t1").status == "running"
    assert store.agents.get_agent(REF).stats.runs == 0


def test_an_end_without_its_start_still_makes_a_complete_task(store: Store) -> None:
    ingest(store, [ev("task.end", "t9", name="lonely", status="error", output="boom",
                      duration_ms=50, cost_usd=0.01)])
    task = store.ingest.get_task(REF, "t9")
    assert (task.status, task.output, task.name, task.cost_usd) == ("failed", "boom", "lonely",
                                                                    0.01)
    s = store.agents.get_agent(REF).stats
    assert (s.runs, s.failures) == (1, 1)


def test_a_late_start_does_not_reopen_a_finished_task(store: Store) -> None:
    start, end = task_events("t1")
    ingest(store, [end])
    ingest(store, [start])
    task = store.ingest.get_task(REF, "t1")
    assert task.status == "success" and task.input == {"q": "t1"}
    assert store.agents.get_agent(REF).stats.runs == 1


def test_a_second_end_for_a_task_counts_once(store: Store) -> None:
    events = task_events("t1")
    ingest(store, events)
    ingest(store, [ev("task.end", "t1", status="failed", output="again", duration_ms=5)])
    task = store.ingest.get_task(REF, "t1")
    assert task.status == "success"
    assert store.agents.get_agent(REF).stats.runs == 1


def test_subtask_costs_are_not_counted_twice(store: Store) -> None:
    """The original client: the parent's total includes the child's cost, and every cost is also
    a log. The run costs 0.003 + 0.002, not 0.012."""
    child = task_events("c1", "fetch", parent="p1", cost=0.002)
    parent = [ev("task.start", "p1", name="research", input={"q": 1}),
              ev("task.log", "p1", name="research",
                 data={"label": "cost", "cost_usd": 0.003, "cost_details": {"source": "manual"}}),
              *child,
              ev("task.end", "p1", name="research", status="success", output="done",
                 duration_ms=300, cost_usd=0.005, data=None)]
    out = ingest(store, parent)
    assert out.finished == [("c1", False), ("p1", True)]
    s = store.agents.get_agent(REF).stats
    assert s.runs == 1 and abs(s.cost_usd_total - 0.005) < 1e-12
    assert store.ingest.get_task(REF, "c1").parent_task_id == "p1"
    assert store.ingest.subtask_ids(REF, ["p1"]) == {"p1": ["c1"]}


def test_without_an_end_total_a_run_costs_its_logs_plus_its_subtasks(store: Store) -> None:
    child = task_events("c1", "fetch", parent="p1", cost=0.002)
    parent_end = ev("task.end", "p1", name="research", status="success", duration_ms=9)
    ingest(store, [ev("task.start", "p1", name="research"), *child])
    ingest(store, [ev("task.log", "p1", data={"label": "cost", "cost_usd": 0.001}), parent_end])
    assert abs(store.ingest.get_task(REF, "p1").cost_usd - 0.003) < 1e-12
    assert abs(store.agents.get_agent(REF).stats.cost_usd_total - 0.003) < 1e-12


def test_children_may_arrive_before_their_parent(store: Store) -> None:
    ingest(store, task_events("c1", "fetch", parent="p1", cost=0.002))
    assert store.agents.get_agent(REF).stats.runs == 0
    ingest(store, [ev("task.start", "p1", name="research"),
                   ev("task.end", "p1", name="research", status="success", duration_ms=10)])
    assert store.ingest.get_task(REF, "p1").cost_usd == 0.002
    assert store.agents.get_agent(REF).stats.runs == 1
    tasks, _ = store.ingest.list_tasks(REF)
    assert [t.task_id for t in tasks] == ["p1"]


# ---- idempotency -----------------------------------------------------------------------------


def test_a_replayed_batch_counts_once(store: Store) -> None:
    events = task_events("t1", cost=0.5) + [ev("custom", data={"k": 1})]
    first = ingest(store, events)
    second = ingest(store, events)
    assert (first.accepted, first.duplicates) == (4, 0)
    assert (second.accepted, second.duplicates, second.finished) == (0, 4, [])
    s = store.agents.get_agent(REF).stats
    assert s.runs == 1 and s.cost_usd_total == 0.5
    assert len(store.ingest.recent_events(REF, 100)) == 4


def test_eight_concurrent_senders_of_the_same_batch_count_once(store: Store) -> None:
    events = [e for i in range(10) for e in task_events(f"t{i}", cost=0.1)]
    results = in_parallel(*[lambda: ingest(store, events)] * 8)
    assert sum(r.accepted for r in results) == len(events)
    assert sum(r.duplicates for r in results) == 7 * len(events)
    s = store.agents.get_agent(REF).stats
    assert s.runs == 10 and abs(s.cost_usd_total - 1.0) < 1e-9
    assert sum(s.latency_hist) == 10


def test_batches_written_together_each_count_as_if_written_alone(store: Store) -> None:
    """`ingest_many` (the local server's group commit): each write folds as `ingest` would,
    in order, a later one seeing what an earlier one stored."""
    first = clean(task_events("t1", cost=0.5))
    outcomes = store.ingest.ingest_many([
        IngestWrite("alice", META, first), IngestWrite("bob", AgentMeta(slug="other"),
                                                       clean(task_events("t2"))),
        IngestWrite("alice", META, first, dropped=2),
        IngestWrite("alice", META, clean([ev("task.log", "t3", data={"n": 1})]), dropped=1)])
    assert [(o.accepted, o.duplicates, o.finished) for o in outcomes
            if isinstance(o, IngestOutcome)] == [(3, 0, [("t1", True)]), (2, 0, [("t2", True)]),
                                                  (0, 3, []), (1, 0, [])]
    s = store.agents.get_agent(REF).stats
    assert (s.runs, s.cost_usd_total, s.dropped_events) == (1, 0.5, 1)
    assert store.agents.get_agent(AgentRef("bob", "other")).stats.runs == 1
    assert len(store.ingest.recent_events(REF, 100)) == 4


def test_an_agents_batches_written_together_add_up_as_if_written_one_by_one(store: Store
                                                                            ) -> None:
    """`ingest_many` adds up what a group's batches add to their agent's own rows (SQLite writes
    them once for the group): counters, newest run and failure, dropped events, evidence totals,
    days, versions, sessions and series come to what the batches written in turn leave, and
    each batch hands back the agent."""
    usage = {"label": "evidence", "provider": "openai", "model": "gpt-4o",
             "input_tokens": 1000, "output_tokens": 500}
    with_session = [{**e, "session_id": "s1", "user_id": "u1"} for e in task_events("r2")]
    batches = [
        (AgentMeta(slug="", version="v1"), task_events("r1", status="failed", cost=0.5), 0),
        (AgentMeta(slug="", version="v2"),
         with_session + [ev("task.log", "r3", data=usage)] + task_events("r3", duration_ms=7), 2),
        (AgentMeta(slug="", version="v2"), task_events("r1", status="failed", cost=0.5), 1),
        (AgentMeta(slug="", version="v1"),
         task_events("r4", cost=0.25, duration_ms=9000) + task_events("r5", status="failed"), 3),
    ]
    outcomes = store.ingest.ingest_many([
        IngestWrite("alice", replace(meta, slug="together"), clean(events), dropped)
        for meta, events, dropped in batches])
    for meta, events, dropped in batches:
        store.ingest.ingest("alice", replace(meta, slug="alone"), clean(events), dropped)
    assert all(isinstance(o, IngestOutcome) and o.agent is not None
               and o.agent.slug == "together" for o in outcomes)
    reads = []
    for ref in (AgentRef("alice", "together"), AgentRef("alice", "alone")):
        agent = store.agents.get_agent(ref)
        assert agent is not None
        reads.append((agent.stats, store.ingest.daily(ref, "2000-01-01"),
                      store.agents.agent_versions(ref),
                      store.runs.list_sessions(ref, SessionFilter(), limit=10).sessions,
                      [store.timeseries.read_buckets(ref, scope, grain, "0", "9")
                       for scope in ("", "v:v1", "v:v2") for grain in ("hour", "day")]))
    together, alone = reads
    assert together == alone
    assert together[0].runs == 5 and together[0].dropped_events == 6
    assert together[0].latest_failure is not None and together[0].latest_failure.run_id == "r5"
    assert len(together[2]) == 2 and len(together[3]) == 1 and all(together[4])


# ---- reads -----------------------------------------------------------------------------------


def test_what_a_batch_sent_or_a_read_returned_is_the_callers_to_change(store: Store) -> None:
    """A store keeps its own copy: changing what was sent or read afterwards changes nothing
    stored (the in-memory store copies, as a database does by its nature)."""
    events = clean(task_events("t1", duration_ms=412))
    store.ingest.ingest("alice", META, events)
    events[0].body["input"]["q"] = "changed after sending"
    read = store.ingest.get_task(REF, "t1")
    assert read is not None
    read.input["q"] = "changed after reading"
    agent = store.agents.get_agent(REF)
    assert agent is not None
    agent.stats.latency_hist[0] += 5
    store.ingest.recent_events(REF, 1)[0]["kind"] = "changed"
    assert store.ingest.get_task(REF, "t1").input == {"q": "t1"}
    assert sum(store.agents.get_agent(REF).stats.latency_hist) == 1
    assert store.ingest.recent_events(REF, 1)[0]["kind"] == "task.end"


def test_recent_events_are_newest_first_and_limited(store: Store) -> None:
    events = [ev("custom", data={"i": i}) for i in range(30)]
    ingest(store, events)
    recent = store.ingest.recent_events(REF, 10)
    assert [e["data"]["i"] for e in recent] == list(range(29, 19, -1))
    assert recent[0]["kind"] == "custom" and recent[0]["id"] == events[-1]["id"]


def test_task_listing_pages_newest_first_and_filters_by_status(store: Store) -> None:
    for i in range(7):
        ingest(store, task_events(f"t{i}", status="failed" if i % 3 == 0 else "success"))
    page1, cursor = store.ingest.list_tasks(REF, limit=3)
    page2, cursor2 = store.ingest.list_tasks(REF, limit=3, cursor=cursor)
    page3, cursor3 = store.ingest.list_tasks(REF, limit=3, cursor=cursor2)
    ids = [t.task_id for t in page1 + page2 + page3]
    assert ids == [f"t{i}" for i in range(6, -1, -1)] and cursor3 is None
    failed, _ = store.ingest.list_tasks(REF, status="failed")
    assert [t.task_id for t in failed] == ["t6", "t3", "t0"]


def test_task_events_hold_the_logs_of_one_task(store: Store) -> None:
    ingest(store, [*task_events("t1", cost=0.1), *task_events("t2")])
    kinds = [e["kind"] for e in store.ingest.task_events(REF, "t1")]
    assert kinds == ["task.start", "task.log", "task.end"]


def test_daily_counters(store: Store) -> None:
    ingest(store, task_events("t1", cost=0.25) + task_events("t2", status="failed"))
    days = store.ingest.daily(REF, "2026-01-01")
    assert days == [{"day": "2026-12-02", "runs": 2, "successes": 1, "failures": 1,
                     "cost_usd": 0.25}]


def test_dropped_events_reported_by_the_sdk_are_counted(store: Store) -> None:
    ingest(store, [ev("custom")], dropped=12)
    ingest(store, [ev("custom")], dropped=3)
    assert store.agents.get_agent(REF).stats.dropped_events == 15


def test_a_replayed_batch_does_not_count_its_dropped_events_again(store: Store) -> None:
    """A client retrying a batch the server stored (its reply was lost) resends the same
    events and the same `dropped`: only the first delivery counts."""
    first = ev("custom")
    assert ingest(store, [first], dropped=7).accepted == 1
    assert ingest(store, [first], dropped=7).duplicates == 1
    assert store.agents.get_agent(REF).stats.dropped_events == 7
    ingest(store, [first, ev("custom")], dropped=2)  # something new: a new batch, it counts
    assert store.agents.get_agent(REF).stats.dropped_events == 9


def test_oversized_values_are_stored_truncated_with_a_marker(store: Store) -> None:
    from bench_core.settings import Limits

    big = "x" * 100_000
    events = task_events("t1", input=big)
    store.ingest.ingest("alice", META, clean(events, Limits(max_field_bytes=1024)))
    stored = store.ingest.get_task(REF, "t1").input
    assert stored["_bench_truncated"] is True and stored["original_bytes"] > 100_000
    assert len(stored["preview"]) <= 1024


# ---- semantics under load and at the edges ---------------------------------------------------


def test_concurrent_batches_for_one_task_fold_into_one_run(store: Store) -> None:
    """Different parts of one task sent at once: every write folds on the latest task state."""
    start = ev("task.start", "t1", name="search", input={"q": 1})
    logs = [ev("task.log", "t1", data={"label": "cost", "cost_usd": 0.01}) for _ in range(6)]
    end = ev("task.end", "t1", status="success", output="ok", duration_ms=100, cost_usd=0.06)
    results = in_parallel(*(lambda part=part: ingest(store, [part])
                             for part in (start, *logs, end)))
    assert sum(r.accepted for r in results) == 8
    assert [f for r in results for f in r.finished] == [("t1", True)]
    task = store.ingest.get_task(REF, "t1")
    assert (task.status, task.input, task.output, task.cost_usd) == ("success", {"q": 1}, "ok",
                                                                     0.06)
    assert abs(task.cost_logged_usd - 0.06) < 1e-9
    assert len(store.ingest.task_events(REF, "t1")) == 8
    s = store.agents.get_agent(REF).stats
    assert (s.runs, sum(s.latency_hist)) == (1, 1)


def test_concurrent_batches_of_different_tasks_all_count(store: Store) -> None:
    batches = [[e for j in range(5) for e in task_events(f"t{i}-{j}", cost=0.01,
                                                         duration_ms=10 * (i + 1))]
               for i in range(8)]
    in_parallel(*(lambda b=b: ingest(store, b) for b in batches))
    s = store.agents.get_agent(REF).stats
    assert (s.runs, s.successes, sum(s.latency_hist)) == (40, 40, 40)
    assert abs(s.cost_usd_total - 0.4) < 1e-9
    assert store.ingest.daily(REF, "2026-01-01")[0]["runs"] == 40
    tasks, cursor = store.ingest.list_tasks(REF, limit=100)
    assert len(tasks) == 40 and cursor is None


def test_a_task_with_hundreds_of_events_in_one_batch(store: Store) -> None:
    events = [ev("task.start", "t1", name="long")]
    events += [ev("task.log", "t1", data={"label": "cost", "cost_usd": 0.001}) for _ in range(250)]
    events.append(ev("task.end", "t1", status="success", duration_ms=5))
    assert ingest(store, events).accepted == 252
    assert [e["id"] for e in store.ingest.task_events(REF, "t1")] == [e["id"] for e in events]
    assert abs(store.ingest.get_task(REF, "t1").cost_usd - 0.25) < 1e-9
    s = store.agents.get_agent(REF).stats
    assert s.runs == 1 and abs(s.cost_usd_total - 0.25) < 1e-9
    assert ingest(store, events).duplicates == 252


def test_a_batch_of_many_large_events_is_stored_whole(store: Store) -> None:
    events = [ev("custom", data={"i": i, "blob": "x" * 30_000}) for i in range(120)]
    assert ingest(store, events).accepted == 120
    assert [e["data"]["i"] for e in store.ingest.recent_events(REF, 200)] == list(range(119, -1, -1))


def test_an_event_id_repeated_within_a_batch_counts_once(store: Store) -> None:
    event = ev("custom", data={"n": 1})
    out = ingest(store, [event, {**event, "data": {"n": 2}}])
    assert (out.accepted, out.duplicates) == (1, 1)
    assert [e["data"] for e in store.ingest.recent_events(REF, 10)] == [{"n": 1}]


def test_events_of_one_millisecond_keep_their_arrival_order(store: Store) -> None:
    when = ts()
    ingest(store, [ev("custom", ts=when, data={"i": i}) for i in range(30)])
    assert [e["data"]["i"] for e in store.ingest.recent_events(REF, 10)] == list(range(29, 19, -1))
    ingest(store, [ev("task.start", "t1", ts=when), ev("task.log", "t1", ts=when, data={}),
                   ev("task.end", "t1", ts=when, status="success")])
    kinds = [e["kind"] for e in store.ingest.task_events(REF, "t1")]
    assert kinds == ["task.start", "task.log", "task.end"]


def test_tasks_started_in_the_same_millisecond_page_without_gaps(store: Store) -> None:
    when = ts()
    ingest(store, [e for i in range(5) for e in (ev("task.start", f"t{i}", ts=when),
                                                 ev("task.end", f"t{i}", status="success"))])
    seen, cursor = [], None
    while True:
        page, cursor = store.ingest.list_tasks(REF, limit=2, cursor=cursor)
        seen += [t.task_id for t in page]
        if cursor is None:
            break
    assert seen == ["t4", "t3", "t2", "t1", "t0"]


def test_subtasks_list_under_their_parent_and_filter_by_status(store: Store) -> None:
    ingest(store, [ev("task.start", "p1"),
                   *task_events("c1", parent="p1"), *task_events("c2", parent="p1",
                                                                 status="failed"),
                   ev("task.end", "p1", status="success")])
    roots, _ = store.ingest.list_tasks(REF)
    children, _ = store.ingest.list_tasks(REF, parent="p1")
    failed, _ = store.ingest.list_tasks(REF, parent="p1", status="failed")
    assert [t.task_id for t in roots] == ["p1"]
    assert [t.task_id for t in children] == ["c2", "c1"]
    assert [t.task_id for t in failed] == ["c2"]
    assert store.ingest.subtask_ids(REF, ["p1", "c1"]) == {"p1": ["c1", "c2"], "c1": []}


def test_subtasks_of_any_depth_page_under_their_own_parent_only(store: Store) -> None:
    """A run's spans (every depth) list a task's own subtasks, newest first, a page at a time;
    one whose parent came in a later batch is listed under it too."""
    ingest(store, [*task_events("kid0", parent="mid"), *task_events("other", parent="root")])
    ingest(store, [*task_events("root"), *task_events("mid", parent="root"),
                   *(e for i in range(1, 5) for e in task_events(f"kid{i}", parent="mid"))])
    seen, cursor = [], None
    while True:
        page, cursor = store.ingest.list_tasks(REF, parent="mid", limit=2, cursor=cursor)
        seen += [t.task_id for t in page]
        if cursor is None:
            break
    assert seen == ["kid4", "kid3", "kid2", "kid1", "kid0"]
    assert store.ingest.subtask_ids(REF, ["root", "mid", "kid1"]) == {
        "root": ["other", "mid"], "mid": ["kid0", "kid1", "kid2", "kid3", "kid4"], "kid1": []}


@pytest.mark.parametrize("parent", ["ROOT", "P#ROOT", "root", "x#failed", "#", " "])
def test_a_parent_id_that_looks_like_a_listing_key_is_only_a_parent(store: Store,
                                                                    parent: str) -> None:
    ingest(store, [*task_events("r1"), *task_events(parent), *task_events("c1", parent=parent,
                                                                          status="failed")])
    roots, _ = store.ingest.list_tasks(REF)
    failed_roots, _ = store.ingest.list_tasks(REF, status="failed")
    children, _ = store.ingest.list_tasks(REF, parent=parent)
    failed_children, _ = store.ingest.list_tasks(REF, parent=parent, status="failed")
    assert sorted(t.task_id for t in roots) == sorted(["r1", parent])
    assert failed_roots == []
    assert [t.task_id for t in children] == [t.task_id for t in failed_children] == ["c1"]
    assert store.ingest.subtask_ids(REF, [parent, "r1"]) == {parent: ["c1"], "r1": []}
    assert store.ingest.get_task(REF, "c1").parent_task_id == parent


def test_a_parent_known_only_from_its_subtasks_is_not_a_task_yet(store: Store) -> None:
    ingest(store, task_events("c1", parent="p1", cost=0.002))
    assert store.ingest.get_task(REF, "p1") is None
    assert store.ingest.list_tasks(REF) == ([], None)
    assert store.ingest.subtask_ids(REF, ["p1"]) == {"p1": ["c1"]}


def test_the_event_window_only_widens(store: Store) -> None:
    ingest(store, [ev("custom", ts=ts(5_000)), ev("custom", ts=ts(6_000))])
    ingest(store, [ev("custom", ts=ts(1_000))])
    ingest(store, [ev("custom", ts=ts(9_000))])
    ingest(store, [ev("custom", ts=ts(7_000))])
    s = store.agents.get_agent(REF).stats
    assert (s.first_event_at, s.last_event_at) == (ts(1_000), ts(9_000))


def test_daily_counters_start_at_the_given_day(store: Store) -> None:
    day = 24 * 3600 * 1000
    ingest(store, [ev("task.end", "t1", ts=ts(0), status="success", cost_usd=0.5),
                   ev("task.end", "t2", ts=ts(day), status="failed")])
    assert [d["day"] for d in store.ingest.daily(REF, "2026-12-01")] == ["2026-12-02", "2026-12-03"]
    assert store.ingest.daily(REF, "2026-12-03") == [{"day": "2026-12-03", "runs": 1, "successes": 0,
                                                      "failures": 1, "cost_usd": 0.0}]


