"""The eval function (`functions/eval`): the messages the eval queue delivers, judged
(`evals/queue.py`), and the ones to try again put back with their wait; then a look at each
agent's regression monitors (`alerts/watch.py`).

Its event is SQS's: up to ten records, each with the message's body (an eval state), its id,
its receipt and its attributes (`SentTimestamp`, `ApproximateReceiveCount`). It answers with
the records to deliver again (`batchItemFailures`; the event source reports partial failures),
each first made invisible for its wait (`ChangeMessageVisibility`): the rest are deleted. A
record whose body is no eval state is logged and dropped, not retried for ever.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ..alerts.delivery import longest_s
from ..alerts.watch import WATCH_MARGIN, watch_agent
from ..evals.queue import Queued, judge_messages, queued
from ..log import logger
from ..runtime.adapters import Services
from ..workflows.eval_queue import EvalQueue
from .handler import ServicesHandler

RECORD_MARGIN = timedelta(seconds=10)
"""Kept back from the invocation's time for the last round's store write and the answer."""


class EvalDeliveries(ServicesHandler):
    """The Lambda handler; `client` is SQS's (built on first use by the queue)."""

    def __init__(self, services: Services | None = None, client: Any = None) -> None:
        super().__init__(services)
        self._client = client
        self._queue: EvalQueue | None = None

    @property
    def queue(self) -> EvalQueue:
        if self._queue is None:
            services = self.services
            self._queue = EvalQueue(services.settings.eval_queue_url or "", services.store.evals,
                                    client=self._client, clock=services.clock)
        return self._queue

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        records = event.get("Records") or []
        messages = [m for m in map(_message, records) if m is not None]

        def time_left() -> timedelta:
            return timedelta(milliseconds=context.get_remaining_time_in_millis()) - RECORD_MARGIN

        again = judge_messages(self.services, messages, time_left)
        watch_time = WATCH_MARGIN + timedelta(seconds=longest_s(self.services.settings.reuse))
        for ref in dict.fromkeys(m.agent for m in messages):
            if time_left() > watch_time:  # else the next delivery of the agent's runs looks
                watch_agent(self.services, ref)
        receipts = {r["messageId"]: r["receiptHandle"] for r in records}
        for message_id, wait in again.items():
            try:
                self.queue.put_back(receipts[message_id], wait)
            except Exception:  # it comes back after the queue's own visibility timeout
                logger.exception("could not delay a message", extra={"message_id": message_id})
        return {"batchItemFailures": [{"itemIdentifier": m} for m in again]}


def _message(record: dict[str, Any]) -> Queued | None:
    attributes = record.get("attributes") or {}
    try:
        sent = datetime.fromtimestamp(int(attributes["SentTimestamp"]) / 1000, UTC)
        return queued(record["messageId"], record["body"], sent,
                      int(attributes.get("ApproximateReceiveCount", 1)))
    except (KeyError, ValueError, TypeError) as exc:
        logger.error("dropped a message that is no eval", extra={
            "message_id": record.get("messageId"), "error": str(exc)})
        return None
