"""The live-feed transport on AWS: API Gateway WebSocket connections, recorded in the store by
`$connect` (`lambdas/websocket.py`), posted to with `post_to_connection` by the push function
(`lambdas/live_push.py`).

Who is connected is one Query of the owner's connections. Connections API Gateway reports gone
(410) are forgotten as they are found; one the use case closes is deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
from botocore.exceptions import ClientError
from starlette.concurrency import run_in_threadpool

from ..clock import SYSTEM_CLOCK, Clock
from ..domain.live import LiveConnection
from ..domain.models import iso
from ..log import logger
from ..ports.services import WithAccounts
from .clients import LazyClient

MAX_PARALLEL_POSTS = 16
"""Connections posted to at once: one agent's watchers are reached in about one round trip."""


def management_client(endpoint: str) -> Any:
    """The API Gateway Management API client for the WebSocket stage at `endpoint`
    (`https://{api}.execute-api.{region}.amazonaws.com/{stage}`)."""
    return boto3.client("apigatewaymanagementapi", endpoint_url=endpoint)


class ApiGatewayTransport:
    def __init__(self, store: WithAccounts, endpoint: str, *, client: Any = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.store = store
        self.clock = clock
        self.endpoint = endpoint
        self._client = LazyClient(lambda: management_client(endpoint), client)

    @property
    def client(self) -> Any:
        return self._client.get()

    async def watchers(self, login: str) -> list[LiveConnection]:
        connections = await run_in_threadpool(self.store.accounts.live_connections, login,
                                              iso(self.clock.now()))
        return sorted(connections, key=lambda c: c.connection_id)

    async def deliver(self, parcels: Sequence[tuple[LiveConnection, list[str] | None]]) -> None:
        await run_in_threadpool(self.send, parcels)

    def send(self, parcels: Sequence[tuple[LiveConnection, list[str] | None]]) -> int:
        """Post each connection its messages (None: disconnect it); the number reached."""
        def one(parcel: tuple[LiveConnection, list[str] | None]) -> bool:
            """One connection; its failure is logged and never stops the others."""
            connection, messages = parcel
            try:
                if messages is None:
                    self.disconnect(connection)
                    return False
                return all(self.post(connection, message) for message in messages)
            except Exception:
                logger.exception("live push to a connection failed",
                                 extra={"connection": connection.connection_id})
                return False

        workers = min(MAX_PARALLEL_POSTS, len(parcels))
        if workers <= 1:
            reached = [one(p) for p in parcels]
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                reached = list(pool.map(one, parcels))
        return sum(reached)

    def post(self, connection: LiveConnection, message: str) -> bool:
        """Post one message; False (and the connection forgotten) if it is gone."""
        try:
            self.client.post_to_connection(ConnectionId=connection.connection_id,
                                           Data=message.encode())
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "GoneException":
                raise
            self.store.accounts.remove_connection(connection.connection_id)
            return False
        return True

    def disconnect(self, connection: LiveConnection) -> None:
        """Close a connection whose viewer may no longer watch (API Gateway then runs
        `$disconnect`, which forgets it; forgetting it here too makes that certain)."""
        self.store.accounts.remove_connection(connection.connection_id)
        try:
            self.client.delete_connection(ConnectionId=connection.connection_id)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "GoneException":
                raise
