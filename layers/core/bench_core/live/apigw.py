"""The live feed on AWS: API Gateway WebSocket connections, recorded in the store by `$connect`
(`gateway.py`), pushed to from ingest with `post_to_connection`.

A push reads the owner's connections (one Query) and stops there when nobody watches, so an
idle agent costs one read per batch. Connections API Gateway reports gone (410) are removed as
they are found; a viewer whose agent has gone private since connecting is disconnected.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol

import boto3
from botocore.exceptions import ClientError
from starlette.concurrency import run_in_threadpool

from ..clock import SYSTEM_CLOCK, Clock
from ..domain.live import LiveConnection, may_watch
from ..domain.models import Agent, AgentRef, iso
from ..domain.privacy import Viewer
from ..log import logger
from ..ports.services import WithAccounts, WithAgents

if TYPE_CHECKING:
    from ..ports.live import Audiences


class FeedConcerns(WithAccounts, WithAgents, Protocol):
    """The connections recorded by `$connect`, and the agents pushed about."""


MAX_PARALLEL_POSTS = 16
"""Connections posted to at once: one agent's watchers are reached in about one round trip."""


def management_client(endpoint: str) -> Any:
    """The API Gateway Management API client for the WebSocket stage at `endpoint`
    (`https://{api}.execute-api.{region}.amazonaws.com/{stage}`)."""
    return boto3.client("apigatewaymanagementapi", endpoint_url=endpoint)


class ApiGatewayFeed:
    def __init__(self, store: FeedConcerns, endpoint: str, audiences: Audiences, *,
                 client: Any = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.store = store
        self.clock = clock
        self.audiences = audiences
        self.endpoint = endpoint
        self._client = client
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = management_client(self.endpoint)
            return self._client

    async def publish(self, ref: AgentRef, events: Sequence[Any]) -> None:
        try:
            await run_in_threadpool(self.push, ref, events)
        except Exception:
            logger.exception("live feed push failed", extra={"agent": ref.path})

    def push(self, ref: AgentRef, events: Sequence[Any]) -> int:
        """Send the batch to every connection watching `ref`; the number reached."""
        connections = sorted((c for c in self.store.accounts.live_connections(ref.login, iso(self.clock.now()))
                              if c.channel.covers(ref)), key=lambda c: c.connection_id)
        if not connections:
            return 0
        agent = self.store.agents.get_agent(ref)
        if agent is None:
            return 0
        delivery = self.audiences.messages(agent, events)

        def send(connection: LiveConnection) -> bool:
            """One connection; its failure is logged and never stops the others."""
            try:
                messages = delivery.for_viewer(connection.viewer)
                if messages is delivery.owner and not self.audiences.still_granted(connection.grant):
                    messages = None
                if messages is None:
                    self.disconnect(connection)
                    return False
                return all(self.post(connection, message) for message in messages)
            except Exception:
                logger.exception("live push to a connection failed",
                                 extra={"agent": ref.path, "connection": connection.connection_id})
                return False

        workers = min(MAX_PARALLEL_POSTS, len(connections))
        if workers <= 1:
            reached = [send(c) for c in connections]
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                reached = list(pool.map(send, connections))
        return sum(reached)

    async def close_granted(self, login: str, grant: str) -> None:
        await self._close(login, lambda c: c.grant == grant)

    async def close_unwatchable(self, agent: Agent) -> None:
        await self._close(agent.login, lambda c: c.channel.covers(agent.ref) and not may_watch(
            c.channel, agent, Viewer(c.viewer)))

    async def _close(self, login: str, gone: Callable[[LiveConnection], bool]) -> None:
        """Disconnect `login`'s connections for which `gone` holds (only the owner's own feeds
        are indexed; anywhere else a viewer sees what anyone may)."""
        def close_all() -> None:
            for connection in self.store.accounts.live_connections(login, iso(self.clock.now())):
                if gone(connection):
                    self.disconnect(connection)

        try:
            await run_in_threadpool(close_all)
        except Exception:
            logger.exception("closing live connections failed", extra={"login": login})

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
