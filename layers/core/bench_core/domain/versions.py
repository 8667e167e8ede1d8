"""An agent's versions: what each release's runs add up to, kept on write (one small record per
version), so a profile can show every release's numbers and the newest against the one before
it without reading a run.

A version is a short public label (a tag, a semver, a git commit): it names the code, not what
the code was given, so it is shown like the agent's model. It is a run's (its root task's), set
from the batch that first records the run (`folding.fold_batch`); a run keeps the version it
was first recorded with.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from . import stats
from .models import RunDelta


@dataclass
class VersionStats:
    """One version's counters: its runs as the agent's own (`AgentStats`) count them."""

    version: str
    runs: int = 0
    successes: int = 0
    cost_usd_total: float = 0.0
    evidence_cost_usd_total: float = 0.0
    latency_hist: list[int] = field(default_factory=stats.empty_histogram)
    eval_count: int = 0
    eval_score_sum: float = 0.0
    first_run_at: str | None = None
    """When its first run ended: the order of versions (the newest is the one seen last)."""
    last_run_at: str | None = None

    @property
    def failures(self) -> int:
        return self.runs - self.successes

    def add_runs(self, runs: Iterable[RunDelta]) -> None:
        for run in runs:
            self.runs += 1
            self.successes += run.success
            self.cost_usd_total += run.cost_usd
            self.evidence_cost_usd_total += run.evidence_cost_usd
            if run.duration_ms is not None:
                self.latency_hist[stats.bucket_index(run.duration_ms)] += 1
            self.first_run_at = min((t for t in (self.first_run_at, run.ended_at) if t),
                                    default=None)
            self.last_run_at = max((t for t in (self.last_run_at, run.ended_at) if t),
                                   default=None)

    def add(self, other: VersionStats) -> None:
        """Another part of the same version's counters (a shard), added in."""
        self.runs += other.runs
        self.successes += other.successes
        self.cost_usd_total += other.cost_usd_total
        self.evidence_cost_usd_total += other.evidence_cost_usd_total
        self.latency_hist = stats.merge(self.latency_hist, other.latency_hist)
        self.eval_count += other.eval_count
        self.eval_score_sum += other.eval_score_sum
        firsts = [t for t in (self.first_run_at, other.first_run_at) if t]
        lasts = [t for t in (self.last_run_at, other.last_run_at) if t]
        self.first_run_at = min(firsts, default=None)
        self.last_run_at = max(lasts, default=None)


def runs_by_version(runs: Iterable[RunDelta]) -> dict[str, VersionStats]:
    """What a batch's finished runs add to each version they carry (runs with none add to no
    version)."""
    out: dict[str, VersionStats] = {}
    for run in runs:
        if run.version is not None:
            out.setdefault(run.version, VersionStats(run.version)).add_runs([run])
    return out


def newest_first(versions: Iterable[VersionStats]) -> list[VersionStats]:
    """Versions by when each was first seen, the newest first (ties: by name)."""
    return sorted(versions, key=lambda v: (v.first_run_at or "", v.version), reverse=True)
