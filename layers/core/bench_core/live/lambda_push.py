"""The live push leaves the ingest invocation on AWS: an asynchronous invoke (`Event`) of the
push function (`lambdas/live_push.py`), so an ingest answer waits for one Invoke call, never
for the watchers' `post_to_connection` calls.

Lambda queues the event and answers 202 at once. A batch whose events do not fit one payload is
sent in consecutive parts, each pushed as a batch of its own.
"""

from __future__ import annotations

from typing import Any

import boto3

from ..domain.field_limits import dumps
from ..domain.models import AgentRef
from .clients import LazyClient

MAX_PAYLOAD_BYTES = 1000 * 1024
"""Under the 1 MB an asynchronous invoke takes (the Invoke API's documented limit)."""


def payloads(ref: AgentRef, bodies: list[dict[str, Any]]) -> list[bytes]:
    """The push function's events for `bodies`, in as few payloads under the limit as they fit
    in, in order; an event too big for one alone goes alone (its values were cut to previews,
    `live_events.compact`, so that is an event of many fields, and rare)."""
    head = f'{{"agent":{dumps(ref.path)},"events":['.encode()
    parts: list[list[bytes]] = [[]]
    size = len(head) + 2
    for item in (dumps(b).encode() for b in bodies):
        if parts[-1] and size + len(item) + 1 > MAX_PAYLOAD_BYTES:
            parts.append([])
            size = len(head) + 2
        parts[-1].append(item)
        size += len(item) + 1
    return [head + b",".join(part) + b"]}" for part in parts]


def lambda_client() -> Any:
    return boto3.client("lambda")


class LambdaPush:
    """`ports.live.PushDispatch` by Lambda's asynchronous invocation."""

    def __init__(self, function_name: str, *, client: Any = None) -> None:
        self.function_name = function_name
        self._client = LazyClient(lambda_client, client)

    def dispatch(self, ref: AgentRef, bodies: list[dict[str, Any]]) -> None:
        for payload in payloads(ref, bodies):
            self._client.get().invoke(FunctionName=self.function_name, InvocationType="Event",
                               Payload=payload)
