"""The adapters one process uses, built once from settings. Entry points hold one of these.

The store is opened at once; the LLM, judge, embedder and workflow starter are built on first
use, so a Lambda that never judges (pages, badges) never pays for them at cold start.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .config import Settings
from .store import Store, open_store

if TYPE_CHECKING:
    from .accounts.secrets import Secrets
    from .embed import Embedder
    from .live import LiveFeed
    from .llm import LLM
    from .llm.judge import Judge
    from .workflows import Workflows


@dataclass
class Services:
    settings: Settings
    store: Store
    _built: dict[str, Any] = field(default_factory=dict, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> Services:
        return cls(settings=settings, store=open_store(settings))

    def provide(self, **adapters: Any) -> Services:
        """Use these adapters (`llm`, `judge`, `embedder`, `workflows`, `live`) instead of building
        them from settings: tests, and hosts wiring their own."""
        with self._lock:
            self._built.update(adapters)
        return self

    def _once(self, name: str, build: Callable[[], Any]) -> Any:
        with self._lock:
            if name not in self._built:
                self._built[name] = build()
            return self._built[name]

    @property
    def llm(self) -> LLM | None:
        """The judge's and describer's model; None when there is none (the heuristic judge)."""
        from .llm import open_llm

        return self._once("llm", lambda: open_llm(self.settings.llm))

    @property
    def judge(self) -> Judge:
        from .llm.judge import make_judge

        return self._once("judge", lambda: make_judge(self.llm, self.settings.llm, self.settings.judge))

    @property
    def embedder(self) -> Embedder:
        from .embed import open_embedder

        return self._once("embedder", lambda: open_embedder(self.settings.llm))

    @property
    def workflows(self) -> Workflows:
        from .workflows import open_workflows

        return self._once("workflows", lambda: open_workflows(self))

    @property
    def live(self) -> LiveFeed:
        """Where ingest pushes new events for open dashboards (bench_core.live)."""
        from .live import open_live_feed

        return self._once("live", lambda: open_live_feed(self.settings, self.store))

    @property
    def secrets(self) -> Secrets:
        """The session and GitHub secrets, read when first needed (bench_core.accounts)."""
        from .accounts.secrets import Secrets

        return self._once("secrets", lambda: Secrets(self.settings))

    def close(self) -> None:
        self.store.close()
