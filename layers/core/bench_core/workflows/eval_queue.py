"""Where evals start on AWS: one SQS message per batch's runs, on the eval queue.

The queue is the buffer between ingest and the judge. EvalFunction takes its messages at a
bounded concurrency (the event source's `MaximumConcurrency`), a few seconds' worth at a time,
so a burst of finished runs waits on the queue instead of taking Lambda's concurrency from
ingest, and the runs of many small requests of one agent are judged and recorded together
(`evals/queue.py`). A message the judge could not get through comes back later, backing off to
hours, for two days; one that keeps failing past that goes to the dead-letter queue.

Sending costs no store write. Only when the queue refuses a message are its runs marked
pending in the store, for the hourly sweep to queue again: nothing is lost in between.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from ..clock import SYSTEM_CLOCK, Clock
from ..domain.models import AgentRef, iso
from ..log import logger
from ..ports.store import EvalStore
from ..ports.workflows import eval_start

RUNS_PER_MESSAGE = 32
"""Runs one message carries: what the judge takes side by side in one round (a batch of
1,000 events finishes up to 500 runs: 16 messages)."""


class EvalQueue:
    """Starts evals by sending to the queue at `url`; `evals` keeps what could not be sent."""

    def __init__(self, url: str, evals: EvalStore, client: Any = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.url = url
        self.evals = evals
        self.clock = clock
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("sqs")
        return self._client

    def start_evals(self, ref: AgentRef, task_ids: list[str], *,
                    private: bool | None = None, marked: bool = False) -> None:
        now = iso(self.clock.now())
        for i in range(0, len(task_ids), RUNS_PER_MESSAGE):
            runs = task_ids[i:i + RUNS_PER_MESSAGE]
            body = json.dumps(eval_start(ref.path, runs, private=private, queued_at=now,
                                         marked=marked))
            try:
                self.client.send_message(QueueUrl=self.url, MessageBody=body)
            except Exception:
                logger.exception("could not queue evals; marked pending for the sweep",
                                 extra={"agent": ref.path, "runs": len(runs)})
                self._keep(ref, runs, now)

    def put_back(self, receipt: str, wait: timedelta) -> None:
        """A delivered message, to be delivered again after `wait` (its receipt is what the
        delivery handed over); raises if the queue refuses."""
        self.client.change_message_visibility(QueueUrl=self.url, ReceiptHandle=receipt,
                                              VisibilityTimeout=int(wait.total_seconds()))

    def _keep(self, ref: AgentRef, runs: list[str], now: str) -> None:
        try:
            self.evals.mark_evals_pending(ref, runs, now)
        except Exception:  # the store too: logged, and the runs stay without a result
            logger.exception("could not mark evals pending", extra={"agent": ref.path})
