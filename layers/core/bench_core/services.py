"""The adapters one process uses, built once from settings. Entry points hold one of these."""

from __future__ import annotations

from dataclasses import dataclass

from .config import Settings
from .store import Store, open_store


@dataclass
class Services:
    settings: Settings
    store: Store

    @classmethod
    def from_settings(cls, settings: Settings) -> Services:
        return cls(settings=settings, store=open_store(settings))

    def close(self) -> None:
        self.store.close()
