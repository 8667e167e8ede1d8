"""What a use case may ask the composition root for, one port each (`Services` has them all).

A use case names the few it uses by composing these into its own protocol (`IngestPorts`,
`EvalPorts`, `ClusterPorts`, `RunPorts`), so it neither imports `Services` nor sees more than it
needs, and a test can hand it a plain object with just those attributes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..settings import Settings
    from .embed import Embedder
    from .judge import Judge
    from .live import LiveFeed
    from .llm import LLM
    from .store import Store
    from .workflows import Workflows


class WithStore(Protocol):
    @property
    def store(self) -> Store: ...


class WithSettings(Protocol):
    @property
    def settings(self) -> Settings: ...


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
