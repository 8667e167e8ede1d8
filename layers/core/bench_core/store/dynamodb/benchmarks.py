"""Benchmark runs and the suite registry on DynamoDB (the meaning: `bench_core.benchmarks`;
SQLite's adapter is `store/sqlite/benchmarks.py`). No new index: the existing gsi1/gsi2 carry them.

Items (pk, sk [gsi1pk, gsi1sk] [gsi2pk, gsi2sk]):

- suite:    BSUITE#{suite}, META  [BSUITES, {suite}]      content_hash, registered_at
- run:      BRUN#{run_id}, META   [BRUNS#{login}#{slug}, {submitted_at}#{run_id}]   body (JSON)
            (the gsi1 keys, which list it, only once the run is `done`)
- attempt:  BRUN#{run_id}, ATT#{position:04d}               body (JSON)
- rank:     BRANK#{suite}, {login}#{slug}  [-, -] [BRANK#{suite}, {rank_key}]   run_id, body

A suite is registered with a Put conditional on its absence: the first hash stays. A run's
attempts are written first and its META item last (conditional on its absence), so a run is
visible only once complete and a resubmission (same run id) changes nothing. A run graded in
the background is stored `pending`; each graded chunk rewrites its attempts and META, and the
last write (done) adds the listing keys and the rank. The rank item
holds the agent's latest run, replaced only by a later one; a ranking is one Query on gsi2.
A temporary agent's (the /try sandbox's) run, attempt and rank items carry its TTL, as its
other items do (`retention.py`).
"""

from __future__ import annotations

import itertools
from typing import Any

from ...domain.benchmark_records import Attempt, RunRecord
from ...domain.models import AgentRef
from .client import Table
from .codec.keys import META, AgentKeys, expiry, temporary
from .codec.values import to_item

SUITES = "BSUITES"


def _suite_key(suite: str) -> dict[str, Any]:
    return to_item({"pk": f"BSUITE#{suite}", "sk": META})


def _run_pk(run_id: str) -> str:
    return f"BRUN#{run_id}"


def _rank_pk(suite: str) -> str:
    return f"BRANK#{suite}"


def _meta(run: RunRecord, ttl: dict[str, Any]) -> dict[str, Any]:
    """The run's META item; listed on gsi1 (the agent's runs) once done."""
    listed = ({"gsi1pk": f"BRUNS#{run.login}#{run.slug}", "gsi1sk": f"{run.submitted_at}#{run.run_id}"}
              if run.status == "done" else {})
    return to_item({"pk": _run_pk(run.run_id), "sk": META, **listed,
                          "body": run.without_attempts().model_dump_json(), **ttl})


class DynamoBenchmarks:
    """The suite registry, runs with their attempts and the rankings, on `table`."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def register_suite(self, suite: str, content_hash: str, when: str) -> str:
        self.table.put_if_absent(to_item({
            "pk": f"BSUITE#{suite}", "sk": META, "gsi1pk": SUITES, "gsi1sk": suite,
            "suite": suite, "content_hash": content_hash, "registered_at": when}))
        item = self.table.get(_suite_key(suite))
        assert item is not None  # just written, or there before
        return str(item["content_hash"])

    def registered_suites(self) -> dict[str, str]:
        return {i["suite"]: i["content_hash"] for i in self.table.query(SUITES, index="gsi1")}

    def save_benchmark_run(self, run: RunRecord) -> bool:
        pk = _run_pk(run.run_id)
        if self.table.get(to_item({"pk": pk, "sk": META})) is not None:
            return False
        ttl = self._ttl(run)
        self.table.write_all([to_item({"pk": pk, "sk": f"ATT#{i:04d}",
                                       "body": a.model_dump_json(), **ttl})
                              for i, a in enumerate(run.attempts)])
        if not self.table.put_if_absent(_meta(run, ttl)):
            return False
        if run.status == "done":
            self._rank(run, ttl)
        return True

    def save_benchmark_grades(self, run: RunRecord, positions: list[int]) -> None:
        ttl = self._ttl(run)
        self.table.write_all([to_item({"pk": _run_pk(run.run_id), "sk": f"ATT#{i:04d}",
                                       "body": run.attempts[i].model_dump_json(), **ttl})
                              for i in positions] + [_meta(run, ttl)])

    def update_benchmark_run(self, run: RunRecord) -> None:
        ttl = self._ttl(run)
        self.table.put(_meta(run, ttl))
        if run.status == "done":
            self._rank(run, ttl)

    def _ttl(self, run: RunRecord) -> dict[str, Any]:
        agent = AgentKeys(run.login, run.slug)
        return expiry(temporary(agent, self.table.get(agent.key(META))))

    def _rank(self, run: RunRecord, ttl: dict[str, Any]) -> None:
        self.table.put(
            to_item({"pk": _rank_pk(run.suite), "sk": f"{run.login}#{run.slug}",
                     "gsi2pk": _rank_pk(run.suite), "gsi2sk": run.rank_key,
                     "run_id": run.run_id, "submitted_at": run.submitted_at,
                     "body": run.without_attempts().model_dump_json(), **ttl}),
            "attribute_not_exists(pk) OR submitted_at <= :at", {":at": run.submitted_at})

    def get_benchmark_run(self, run_id: str) -> RunRecord | None:
        items = list(self.table.query(_run_pk(run_id)))
        meta = next((i for i in items if i["sk"] == META), None)
        if meta is None:
            return None
        attempts = [Attempt.model_validate_json(i["body"]) for i in items if i["sk"].startswith("ATT#")]
        return RunRecord.model_validate_json(meta["body"]).model_copy(update={"attempts": attempts})

    def benchmark_runs_of(self, ref: AgentRef, limit: int) -> list[RunRecord]:
        items = self.table.query(f"BRUNS#{ref.login}#{ref.slug}", index="gsi1", forward=False, page=limit)
        return [RunRecord.model_validate_json(i["body"]) for i in itertools.islice(items, limit)]

    def benchmark_ranking(self, suite: str, *, limit: int, after: str | None = None
                          ) -> list[RunRecord]:
        items = (self.table.query(_rank_pk(suite), "#sk > :after", index="gsi2", page=limit, after=after)
                 if after else self.table.query(_rank_pk(suite), index="gsi2", page=limit))
        return [RunRecord.model_validate_json(i["body"]) for i in itertools.islice(items, limit)]
