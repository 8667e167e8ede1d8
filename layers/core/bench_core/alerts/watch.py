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
from ..domain.timeseries import HOUR, period_of
from ..log import logger
from ..ports.workflows import State
from ..settings import Settings
from .delivery import deliver, longest_s, webhook_secret
from .monitor import Change, MonitorConcerns, look

ACTIVE_WITHIN = timedelta(hours=2)
"""An agent is looked at by the hourly round when its last event is this recent: two hours,
so the runs of an hour that was under way at one round (after its look) are seen by the next."""
ACTIVE_PAGE = 100
"""The agents the hourly round reads at once: it reads the next page only once it has looked
at these, so a round cut short by its time budget has read no more than it looked at."""
AHEAD = timedelta(hours=1)
"""The hour after this one is read too: a run stamped by a clock a little ahead of ours."""
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


def watch_active(ports: AlertPorts, *, page: int = ACTIVE_PAGE,
                 sleep: Callable[[float], None] = time.sleep,
                 time_left: Callable[[], timedelta] | None = None) -> list[AgentRef]:
    """The hourly round's looks: every agent with anything counted in the hours since
    `ACTIVE_WITHIN` ago (`TimeSeriesStore.active_agents`, `page` at a time), listed or not, so
    an agent whose runs the judge never takes (its budget or sampling skips them all) is
    watched too; one with nothing counted lately has nothing new to look at. An agent already
    looked at this hour is not looked at again (`look`). With `time_left`, a look starts only
    while a look and its deliveries fit (`WATCH_MARGIN` and `delivery.longest_s`): an alert is
    kept before it is told, so a look cut short would never tell it; the agents left are
    looked at after their evals or by the next round. The agents asked to look at."""
    now = ports.clock.now()
    first, last = (period_of(iso(t), HOUR) for t in (now - ACTIVE_WITHIN, now + AHEAD))
    needs = WATCH_MARGIN + timedelta(seconds=longest_s(ports.settings.reuse))
    looked: list[AgentRef] = []
    after: AgentRef | None = None
    while True:
        try:
            agents = ports.store.timeseries.active_agents(first, last, after=after, limit=page)
        except Exception:
            logger.exception("could not list the agents to watch; the next round tries again")
            return looked
        for ref in agents:
            if time_left is not None and time_left() <= needs:
                return looked
            watch_agent(ports, ref, sleep=sleep)
            looked.append(ref)
        if len(agents) < page:
            return looked
        after = agents[-1]


LOOKS_BUDGET = timedelta(seconds=240)
"""What the hourly looks may take on AWS: ClusterFunction's 300 s, less a minute's margin."""


def hourly_looks(ports: AlertPorts, state: State) -> State:
    """The hourly state machine's step on AWS (`statemachines/cluster.asl.json`
    `WatchActiveAgents`, run by the cluster function): `watch_active` within `LOOKS_BUDGET`,
    and how many agents it asked to look at. Run twice in an hour (a retry, a second start),
    it changes nothing: each agent's look of the hour is taken once (`monitor.look`)."""
    until = time.monotonic() + LOOKS_BUDGET.total_seconds()
    looked = watch_active(ports, time_left=lambda: timedelta(seconds=until - time.monotonic()))
    return {**state, "watched": len(looked)}
