"""Evals from a queue: the messages one delivery brings, judged by agent, each answered done
or again later.

On AWS every batch's runs are one message on the eval queue (`workflows/eval_queue.py`), and
the queue hands EvalFunction up to ten messages at a time, gathered for a few seconds
(`lambdas/eval_queue.py`). Here they are judged and recorded by agent: the runs of all the
messages of one agent, up to `RUNS_AT_ONCE`, go through the eval steps together
(`workflow.run_eval`), so their results are one store write with one update of the agent,
however many requests they came in (a run per request costs its task's write and a share of
the agent's). A message is then

- done: every run has its result (or is gone);
- again later, after `retry_delay` (5 minutes, doubling to 12 hours): the judge could not be
  reached for some of its runs, or there was no time left to judge them; its judged runs are
  found judged the next time;
- given up: it was first queued more than `GIVE_UP_AFTER` ago; its runs still without a result
  are recorded unscored, saying why (`GAVE_UP`), so a run the judge never reached says so on its
  page instead of staying pending for ever.

The queue itself (visibility, deletion, its dead-letter queue for messages that keep failing)
is the entry point's; this module knows only messages.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..domain.models import AgentRef, EvalResult, iso
from ..log import logger
from ..ports.llm import LLMUnavailable
from ..ports.services import WithEvals
from ..ports.workflows import State, eval_start, parse_agent
from .workflow import EvalPorts, left_for_later, run_eval

GIVE_UP_AFTER = timedelta(days=2)
GAVE_UP = "not judged: the judge could not be reached within two days of the run's end"
"""Why a run whose eval waited past `GIVE_UP_AFTER` without a result is unscored."""
RUNS_AT_ONCE = 32
"""Runs judged together (side by side: `workflow.JUDGES_AT_ONCE`), so one round lasts one
judgement however many runs it holds."""
FIRST_RETRY = timedelta(minutes=5)
LAST_RETRY = timedelta(hours=12)
JUDGEMENT = timedelta(seconds=100)
"""The longest one round of judging may take (a judgement: see template.yaml, Time budgets)."""
"""Waits between deliveries of a message whose runs the judge could not reach: doubling from
the first to the last (SQS's longest visibility), so a judge throttled for hours is asked a
few times an hour at first and then rarely, until `GIVE_UP_AFTER`."""


@dataclass(frozen=True)
class Queued:
    """One message: its id, the eval state it carries, when it was first sent and how many
    times it has been delivered (this delivery included)."""

    message_id: str
    state: State
    sent_at: datetime
    deliveries: int

    @property
    def agent(self) -> AgentRef:
        return parse_agent(self.state["agent"])

    @property
    def task_ids(self) -> list[str]:
        return list(self.state.get("task_ids") or [])

    @property
    def queued_at(self) -> datetime:
        """When its runs were first queued: the state's own time (a run put back on the queue
        keeps it), else the message's."""
        stamp = self.state.get("queued_at")
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else self.sent_at


def retry_delay(deliveries: int) -> timedelta:
    """How long a message waits before its next delivery, after `deliveries` so far."""
    doublings = min(max(0, deliveries - 1), 16)  # past 12 h long before 2**16
    return min(LAST_RETRY, FIRST_RETRY * (1 << doublings))


def judge_messages(ports: EvalPorts, messages: list[Queued],
                   time_left: Callable[[], timedelta]) -> dict[str, timedelta]:
    """Judge and record what `messages` carry; the ids of those to deliver again, with the
    wait before it. A round is started only while `time_left()` holds a judgement's time
    (`JUDGEMENT`); the messages of rounds not started go back at once."""
    now = ports.clock.now()
    again: dict[str, timedelta] = {}
    rounds: dict[AgentRef, list[Queued]] = {}
    for message in messages:
        if now - message.queued_at > GIVE_UP_AFTER:
            give_up(ports.store, message.agent, message.task_ids, now)
        else:
            rounds.setdefault(message.agent, []).append(message)
    for ref, queued in rounds.items():
        for part in _parts(queued):
            if time_left() < JUDGEMENT:
                again |= dict.fromkeys((m.message_id for m in part), timedelta(0))
                continue
            if not _judged(ports, ref, part):
                again |= {m.message_id: retry_delay(m.deliveries) for m in part}
    return again


def _parts(messages: list[Queued]) -> list[list[Queued]]:
    """An agent's messages in rounds of at most `RUNS_AT_ONCE` runs (a message is not split)."""
    parts: list[list[Queued]] = []
    runs = 0
    for message in messages:
        if parts and runs + len(message.task_ids) <= RUNS_AT_ONCE:
            parts[-1].append(message)
            runs += len(message.task_ids)
        else:
            parts.append([message])
            runs = len(message.task_ids)
    return parts


def _judged(ports: EvalPorts, ref: AgentRef, part: list[Queued]) -> bool:
    """One round: the runs of `part` judged and recorded together; False if any is left for
    later (the judge could not be reached for it)."""
    task_ids = list(dict.fromkeys(t for m in part for t in m.task_ids))
    private = {m.state.get("private") for m in part}
    state = eval_start(ref.path, task_ids,
                       private=private.pop() if len(private) == 1 else None,
                       queued_at=iso(min(m.queued_at for m in part)))
    try:
        final = run_eval(ports, state)
    except LLMUnavailable as exc:
        logger.warning("judge unavailable; the runs wait on the queue",
                       extra={"agent": ref.path, "runs": len(task_ids), "error": str(exc)})
        return False
    if left_for_later(final):
        return False
    for message in part:  # each pending mark names its own runs: cleared one by one
        if message.state.get("marked"):
            ports.store.evals.record_evals(ref, {}, queued=message.task_ids)
    return True


def give_up(store: WithEvals, ref: AgentRef, task_ids: list[str], now: datetime) -> set[str]:
    """Record unscored (`GAVE_UP`) the runs of `task_ids` still without a result; the ones
    recorded."""
    gave_up = EvalResult(status="unscored", judge="sweep", at=iso(now), reason=GAVE_UP)
    return store.evals.record_evals(ref, dict.fromkeys(task_ids, gave_up), queued=task_ids)


def queued(message_id: str, body: str, sent_at: datetime, deliveries: int) -> Queued:
    """A message as the queue delivers it; ValueError if its body is no eval state."""
    state: Any = json.loads(body)
    if not isinstance(state, dict) or not isinstance(state.get("task_ids"), list):
        raise ValueError("not an eval state")
    parse_agent(state.get("agent"))
    return Queued(message_id, state, sent_at, deliveries)
