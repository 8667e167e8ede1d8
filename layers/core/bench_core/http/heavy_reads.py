"""Reads whose cost grows with the data they show (a run's page and JSON, the runs list, a task
with its events) take turns: at most `Settings.heavy_reads` of them run at once in one server
process, each in the threadpool; the others wait for a turn, at most `heavy_read_wait_s`,
then get 503 with `Retry-After`. A burst of such readers thus costs the memory of a few reads,
not of all, and cheap routes (/healthz) keep answering meanwhile: the event loop never runs a
heavy read, waiting for a turn holds no thread, and only the few reads that have one compete
with the rest for the interpreter.

On AWS Lambda an invocation serves one request, so a turn is always free there.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from ..domain.errors import BenchError
from ..settings import Settings

P = ParamSpec("P")
T = TypeVar("T")

RETRY_AFTER_S = 1


class Busy(BenchError):
    status = 503


_turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary())
"""The turns of each event loop (a server's; tests run several, each on its own loop)."""


async def heavy_read(settings: Settings, read: Callable[P, T], *args: P.args,
                     **kwargs: P.kwargs) -> T:
    """`read(*args, **kwargs)` in the threadpool once a turn is free (`Busy` if none is
    within `settings.heavy_read_wait_s`)."""
    release = await take_turn(settings)
    try:
        return await run_in_threadpool(read, *args, **kwargs)
    finally:
        release()


async def take_turn(settings: Settings) -> Callable[[], None]:
    """Wait for a turn (`Busy` if none is free within `settings.heavy_read_wait_s`) and
    return what gives it back: for a read that goes on past its handler (a streamed export,
    `TurnStream`), which gives it back when the stream ends."""
    loop = asyncio.get_running_loop()
    turns = _turns.get(loop)
    if turns is None:
        turns = _turns[loop] = asyncio.Semaphore(max(1, settings.heavy_reads))
    try:
        async with asyncio.timeout(settings.heavy_read_wait_s if turns.locked() else None):
            await turns.acquire()
    except TimeoutError:
        raise Busy("the server is busy with other big reads; try again in a moment",
                   [{"msg": f"more than {settings.heavy_reads} at once"}],
                   headers={"Retry-After": str(RETRY_AFTER_S)}) from None
    return turns.release


class TurnStream(StreamingResponse):
    """A streamed answer read during a turn (`take_turn`), given back once the answer is
    sent or abandoned, whether or not the stream was ever started."""

    def __init__(self, content: Iterator[bytes], release: Callable[[], None],
                 **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self.release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.release()
