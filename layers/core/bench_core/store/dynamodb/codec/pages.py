"""Events stored together: a page (PART#{A}#{n}, B#{newest ts}#{unique}) holds a batch's events
as one JSON text, so a batch costs a few writes, not one per event (`ingest.py`). The text is
kept deflated (`z`, zlib) where that makes it smaller by a tenth or more, which a page of
model messages is (about 3 to 1): a page is billed by its bytes, written once and read where
content is shown (`content.py`), so its bytes are most of what an event costs. Pages written
before hold the text itself (`events`), as does one that would not shrink.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any

from ....domain.models import CleanEvent
from .keys import PAGE, AgentKeys
from .values import to_item, ttl


def event_expiry(agent: AgentKeys, ts: str, retention_days: int) -> int | None:
    """When an event of time `ts` expires: `retention_days` later (0: never), or with its
    temporary agent if that is sooner."""
    times = [agent.expires_at]
    if retention_days > 0:
        times.append(ttl(ts)["expires_at"] + retention_days * 86_400)
    return min((t for t in times if t is not None), default=None)


PACKED_AT_MOST = 0.9
"""A page is kept deflated only if that takes a tenth off its bytes at least."""


def page_item(agent: AgentKeys, sk: str, entries: list[str], expires_at: int | None
              ) -> dict[str, Any]:
    """Events stored together: `entries` are `page_entry` JSON texts."""
    text = ("[" + ",".join(entries) + "]").encode()
    packed = zlib.compress(text, 6)
    attrs: dict[str, Any] = ({"z": packed} if len(packed) <= len(text) * PACKED_AT_MOST
                             else {"events": text.decode()})
    if expires_at is not None:
        attrs["expires_at"] = expires_at
    return {**agent.key(sk), **to_item(attrs)}


def page_entry(event: CleanEvent, body: str, seq: int) -> str:
    """One event of a page as JSON text: [ts, seq, task_id, id, body], `body` as stored."""
    return f"[{json.dumps(event.ts)},{seq},{json.dumps(event.task_id)},{json.dumps(event.id)},{body}]"


@dataclass(frozen=True)
class StoredEvent:
    ts: str
    seq: int
    task_id: str | None
    id: str
    body: dict[str, Any]

    @property
    def order(self) -> tuple[str, int]:
        """Time, then arrival: events of one millisecond keep the order they came in."""
        return self.ts, self.seq


def page_events(item: dict[str, Any]) -> list[StoredEvent]:
    text = zlib.decompress(bytes(item["z"])) if "z" in item else item["events"]
    return [StoredEvent(*entry) for entry in json.loads(text)]


def page_size(item: dict[str, Any]) -> int:
    """The bytes a page holds (as stored)."""
    return len(bytes(item["z"])) if "z" in item else len(item.get("events", ""))


def page_max_ts(sk: str) -> str:
    """The newest event time of a page, from its key (`B#{max ts}#{unique}`)."""
    return sk[len(PAGE):].split("#", 1)[0]
