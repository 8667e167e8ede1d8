"""The composition root: which adapter of each port this process uses, opened once from settings.

Entry points hold one `Services`; nothing else in bench_core decides between adapters.

The store is opened at once; the LLM, judge, embedder and workflow starter are built on first
use, so a Lambda that never judges (pages, badges) never pays for them at cold start.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ..clock import SYSTEM_CLOCK, Clock
from ..domain.models import AgentRef
from ..ports.store import Store
from ..settings import LLMSettings, Settings

if TYPE_CHECKING:
    from ..accounts.secrets import Secrets
    from ..ports.embed import Embedder
    from ..ports.files import ExportHandOff, FileDrop
    from ..ports.judge import Judge
    from ..ports.live import LiveTransport
    from ..ports.llm import LLM
    from ..ports.workflows import Workflows
    from ..reads.live_feed import LiveFeed

Built = TypeVar("Built")


@dataclass
class Services:
    settings: Settings
    store: Store
    _built: dict[str, Any] = field(default_factory=dict, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock = SYSTEM_CLOCK) -> Services:
        return cls(settings=settings, store=open_store(settings, clock))

    def provide(self, **adapters: Any) -> Services:
        """Use these adapters (`llm`, `judge`, `embedder`, `workflows`, `live`, `files`,
        `exports`)
        instead of building them from settings: tests, and hosts wiring their own."""
        with self._lock:
            self._built.update(adapters)
        return self

    def _once(self, name: str, build: Callable[[], Built]) -> Built:
        with self._lock:
            if name not in self._built:
                self._built[name] = build()
            built: Built = self._built[name]
            return built

    @property
    def clock(self) -> Clock:
        """What "now" is for every use case: the clock the store was opened with."""
        return self.store.clock

    @property
    def llm(self) -> LLM | None:
        """The judge's and describer's model; None when there is none (the heuristic judge)."""
        return self._once("llm", lambda: open_llm(self.settings.llm))

    @property
    def judge(self) -> Judge:
        from ..evals.judge import make_judge

        return self._once("judge", lambda: make_judge(self.llm, self.settings.llm, self.settings.judge,
                                                      self.clock))

    @property
    def embedder(self) -> Embedder:
        return self._once("embedder", lambda: open_embedder(self.settings.llm))

    @property
    def workflows(self) -> Workflows:
        return self._once("workflows", lambda: open_workflows(self))

    @property
    def files(self) -> FileDrop | None:
        """Where an answer too big to return goes (AWS); None where answers stream."""
        return self._once("files", lambda: open_file_drop(self.settings))

    @property
    def exports(self) -> ExportHandOff | None:
        """Where an export that outlasts an API answer is made (AWS); None: within it."""
        return self._once("exports", lambda: open_export_hand_off(self.settings))

    @property
    def live(self) -> LiveFeed[Any]:
        """The live feed's use case over this process's transport: where ingest publishes new
        events for open dashboards, and who may watch."""
        return self._once("live", lambda: open_live_feed(self.settings, self.store,
                                                         self.live_transport))

    @property
    def live_transport(self) -> LiveTransport[Any]:
        """The connections the live feed reaches (bench_core.live)."""
        return self._once("live_transport", lambda: open_live_transport(self.settings, self.store))

    @property
    def secrets(self) -> Secrets:
        """The session and GitHub secrets, read when first needed (bench_core.accounts)."""
        from ..accounts.secrets import Secrets

        return self._once("secrets", lambda: Secrets(self.settings))

    def check_store(self) -> None:
        """A cheap round trip to the store (`GET /healthz`); raises if it cannot be reached."""
        self.store.agents.get_agent(AgentRef("-", "-"))

    def close(self) -> None:
        self.store.close()


def open_store(settings: Settings, clock: Clock = SYSTEM_CLOCK) -> Store:
    """The adapter the settings name; imports only that adapter (boto3 is slow to import)."""
    if settings.store == "dynamodb":
        from ..store.dynamodb.store import DynamoStore

        return DynamoStore.open(settings.table_name,
                                event_retention_days=settings.limits.event_retention_days,
                                max_agents_per_account=settings.limits.max_agents_per_account,
                                qualification=settings.ranking, clock=clock)
    if settings.store == "sqlite":
        from ..store.sqlite.store import SqliteStore

        return SqliteStore.open(settings.sqlite_path,
                                event_retention_days=settings.limits.event_retention_days,
                                max_agents_per_account=settings.limits.max_agents_per_account,
                                qualification=settings.ranking, clock=clock)
    if settings.store == "memory":
        from ..store.memory.store import MemoryStore

        return MemoryStore.open(event_retention_days=settings.limits.event_retention_days,
                                max_agents_per_account=settings.limits.max_agents_per_account,
                                qualification=settings.ranking, clock=clock)
    raise ValueError(f"unknown BENCH_STORE {settings.store!r}: use sqlite, dynamodb or memory")


def migrate_store(settings: Settings, *, deadline: float | None = None) -> dict[str, Any]:
    """Bring the store's items to the layout this code writes, and what that took. DynamoDB's
    is the table's migration (`store/dynamodb/migration.py`), which stops past `deadline`
    (`time.monotonic()`) and goes on from there next time; SQLite migrates as it opens."""
    if settings.store == "dynamodb":
        from ..store.dynamodb.client import Table
        from ..store.dynamodb.migration import migrate

        table = Table(settings.table_name)
        try:
            return migrate(table, deadline=deadline).to_dict()
        finally:
            table.close()
    open_store(settings).close()
    return {"done": True}


def open_file_drop(settings: Settings) -> FileDrop | None:
    """The export bucket where the settings name one (AWS), else none."""
    if not settings.export_bucket:
        return None
    from ..files.s3 import S3Drop

    return S3Drop(settings.export_bucket)


def open_export_hand_off(settings: Settings) -> ExportHandOff | None:
    """The export function where the settings name one (AWS), else none."""
    if not settings.export_function:
        return None
    from ..files.lambda_export import LambdaExport

    return LambdaExport(settings.export_function)


def open_live_transport(settings: Settings, store: Store) -> LiveTransport[Any]:
    """API Gateway when the settings name its management endpoint (AWS), else in-process."""
    if settings.live.endpoint:
        from ..live.apigw import ApiGatewayTransport

        return ApiGatewayTransport(store, settings.live.endpoint, clock=store.clock)
    from ..live.local import LocalTransport

    return LocalTransport()


def open_live_feed(settings: Settings, store: Store, transport: LiveTransport[Any]
                   ) -> LiveFeed[Any]:
    """The live feed's use case over `transport`; where the settings name a push function
    (AWS), a batch's push is handed to it instead of run in the ingesting process."""
    from ..reads.live_feed import LiveFeed

    dispatch = None
    if settings.live.push_function:
        from ..live.lambda_push import LambdaPush

        dispatch = LambdaPush(settings.live.push_function)
    return LiveFeed(store, transport, dispatch=dispatch)


