"""Where an answer too big to return goes: on AWS a Lambda answer holds at most 6 MB, so an
export past that (`reads/export.py`) is written to a private bucket and answered with a
short-lived link to it (`files/s3.py` `S3Drop`). One machine has no drop: it streams."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

LINK_S = 300
"""How long a link to a dropped file reads it."""


class FileDrop(Protocol):
    def put(self, name: str, chunks: Iterable[bytes], media_type: str) -> str:
        """Write `chunks` as the file `name` (a path under the drop, the last part the name
        a download is saved as) and return a link that reads it for a short while."""
        ...

    def link(self, name: str) -> str | None:
        """A link that reads the file `name` for a short while, or None if there is none."""
        ...


class ExportHandOff(Protocol):
    """Where an export that outlasts an API answer is made (`reads/export_jobs.py`): on AWS
    the export function, by an asynchronous invoke."""

    def hand_off(self, job: dict[str, Any]) -> None: ...
