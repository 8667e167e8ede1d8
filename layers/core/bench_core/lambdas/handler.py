"""What the plain Lambda handlers share: services built from the environment on the first event
(so importing a handler stays cheap for SnapStart and tests) and kept for the warm execution
environment's life, as the HTTP functions' apps keep theirs."""

from __future__ import annotations

from ..runtime.adapters import Services
from ..settings import Settings


class ServicesHandler:
    def __init__(self, services: Services | None = None) -> None:
        self._services = services

    @property
    def services(self) -> Services:
        if self._services is None:
            self._services = Services.from_settings(Settings.from_env())
        return self._services
