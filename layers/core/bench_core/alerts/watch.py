"""One look at an agent's monitors and the news delivered: what the runners call (the local
worker after an agent's evals, the eval function on AWS after each agent's round, and the
hourly round over the agents active lately, `watch_active`). Never raises: an alert that
cannot be raised or told is logged, and the next look tries again (a resolution or an opening
is kept in the store before it is told)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Protocol

from ..accounts.secrets import Secrets
from ..clock import Clock
from ..domain.models import AgentRef, iso
from ..log import logger
from ..ports.services import WithLeaderboard
from ..ports.workflows import State
from ..settings import Settings
from .delivery import deliver, longest_s, webhook_secret
from .monitor import Change, MonitorConcerns, look

ACTIVE_WITHIN = timedelta(hours=2)
"""An agent is looked at by the hourly round when its last event is this recent: two hours,
so the runs of an hour that was under way at one round (after its look) are seen by the next."""
ACTIVE_LIMIT = 200
"""The most agents the hourly round reads (the leaderboard's, by runs)."""
WATCH_MARGIN = timedelta(seconds=10)
"""Kept for a look at an agent's monitors (its reads and writes) besides its webhooks' longest
delivery (`delivery.longest_s`), by a caller with a deadline."""


class AlertPorts(Protocol):
    """What a look needs: the store, the settings (the outbound client's, the public URL, the
    signing key's source) and the clock."""

    @property
    def store(self) -> MonitorConcerns: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def clock(self) -> Clock: ...


def watch_agent(ports: AlertPorts, ref: AgentRef, *,
                sleep: Callable[[float], None] = time.sleep) -> list[Change]:
    """Look at the agent's monitors (once an hour: `monitor.look`) and tell its owner's webhook
    and Slack of each alert that opened or resolved; the changes."""
    try:
        changes = look(ports.store, ref, iso(ports.clock.now()))
        if not changes:
            return changes
        settings = ports.store.alerts.alert_settings(ref)
        if settings.webhook_url or settings.slack_webhook_url:
            secret = webhook_secret(Secrets(ports.settings).session_key(), ref)
            deliver(ports.store, ref, changes, settings=settings,
                    outbound_settings=ports.settings.reuse, secret=secret,
                    base_url=(ports.settings.public_url or "").rstrip("/"), clock=ports.clock,
                    sleep=sleep)
        return changes
    except Exception:  # a monitor never takes down the work it follows
        logger.exception("the regression monitors failed", extra={"agent": ref.path})
        return []


class ActivePorts(AlertPorts, Protocol):
    """A look's ports, with the leaderboard to find the agents active lately."""

    @property
    def store(self) -> ActiveConcerns: ...


class ActiveConcerns(MonitorConcerns, WithLeaderboard, Protocol):
    """The monitors' concerns and the leaderboard."""


def watch_active(ports: ActivePorts, *, limit: int = ACTIVE_LIMIT,
                 sleep: Callable[[float], None] = time.sleep,
                 time_left: Callable[[], timedelta] | None = None) -> list[AgentRef]:
    """The hourly round's looks: so an agent whose runs the judge never takes (its budget
    skips them all) is watched too, each agent with an event in the last `ACTIVE_WITHIN` among
    the `limit` with the most runs on the leaderboard (one index read; listed agents only,
    which is where no cheaper listing exists on DynamoDB: a private agent is looked at after
    its evals). An agent already looked at this hour is not looked at again (`look`). With
    `time_left`, a look starts only while a look and its deliveries fit (`WATCH_MARGIN` and
    `delivery.longest_s`): an alert is kept before it is told, so a look cut short would
    never tell it; the agents left are looked at after their evals or by the next round. The
    agents asked to look at."""
    since = iso(ports.clock.now() - ACTIVE_WITHIN)
    needs = WATCH_MARGIN + timedelta(seconds=longest_s(ports.settings.reuse))
    try:
        agents = ports.store.leaderboard.leaderboard("runs", limit=limit)
    except Exception:
        logger.exception("could not list the agents to watch; the next round tries again")
        return []
    looked = []
    for ref in [a.ref for a in agents if (a.stats.last_event_at or "") >= since]:
        if time_left is not None and time_left() <= needs:
            break
        watch_agent(ports, ref, sleep=sleep)
        looked.append(ref)
    return looked


LOOKS_BUDGET = timedelta(seconds=240)
"""What the hourly looks may take on AWS: ClusterFunction's 300 s, less a minute's margin."""


def hourly_looks(ports: ActivePorts, state: State) -> State:
    """The hourly state machine's step on AWS (`statemachines/cluster.asl.json`
    `WatchActiveAgents`, run by the cluster function): `watch_active` within `LOOKS_BUDGET`,
    and how many agents it asked to look at. Run twice in an hour (a retry, a second start),
    it changes nothing: each agent's look of the hour is taken once (`monitor.look`)."""
    until = time.monotonic() + LOOKS_BUDGET.total_seconds()
    looked = watch_active(ports, time_left=lambda: timedelta(seconds=until - time.monotonic()))
    return {**state, "watched": len(looked)}
