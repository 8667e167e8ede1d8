"""What a use case may ask for: of the composition root, one port each (`Services` has them
all); of the store, one concern each (a `Store` has them all).

A use case names the few it uses by composing these into its own protocol (`IngestPorts`,
`EvalPorts`, `RunReads`, ...), so it neither imports `Services` nor sees more than it needs, and
a test can hand it a plain object with just those attributes. A use case that needs only the
store's runs and their tasks asks for `class RunReads(WithRuns, WithIngest, Protocol)`, and is handed
the whole store all the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..clock import Clock
    from ..settings import Settings
    from .embed import Embedder
    from .judge import Judge
    from .live import LiveFeed
    from .llm import LLM
    from .store import (
        AccountStore,
        AgentStore,
        AlertStore,
        BenchmarkStore,
        ClusterStore,
        EvalStore,
        FeedbackStore,
        IngestStore,
        LeaderboardStore,
        RetentionStore,
        ReuseStore,
        RunStore,
        TimeSeriesStore,
    )
    from .workflows import Workflows


class WithSettings(Protocol):
    @property
    def settings(self) -> Settings: ...


class WithClock(Protocol):
    @property
    def clock(self) -> Clock:
        """What "now" is (a test's may stand still)."""
        ...


class WithWorkflows(Protocol):
    @property
    def workflows(self) -> Workflows: ...


class WithLive(Protocol):
    @property
    def live(self) -> LiveFeed: ...


class WithLLM(Protocol):
    @property
    def llm(self) -> LLM | None:
        """None when no model is configured (offline judge and describer)."""
        ...


class WithJudge(Protocol):
    @property
    def judge(self) -> Judge: ...


class WithEmbedder(Protocol):
    @property
    def embedder(self) -> Embedder: ...


# ---- the store's concerns ------------------------------------------------------------------


class WithIngest(Protocol):
    @property
    def ingest(self) -> IngestStore: ...


class WithRuns(Protocol):
    @property
    def runs(self) -> RunStore: ...


class WithAgents(Protocol):
    @property
    def agents(self) -> AgentStore: ...


class WithAccounts(Protocol):
    @property
    def accounts(self) -> AccountStore: ...


class WithEvals(Protocol):
    @property
    def evals(self) -> EvalStore: ...


class WithLeaderboard(Protocol):
    @property
    def leaderboard(self) -> LeaderboardStore: ...


class WithReuse(Protocol):
    @property
    def reuse(self) -> ReuseStore: ...


class WithBenchmarks(Protocol):
    @property
    def benchmarks(self) -> BenchmarkStore: ...


class WithRetention(Protocol):
    @property
    def retention(self) -> RetentionStore: ...


class WithFeedback(Protocol):
    @property
    def feedback(self) -> FeedbackStore: ...


class WithAlerts(Protocol):
    @property
    def alerts(self) -> AlertStore: ...


class WithTimeSeries(Protocol):
    @property
    def timeseries(self) -> TimeSeriesStore: ...


class WithClusters(Protocol):
    @property
    def clusters(self) -> ClusterStore: ...
