"""Heavy reads take turns (`http.heavy_reads`): one that finds every turn taken waits for one,
and is refused with 503 and Retry-After once it has waited as long as the server allows.
Through real HTTP: tests/http/test_big_run_reads.py."""

from __future__ import annotations

import asyncio
import threading

import pytest
from bench_core.http.heavy_reads import Busy, heavy_read
from bench_core.settings import Settings


def test_a_read_waits_for_a_turn_and_is_refused_once_its_wait_is_over() -> None:
    one_turn = Settings(heavy_reads=1, heavy_read_wait_s=30.0)
    release = threading.Event()

    async def scenario() -> tuple[bool, str, Busy]:
        first = asyncio.create_task(heavy_read(one_turn, release.wait))
        await asyncio.sleep(0)  # the first has the turn, in a worker thread
        second = asyncio.create_task(heavy_read(one_turn, lambda: "second"))
        with pytest.raises(Busy) as refused:
            await heavy_read(Settings(heavy_reads=1, heavy_read_wait_s=0.0), lambda: "third")
        assert not second.done()
        release.set()
        return await first, await second, refused.value

    first, second, refused = asyncio.run(scenario())
    assert (first, second) == (True, "second")
    assert refused.status == 503 and refused.headers == {"Retry-After": "1"}
