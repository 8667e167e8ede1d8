"""The benchmark part of the Store port, on every adapter: the suite registry keeps the first
hash, runs round-trip with their attempts, a run id is stored once, rankings are in order."""

from __future__ import annotations

from bench_core.domain.benchmark_records import Attempt, RunRecord
from bench_core.domain.models import AgentRef
from bench_core.ports.store import Store

SUITE = "demo-v1"


def attempt(case_id: str, repeat: int, passed: bool) -> Attempt:
    return Attempt(case_id=case_id, repeat=repeat, status="ok", input={"question": case_id},
                   output={"answer": f"{case_id}/{repeat}", "ü": [1, 2.5]}, output_hash="sha256:" + "a" * 64,
                   duration_ms=12.5, cost_usd=0.01, score=1.0 if passed else 0.0, passed=passed,
                   judge="grounding-heuristic-v1", reasoning="because")


def run(run_id: str, slug: str, pass_rate: float, at: str, *, login: str = "alice", suite: str = SUITE,
        pass_hat_k: float = 0.0, attempts: list[Attempt] | None = None) -> RunRecord:
    return RunRecord(run_id=run_id, login=login, slug=slug, suite=suite, suite_hash="sha256:" + "b" * 64,
                     submitted_at=at, repeats=2, judge="grounding-heuristic-v1",
                     summary={"pass_rate": pass_rate, "pass_hat_k": pass_hat_k, "k": 2},
                     attempts=attempts or [])


def test_a_registered_suite_keeps_its_first_hash(store: Store) -> None:
    assert store.benchmarks.registered_suites() == {}
    assert store.benchmarks.register_suite(SUITE, "sha256:first", "2026-12-01T00:00:00.000Z") == "sha256:first"
    assert store.benchmarks.register_suite(SUITE, "sha256:second", "2026-12-02T00:00:00.000Z") == "sha256:first"
    assert store.benchmarks.register_suite("demo-v2", "sha256:second", "2026-12-02T00:00:00.000Z") == "sha256:second"
    assert store.benchmarks.registered_suites() == {SUITE: "sha256:first", "demo-v2": "sha256:second"}


def test_a_run_round_trips_with_its_attempts_in_order_and_is_stored_once(store: Store) -> None:
    attempts = [attempt(c, r, c != "b") for c in ("z", "b", "a") for r in range(2)]
    record = run("r1", "agent", 0.66, "2026-12-01T10:00:00.000Z", attempts=attempts)
    assert store.benchmarks.get_benchmark_run("r1") is None
    assert store.benchmarks.save_benchmark_run(record) is True
    assert store.benchmarks.get_benchmark_run("r1") == record
    assert store.benchmarks.save_benchmark_run(run("r1", "agent", 0.0, "2026-12-02T00:00:00.000Z")) is False
    assert store.benchmarks.get_benchmark_run("r1") == record


def test_an_agents_runs_are_listed_newest_first_without_attempts(store: Store) -> None:
    for i, at in enumerate(["2026-12-01T10:00:00.000Z", "2026-12-03T10:00:00.000Z", "2026-12-02T10:00:00.000Z"]):
        store.benchmarks.save_benchmark_run(run(f"r{i}", "agent", 0.5, at, attempts=[attempt("a", 0, True)]))
    store.benchmarks.save_benchmark_run(run("other", "agent", 0.5, "2026-12-04T10:00:00.000Z", login="bob"))
    runs = store.benchmarks.benchmark_runs_of(AgentRef("alice", "agent"), 10)
    assert [r.run_id for r in runs] == ["r1", "r2", "r0"]
    assert all(r.attempts == [] for r in runs)
    assert [r.run_id for r in store.benchmarks.benchmark_runs_of(AgentRef("alice", "agent"), 2)] == ["r1", "r2"]
    assert store.benchmarks.benchmark_runs_of(AgentRef("alice", "nobody"), 5) == []


