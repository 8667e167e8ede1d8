"""Failure clusters over time: ids that last across recomputations, and each cluster's
failures per hour and per day, counted as clustering assigns runs.

Clusters are found afresh every hour (`clustering/workflow.py`), so a cluster has no identity
of its own; one is given here. **Why by membership, not by centroid**: the offline embedder
fits its vocabulary to each recomputation's texts (`embed/tfidf.py`), so two recomputations'
vectors live in different spaces and their centroids cannot be compared; the runs themselves
can. Each recomputation keeps its clusters' members (`ClusterState`, digests of their run ids,
a few bytes each), and a new cluster takes the id of the previous cluster it shares the most
members with (`carry_ids`), if they share enough of what both could have held (`MIN_OVERLAP`
of the members seen by both recomputations); else it gets a new id. Greedy, biggest overlap
first, one new cluster per old id: a cluster that splits keeps its id in its larger part, and
two that merge keep the id of the one that gave the most.

**Counted once, where the run ended.** A run is counted in its cluster's hour and day the
first time a recomputation holds it (it was not among the previous recomputation's members),
at the run's own end (`ClusterKey`), so a chart of error rate by cluster divides these by the
runs counted in the same hours (`domain.timeseries`). Recomputations look at an agent's newest
failures (`clustering.workflow.MAX_TASKS`): a run that has left them never comes back, so the
previous members are all that must be remembered. A run keeps the cluster it was first counted
in, even if a later recomputation moves it (the past is not rewritten). Reads never scan runs:
a chart reads one record per period (`ports.store.ClusterStore`).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .timeseries import DAY, HOUR, period_of

MAX_CLUSTERS = 8
"""The most clusters one recomputation finds (`clustering.kmeans.MAX_K`): what the monitor of
failure clusters spreads its false-alarm budget over (`domain.monitors`)."""
MIN_OVERLAP = 0.3
"""The share of the members both recomputations could hold that two clusters must share to be
one: a third, so a cluster keeps its id as its newest failures replace its oldest."""
ID_PREFIX = "c"


def member_digest(task_id: str) -> str:
    """A run id as a cluster keeps it: 8 bytes of its SHA-256, base32 (13 characters), so a
    thousand members take a few KB whatever the ids' length."""
    digest = hashlib.sha256(task_id.encode()).digest()[:8]
    return base64.b32encode(digest).decode().rstrip("=").lower()


@dataclass(frozen=True)
class ClusterState:
    """One recomputation's clusters as later ones match against: each id's members (digests),
    the next id's number, and the generation (how many recomputations were kept: a store
    keeps a state only over the one before it, so a recomputation run twice counts once)."""

    members: Mapping[str, Sequence[str]] = field(default_factory=dict)
    next_id: int = 1
    generation: int = 0

    def seen(self) -> set[str]:
        return {m for ms in self.members.values() for m in ms}


@dataclass(frozen=True, order=True)
class ClusterKey:
    """A cluster's count in one period: `period` as `timeseries.period_of` names it."""

    cluster: str
    grain: str
    period: str


def carry_ids(previous: ClusterState | None, groups: Sequence[Sequence[str]]) -> ClusterState:
    """The state after a recomputation that found `groups` (each a cluster's members'
    digests, in the order the insights list them): each group's id carried from `previous`
    where it overlaps enough, else new; its `members` keyed in the groups' order."""
    before = previous or ClusterState()
    now_held = {m for g in groups for m in g}
    then_held = before.seen()
    pairs = []
    for i, group in enumerate(groups):
        mine = set(group)
        for old, members in before.members.items():
            shared = len(mine.intersection(members))
            if not shared:
                continue
            could = len((mine & then_held) | (set(members) & now_held))
            if shared >= MIN_OVERLAP * could:
                pairs.append((-shared, i, old))
    ids: dict[int, str] = {}
    taken: set[str] = set()
    for _, i, old in sorted(pairs):
        if i not in ids and old not in taken:
            ids[i], taken = old, taken | {old}
    next_id = before.next_id
    for i in range(len(groups)):
        if i not in ids:
            ids[i], next_id = f"{ID_PREFIX}{next_id}", next_id + 1
    return ClusterState({ids[i]: list(g) for i, g in enumerate(groups)}, next_id,
                        before.generation + 1)


def new_counts(previous: ClusterState | None, state: ClusterState,
               ended: Mapping[str, str]) -> dict[ClusterKey, int]:
    """What a recomputation adds: each member of `state` that `previous` did not hold, in its
    cluster's hour and day where its run ended (`ended`: digest to ISO time; a member with no
    end is not counted)."""
    known = previous.seen() if previous else set()
    out: dict[ClusterKey, int] = {}
    for cluster, members in state.members.items():
        for member in members:
            ts = ended.get(member)
            if member in known or not ts:
                continue
            for grain in (HOUR, DAY):
                key = ClusterKey(cluster, grain, period_of(ts, grain))
                out[key] = out.get(key, 0) + 1
    return out
