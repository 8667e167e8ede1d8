"""Where the table's layout stands, for the reads and writes of items a newer layout moved.

The table's migration (`migration.py`) records on `MARKER` the last layout `VERSION` a pass of
it got through. Until one has got through version 4, an agent's tasks, chunks, pages and claims
may still be under the agent's own partition key, where older code put them, instead of the
partition `codec.keys` now gives them. While that may be so, a read that misses such an item
where it now lives looks where it was (`client.Table`), and a write of a task moves it first
(`rehome.py`), so nothing is read or written twice. Until one has got through version 3,
subtasks may have no row in `spans` yet, and a listing of a task's subtasks reads its listing
in the `tasks` index (where older code put subtasks) as well as its run's spans (`ingest.py`).
Until one has got through version 5, a version's counters over time may still be on items of
its own, which a read of them reads as well (`timeseries.py`).
Once the migration is through, a process learns so within `RECHECK_SECONDS`; from then on a
miss is a miss.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from .codec.values import to_item

if TYPE_CHECKING:
    from .client import Table

VERSION = 5
"""The layout this code writes, as far as a migration is concerned: raised with each new step
(2: task items chunked; 3: spans move from the `runs` index to `spans`; 4: tasks and events
spread over the agent's partitions; 5: a version's buckets over time kept on the agent's)."""
SPANS = 3
"""The version from which every subtask has its row in `spans`."""
SPREAD = 4
"""The version from which nothing is left under an agent's own partition key but its own."""
SERIES_MERGED = 5
"""The version from which no version has bucket items of its own (`timeseries.py`)."""
MARKER = to_item({"pk": "MIGRATION", "sk": "META"})
"""Where the table's migration is: `done` (the last `VERSION` a pass got through), and while a
pass of `version` is under way, `resume` (the key to scan on from, as JSON). A table without it
is new: nothing in it was written by older code."""
RECHECK_SECONDS = 60.0


class Layout:
    """Whether items may still be where an older layout put them: read from `MARKER` on the
    first look, again at most every `RECHECK_SECONDS` while they may, never again once the
    migration is through."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._settled = False
        self._done = 0
        self._checked = float("-inf")

    @property
    def settled(self) -> bool:
        """Known to be through (no read of `MARKER` needed to say so)."""
        return self._settled

    def settle(self) -> None:
        """The migration got through: nothing is left where older code put it."""
        self._settled = True

    def moving(self, table: Table) -> bool:
        """Items may still be under the agent's own partition key (before `SPREAD`)."""
        return self.before(table, SPREAD)

    def before(self, table: Table, version: int) -> bool:
        """No pass of the migration is known to have got through `version` yet."""
        if self._settled:
            return False
        with self._lock:
            if time.monotonic() - self._checked >= RECHECK_SECONDS:
                marker = table.get(MARKER)  # none: a new table, which no older code wrote
                self._done = VERSION if marker is None else int(marker.get("done", 0))
                self._settled = self._done >= VERSION
                self._checked = time.monotonic()
            return self._done < version
