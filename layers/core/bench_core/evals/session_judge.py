"""The session judge: a conversation that has ended, judged whole -- did the user's goal get met
across its turns -- beside the scores of its runs.

A session has ended when no run of it ended for `JudgeSettings.session_idle_minutes`. Once an
hour (the local runner's round, `runtime/jobs.py`; on AWS the cluster state machine's
`JudgeSessions` state, ClusterFunction) `judge_sessions` asks the store for at most
`IDLE_SESSIONS` of them that no verdict covers (`EvalStore.idle_sessions`, oldest first; the
next round goes on), and gives each one verdict (`EvalStore.record_session_eval`),
`SESSIONS_AT_ONCE` side by side, covering its runs up to the last one's end: a run ending
later makes the session due again.

What the judge reads is one task standing in for the conversation: its turns in order (each
run's input and output, or its model calls' conversation where its root recorded none,
`conversation.py`), the newest that fit in `CONVERSATION_CHARS`, as the input, and the last
turn's answer as the output, with the last turn's status. A session none of whose turns
recorded content is unscored for it (`NO_CONTENT_SESSION`), without asking. The judge budget
counts it as it counts a run (sampled by the session, and its cost added to the day's spend;
the sessions judged side by side may overshoot the day's budget by a round's, as a batch's
runs may). A verdict written while the agent hides inputs or outputs is stored as private, so
its reasoning shows as content does (`privacy.Sight.eval`). A session the judge cannot be reached
for is left for the next round.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Protocol

from ..domain.judge_budget import skipped
from ..domain.models import AgentRef, EvalResult, TaskState, iso
from ..domain.sessions import IDLE_SESSIONS, SESSION_RUNS, IdleSession
from ..domain.task_text import as_text, is_empty
from ..ports.llm import LLMUnavailable
from ..ports.services import (
    WithAgents,
    WithClock,
    WithEvals,
    WithIngest,
    WithJudge,
    WithRuns,
    WithSettings,
)
from ..ports.workflows import State
from .conversation import run_conversation
from .workflow import LEFT_FOR_LATER

CONVERSATION_CHARS = 5500
"""The turns the judge reads, newest first, within the judge's own cut of its input."""
TURN_CHARS = 1500
"""Each side of a turn is cut to this many characters."""
NO_CONTENT_SESSION = "No turn of the session recorded an input or output to judge."
SESSIONS_AT_ONCE = 8
"""Sessions judged side by side: a round of `IDLE_SESSIONS` lasts a few judgements, well
within ClusterFunction's timeout."""


class SessionJudgeConcerns(WithAgents, WithIngest, WithRuns, WithEvals, Protocol):
    """The agent (its budget and privacy), the session's runs and their content, and where
    the verdict and the day's spend go."""


class SessionJudgePorts(WithJudge, WithSettings, WithClock, Protocol):
    @property
    def store(self) -> SessionJudgeConcerns: ...


def judge_sessions(ports: SessionJudgePorts, state: State) -> State:
    """Judge the sessions idle since before now minus the idle time; the counts in the state."""
    now = ports.clock.now()
    idle = timedelta(minutes=ports.settings.judge.session_idle_minutes)

    def one(session: IdleSession) -> str:
        try:
            return judge_session(ports, session)
        except LLMUnavailable:
            return LEFT_FOR_LATER

    sessions = ports.store.evals.idle_sessions(iso(now - idle), IDLE_SESSIONS)
    if not sessions:
        return {**state, "sessions_judged": {}}
    with ThreadPoolExecutor(max_workers=min(SESSIONS_AT_ONCE, len(sessions))) as pool:
        outcomes = Counter(pool.map(one, sessions))
    return {**state, "sessions_judged": dict(sorted(outcomes.items()))}


def judge_session(ports: SessionJudgePorts, session: IdleSession) -> str:
    """One session's verdict, recorded; its status (or why there is none)."""
    store, ref = ports.store, session.ref
    agent = store.agents.get_agent(ref)
    if agent is None:
        return "no agent"
    now = iso(ports.clock.now())
    _, runs = store.runs.session_runs(ref, session.session_id, limit=SESSION_RUNS)
    turns = [t for t in (_turn(store, ref, run.run_id) for run in runs) if t is not None]
    judging = ports.settings.judge
    result: EvalResult | None
    if not any(_has_content(t) for t in turns):
        result = EvalResult(status="unscored", judge=ports.judge.label, at=now,
                            reason=NO_CONTENT_SESSION)
    else:
        result = skipped(agent, f"session:{session.session_id}",
                         store.evals.judge_spend(ref, now[:10]), now,
                         daily_budget_usd=judging.daily_budget_usd,
                         sample_rate=judging.sample_rate)
        if result is None:
            result = ports.judge.judge(conversation_task(session.session_id, turns))
    result.private = agent.hide_inputs or agent.hide_outputs
    store.evals.record_session_eval(ref, session.session_id, result, session.last_at)
    return result.status


def _turn(store: SessionJudgeConcerns, ref: AgentRef, run_id: str) -> TaskState | None:
    """A run as a turn: its root, or its model calls' conversation where the root holds none."""
    root = store.ingest.get_task(ref, run_id)
    if root is None or _has_content(root):
        return root
    return run_conversation(store, ref, root) or root


def _has_content(task: TaskState) -> bool:
    return not (is_empty(task.input) and is_empty(task.output))


def conversation_task(session_id: str, turns: list[TaskState]) -> TaskState:
    """The task the judge reads for the conversation (see the module)."""
    last = turns[-1]
    blocks: list[str] = []
    used = 0
    for number, turn in reversed(list(enumerate(turns, 1))):
        asked = as_text(turn.input, TURN_CHARS) or "(nothing recorded)"
        answered = ("(this is the answer judged, below)" if turn is last
                    else as_text(turn.output, TURN_CHARS) or "(nothing recorded)")
        block = f"Turn {number} ({turn.status}). The user asked:\n{asked}\nThe agent answered:\n" \
            f"{answered}"
        if blocks and used + len(block) > CONVERSATION_CHARS:
            blocks.append(f"(turns 1 to {number} left out)")
            break
        blocks.append(block)
        used += len(block)
    heading = (f"A conversation of {len(turns)} turns. Judge whether the user's goal, across "
               "the turns, was met by the end.")
    return TaskState(task_id=f"session:{session_id}", name=f"session {session_id}",
                     status=last.status, input="\n\n".join([heading, *reversed(blocks)]),
                     output=last.output)
