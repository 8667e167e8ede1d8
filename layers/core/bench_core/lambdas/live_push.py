"""The push function (`functions/push`): a batch an ingesting function handed off
(`live/lambda_push.py`, Lambda's asynchronous invoke) sent to the connections watching its
agent, as the live feed's use case decides (`reads/live_feed.py`).

Its event is `{"agent": "login/slug", "events": [...]}`, the events compacted to what a summary
reads (`live_events.compact`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..domain.models import AgentRef
from ..runtime.adapters import Services
from .handler import ServicesHandler


class LivePush(ServicesHandler):
    """The Lambda handler. Its event loop, like its services, lasts the execution environment's
    life (`asyncio.run` would close one and unset the thread's loop each time)."""

    def __init__(self, services: Services | None = None) -> None:
        super().__init__(services)
        self._loop: asyncio.AbstractEventLoop | None = None

    def __call__(self, event: dict[str, Any], context: Any) -> None:
        login, _, slug = str(event["agent"]).partition("/")
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(self.services.live.push(AgentRef(login, slug),
                                                              event["events"]))
