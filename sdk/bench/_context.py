"""Which task is running here, tracked with ``contextvars``.

A context variable follows ``await``, ``asyncio.gather`` (each task gets a copy of its creator's
context) and threads started through ``contextvars.copy_context().run`` or ``asyncio.to_thread``,
so a nested task finds its parent by itself. Plain ``threading.Thread`` targets start without the
creator's context and therefore begin new root tasks.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from bench._client import BenchTask

current: ContextVar[Optional[BenchTask]] = ContextVar("bench_current_task", default=None)


def current_task() -> Optional[BenchTask]:
    """The innermost Bench task running in this context, or None.

    Useful inside functions decorated with ``agent.span``::

        @agent.span("search")
        def search(q):
            bench.current_task().log("query", q)
    """
    return current.get()
