"""A benchmark run against an earlier run of the same suite version, as `bench check
--benchmark-run` gates a CI job on it (`GET /api/benchmarks/runs/{run_id}/check`).

The two runs answered the same cases, so the tests are paired by case, which is what makes a
few dozen cases enough:
- pass^k (a case passed every repeat): McNemar's exact test on the cases that changed, passing
  in one run and not the other (a two-sided binomial test at one half);
- pass rate per case (its share of repeats passed): the sign test on the cases whose rate
  moved.
A line is worse when the newer run lost more cases than it gained with p under `ALPHA`
divided by the lines tested (Bonferroni), as `reads/versions.py` `check_version` gates a
version. A run not yet graded, or fewer than `min_cases` cases in common, is "insufficient".
"""

from __future__ import annotations

import math
from typing import Any

from ..domain.benchmark_records import RunRecord
from ..domain.errors import Invalid, NotFound
from ..domain.models import AgentRef
from ..domain.privacy import Viewer
from .read_models import BenchmarkReads, run_summary, visible_run

ALPHA = 0.05
MIN_CASES = 10
EARLIER_RUNS = 50
"""How far back the agent's runs are looked through for the one before."""


def sign_test_p(lost: int, gained: int) -> float:
    """Two-sided exact binomial p of `lost` against `gained` changed cases at one half."""
    n = lost + gained
    if n == 0:
        return 1.0
    tail: float = sum(math.comb(n, i) for i in range(min(lost, gained) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def _earlier(store: BenchmarkReads, run: RunRecord) -> RunRecord:
    """The agent's newest finished run of the same suite version submitted before `run`."""
    for other in store.benchmarks.benchmark_runs_of(AgentRef(run.login, run.slug), EARLIER_RUNS):
        if (other.suite == run.suite and other.run_id != run.run_id and other.status == "done"
                and other.submitted_at < run.submitted_at):
            found = store.benchmarks.get_benchmark_run(other.run_id)
            if found is not None:
                return found
    raise NotFound(f"no earlier run of {run.suite} by this agent to compare with: pass against")


def _line(key: str, title: str, lost: int, gained: int) -> dict[str, Any]:
    return {"key": key, "title": title, "lost": lost, "gained": gained,
            "p_value": sign_test_p(lost, gained),
            "method": "McNemar's exact test on the cases that changed" if key == "pass_hat_k"
            else "sign test on the cases whose pass rate moved"}


def check_run(store: BenchmarkReads, run_id: str, against: str | None, min_cases: int,
              viewer: Viewer) -> dict[str, Any]:
    run, _ = visible_run(store, None, run_id, viewer)
    if against is not None:
        base, _ = visible_run(store, None, against, viewer)
        if base.suite != run.suite:
            raise Invalid(f"the runs are of different suites ({run.suite}, {base.suite})")
    else:
        base = _earlier(store, run)
    if base.run_id == run.run_id:
        raise Invalid("a run compared with itself")
    new_cases = {c["case_id"]: c for c in (run.summary or {}).get("per_case", [])}
    old_cases = {c["case_id"]: c for c in (base.summary or {}).get("per_case", [])}
    common = [case for case in new_cases if case in old_cases]
    lines = [
        _line("pass_hat_k", "pass^k (cases passed every repeat)",
              sum(old_cases[c]["pass_all"] and not new_cases[c]["pass_all"] for c in common),
              sum(new_cases[c]["pass_all"] and not old_cases[c]["pass_all"] for c in common)),
        _line("pass_rate", "Pass rate per case",
              sum(new_cases[c]["pass_rate"] < old_cases[c]["pass_rate"] for c in common),
              sum(new_cases[c]["pass_rate"] > old_cases[c]["pass_rate"] for c in common))]
    threshold = ALPHA / len(lines)
    worse = [line["key"] for line in lines
             if line["lost"] > line["gained"] and line["p_value"] < threshold]
    graded = run.status == "done" and base.status == "done"
    status = ("insufficient" if not graded or len(common) < min_cases
              else "worse" if worse else "pass")
    return {"status": status, "min_cases": min_cases, "cases": len(common), "alpha": ALPHA,
            "threshold": threshold, "worse": worse if status == "worse" else [],
            "run": run_summary(run), "against": run_summary(base), "lines": lines}