def open_llm(settings: LLMSettings) -> LLM | None:
    """The adapter `settings.provider` names; None for `heuristic` (no model)."""
    if settings.provider == "heuristic":
        return None
    if settings.provider == "openai_compat":
        from ..llm.openai_compat import OpenAICompatLLM

        if not settings.url:
            raise ValueError("BENCH_LLM=openai_compat needs BENCH_LLM_URL (e.g. http://127.0.0.1:11434/v1)")
        return OpenAICompatLLM(settings.url, settings.model or "llama3.3", api_key=settings.api_key,
                               timeout_s=settings.timeout_s)
    if settings.provider == "bedrock":
        from ..llm.bedrock import BedrockLLM
        from ..ports.llm import Backoff

        return BedrockLLM(settings.bedrock_model, timeout_s=settings.timeout_s,
                          backoff=Backoff(attempts=settings.attempts, cap_s=settings.backoff_cap_s))
    raise ValueError(f"unknown BENCH_LLM {settings.provider!r}: use heuristic, openai_compat or bedrock")


def open_embedder(settings: LLMSettings) -> Embedder:
    if settings.embedder == "tfidf":
        from ..embed.tfidf import TfidfEmbedder

        return TfidfEmbedder()
    if settings.embedder == "bedrock":
        from ..embed.bedrock import BedrockEmbedder

        return BedrockEmbedder(settings.embed_model, dimensions=settings.embed_dimensions)
    raise ValueError(f"unknown BENCH_EMBEDDER {settings.embedder!r}: use tfidf or bedrock")


def open_workflows(services: Services) -> Workflows:
    """The eval queue and Step Functions when the settings name them (AWS); the in-process
    worker pool with the embedded store (one machine; `local.py` starts and stops it); else
    none."""
    settings = services.settings
    if (settings.eval_queue_url or settings.cluster_state_machine_arn
            or settings.benchmark_state_machine_arn):
        from ..workflows.eval_queue import EvalQueue
        from ..workflows.stepfunctions import StepFunctionsStarter

        queue = (EvalQueue(settings.eval_queue_url, services.store.evals, clock=services.clock)
                 if settings.eval_queue_url else None)
        return StepFunctionsStarter(queue, settings.cluster_state_machine_arn,
                                    benchmark_arn=settings.benchmark_state_machine_arn,
                                    clock=services.clock)
    if settings.embedded_store:
        from ..workflows.local import LocalRunner
        from .jobs import LocalJobs

        return LocalRunner(LocalJobs(services), workers=settings.judge.workers, clock=services.clock)
    from ..workflows.none import NoWorkflows

    return NoWorkflows()
