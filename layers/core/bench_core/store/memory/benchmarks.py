"""Benchmark runs and the suite registry in memory (the meaning: `bench_core.benchmarks`): a
suite's hash written once, each run as JSON text with its attempts, and per suite each
agent's ranked run with its `rank_key`."""

from __future__ import annotations

from ...domain.benchmark_records import Attempt, RunRecord
from ...domain.models import AgentRef
from .state import Concern, Rank, StoredRun, Tables


def _rank(tables: Tables, run: RunRecord) -> None:
    """Make `run` the agent's ranked run of its suite unless a later one is."""
    key = (run.suite, AgentRef(run.login, run.slug))
    ranked = tables.benchmark_ranks.get(key)
    if ranked is None or run.submitted_at >= ranked.submitted_at:
        tables.benchmark_ranks[key] = Rank(run.run_id, run.submitted_at, run.rank_key)


def _body(run: RunRecord) -> str:
    return run.without_attempts().model_dump_json()


class MemoryBenchmarks(Concern):
    def register_suite(self, suite: str, content_hash: str, when: str) -> str:
        with self.memory.locked() as tables:
            return tables.suites.setdefault(suite, content_hash)

    def registered_suites(self) -> dict[str, str]:
        with self.memory.locked() as tables:
            return dict(sorted(tables.suites.items()))

    def save_benchmark_run(self, run: RunRecord) -> bool:
        with self.memory.locked() as tables:
            if run.run_id in tables.benchmark_runs:
                return False
            tables.benchmark_runs[run.run_id] = StoredRun(
                run.login, run.slug, run.submitted_at, run.status, _body(run),
                [a.model_dump_json() for a in run.attempts])
            if run.status == "done":
                _rank(tables, run)
        return True

    def save_benchmark_grades(self, run: RunRecord, positions: list[int]) -> None:
        with self.memory.locked() as tables:
            stored = tables.benchmark_runs.get(run.run_id)
            if stored is None:
                return
            for i in positions:
                if i < len(stored.attempts):
                    stored.attempts[i] = run.attempts[i].model_dump_json()
            stored.body, stored.status = _body(run), run.status

    def update_benchmark_run(self, run: RunRecord) -> None:
        with self.memory.locked() as tables:
            stored = tables.benchmark_runs.get(run.run_id)
            if stored is not None:
                stored.body, stored.status = _body(run), run.status
            if run.status == "done":
                _rank(tables, run)

    def get_benchmark_run(self, run_id: str) -> RunRecord | None:
        with self.memory.locked() as tables:
            stored = tables.benchmark_runs.get(run_id)
            if stored is None:
                return None
            body, attempts = stored.body, list(stored.attempts)
        return RunRecord.model_validate_json(body).model_copy(
            update={"attempts": [Attempt.model_validate_json(a) for a in attempts]})

    def benchmark_runs_of(self, ref: AgentRef, limit: int) -> list[RunRecord]:
        with self.memory.locked() as tables:
            runs = sorted(((r.submitted_at, run_id, r.body)
                           for run_id, r in tables.benchmark_runs.items()
                           if (r.login, r.slug) == (ref.login, ref.slug) and r.status == "done"),
                          reverse=True)
        return [RunRecord.model_validate_json(body) for _, _, body in runs[:limit]]

    def benchmark_ranking(self, suite: str, *, limit: int, after: str | None = None
                          ) -> list[RunRecord]:
        with self.memory.locked() as tables:
            ranked = sorted((rank.rank_key, tables.benchmark_runs[rank.run_id].body)
                            for (of, _), rank in tables.benchmark_ranks.items()
                            if of == suite and rank.rank_key > (after or "")
                            and rank.run_id in tables.benchmark_runs)
        return [RunRecord.model_validate_json(body) for _, body in ranked[:limit]]
