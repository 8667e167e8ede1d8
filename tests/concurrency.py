"""Sends that must happen at the same moment, for tests of concurrent writers."""

from __future__ import annotations

import threading


def in_parallel(*sends) -> list:
    """Run every send at the same moment, each on its own thread; their outcomes in order."""
    barrier = threading.Barrier(len(sends))
    results: list = [None] * len(sends)

    def run(i: int) -> None:
        barrier.wait()
        results[i] = sends[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(sends))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results