def test_the_ranking_holds_each_agents_latest_run_best_first(store: Store) -> None:
    store.benchmarks.save_benchmark_run(run("a1", "ant", 0.9, "2026-12-01T00:00:00.000Z"))
    store.benchmarks.save_benchmark_run(run("b1", "bee", 0.5, "2026-12-01T00:00:00.000Z", pass_hat_k=0.5))
    store.benchmarks.save_benchmark_run(run("c1", "cat", 0.5, "2026-12-01T00:00:00.000Z", pass_hat_k=0.2))
    store.benchmarks.save_benchmark_run(run("d1", "dog", 0.7, "2026-12-01T00:00:00.000Z", suite="demo-v2"))
    assert [r.run_id for r in store.benchmarks.benchmark_ranking(SUITE, limit=10)] == ["a1", "b1", "c1"]
    # a later run replaces the agent's entry, better or worse; an earlier one does not
    store.benchmarks.save_benchmark_run(run("a2", "ant", 0.1, "2026-12-02T00:00:00.000Z"))
    store.benchmarks.save_benchmark_run(run("a0", "ant", 1.0, "2026-11-30T00:00:00.000Z"))
    ranked = store.benchmarks.benchmark_ranking(SUITE, limit=10)
    assert [r.run_id for r in ranked] == ["b1", "c1", "a2"]
    assert [r.run_id for r in store.benchmarks.benchmark_ranking(SUITE, limit=2)] == ["b1", "c1"]
    after = store.benchmarks.benchmark_ranking(SUITE, limit=10, after=ranked[0].rank_key)
    assert [r.run_id for r in after] == ["c1", "a2"]
    assert [r.run_id for r in store.benchmarks.benchmark_ranking("demo-v2", limit=10)] == ["d1"]
    assert store.benchmarks.benchmark_ranking("nothing-v1", limit=10) == []


def test_a_pending_run_is_graded_in_steps_and_listed_and_ranked_only_once_done(store: Store) -> None:
    ungraded = [Attempt(case_id=c, repeat=0, status="ok", input={"question": c}, output=c,
                        output_hash="sha256:" + "c" * 64, duration_ms=1.0) for c in ("a", "b")]
    pending = run("p1", "slow", 0.0, "2026-12-05T00:00:00.000Z", attempts=ungraded).model_copy(
        update={"status": "pending", "summary": {}, "judge": "", "total": 2})
    assert store.benchmarks.save_benchmark_run(pending) is True
    assert store.benchmarks.get_benchmark_run("p1") == pending
    assert store.benchmarks.benchmark_runs_of(AgentRef("alice", "slow"), 5) == []
    assert store.benchmarks.benchmark_ranking(SUITE, limit=10) == []

    first = attempt("a", 0, True)
    grading = pending.model_copy(update={"status": "grading", "graded": 1,
                                         "attempts": [first, ungraded[1]]})
    store.benchmarks.save_benchmark_grades(grading, [0])
    assert store.benchmarks.get_benchmark_run("p1") == grading
    assert store.benchmarks.benchmark_runs_of(AgentRef("alice", "slow"), 5) == []
    assert store.benchmarks.benchmark_ranking(SUITE, limit=10) == []

    second = attempt("b", 0, False)
    graded = grading.model_copy(update={"graded": 2, "attempts": [first, second]})
    store.benchmarks.save_benchmark_grades(graded, [1])
    done = graded.model_copy(update={"status": "done", "judge": "grounding-heuristic-v1",
                                     "summary": {"pass_rate": 0.5, "pass_hat_k": 0.0, "k": 2}})
    store.benchmarks.update_benchmark_run(done)
    assert store.benchmarks.get_benchmark_run("p1") == done
    assert [r.run_id for r in store.benchmarks.benchmark_runs_of(AgentRef("alice", "slow"), 5)] == ["p1"]
    assert [r.run_id for r in store.benchmarks.benchmark_ranking(SUITE, limit=10)] == ["p1"]
    assert store.benchmarks.save_benchmark_run(pending) is False, "a resubmission changes nothing"
    assert store.benchmarks.get_benchmark_run("p1") == done


def test_a_failed_run_keeps_its_grades_and_stays_unlisted(store: Store) -> None:
    ungraded = [Attempt(case_id="a", repeat=0, status="ok", input={}, output="x",
                        output_hash="sha256:" + "d" * 64, duration_ms=1.0)]
    pending = run("f1", "down", 0.0, "2026-12-05T00:00:00.000Z", attempts=ungraded).model_copy(
        update={"status": "pending", "summary": {}, "total": 1})
    store.benchmarks.save_benchmark_run(pending)
    failed = pending.model_copy(update={"status": "failed", "error": "the judge is unavailable"})
    store.benchmarks.update_benchmark_run(failed)
    assert store.benchmarks.get_benchmark_run("f1") == failed
    assert store.benchmarks.benchmark_runs_of(AgentRef("alice", "down"), 5) == []
    assert store.benchmarks.benchmark_ranking(SUITE, limit=10) == []
