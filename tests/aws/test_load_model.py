"""The load model (`tests/perf/load_model.py`): its arithmetic on a known case, and, measured
on moto at a small scale, that the units it tallies per key add up to what the meter counts
and that the hot agent's load comes out spread over its partitions, none over a limit."""

from __future__ import annotations

import pytest
from bench_core.store.dynamodb.codec.keys import PARTITIONS

from tests.perf.dynamodb_cost import Tally
from tests.perf.load_model import (
    RCU_LIMIT,
    TX_HOT,
    WCU_LIMIT,
    Hot,
    KeyLoad,
    Mix,
    Operation,
    measure,
    report,
    scenario,
)

AGENT = ("P", "table", "AGENT#{owner}#{agent}")
PARTITION = ("P", "table", "PART#{owner}#{agent}#{n}")
OWNER = ("P", "gsi1", "OWNER#{owner}")
SHARD = ("P", "table", "EVALQ#3")
META = ("I", "AGENT#{owner}#{agent}", "META")
TASK = ("I", "AGENT#{owner}#{agent}", "TASK#{run}")

# Everyone sends only full SDK batches: the hot agent 40 a second, the 999 others one each.
ONLY_BATCHES = Mix(hot_events_per_s=2000, events_per_s=2000 + 999 * 50, agents=1000,
                   owners=10, hot_owner_agents=200, sdk_share=1.0, run_share=0.0,
                   otlp_share=0.0, watched=0.0)


def known_ops() -> dict[str, Operation]:
    """Two batches measured: per batch 30 WRU and 5 RRU on the agent's partition, 2 WRU on its
    owner's index partition, 1 on a queue shard, a 4-WRU transaction on META, and ten new tasks
    of 2 WRU each in a transaction."""
    return {"sdk batch": Operation("sdk batch", count=2, by_agent=[{
        AGENT: KeyLoad(Tally(wru=60, rru=10), 2), OWNER: KeyLoad(Tally(wru=4), 2),
        SHARD: KeyLoad(Tally(wru=2), 2), META: KeyLoad(Tally(wru=8, transactions=2), 2),
        TASK: KeyLoad(Tally(wru=40, transactions=20), 20)}])}


def by_key(hots: list[Hot]) -> dict[tuple[tuple[str, ...], str], Hot]:
    return {(h.key, h.whose): h for h in hots}


def test_the_model_scales_each_key_by_whose_it_is() -> None:
    hots = by_key(scenario(known_ops(), ONLY_BATCHES, everyone=True))
    agent = hots[(AGENT, "hot agent")]
    assert (agent.wcu, agent.rcu, agent.over) == (30 * 40, 5 * 40, ["WCU"])
    assert hots[(AGENT, "another agent")].wcu == 30
    assert hots[(OWNER, "hot agent's owner")].wcu == pytest.approx(2 * 40 + 199 * 2)
    assert hots[(OWNER, "another owner")].wcu == pytest.approx(2 * 89)  # 800 agents / 9 owners
    shard = hots[(SHARD, "deployment")]
    assert shard.wcu == pytest.approx(40 + 999) and shard.over == ["WCU"]
    meta = hots[(META, "hot agent")]
    assert (meta.wcu, meta.tx, meta.over) == (4 * 40, 40, ["TX"]) and TX_HOT < 40
    task = hots[(TASK, "hot agent")]  # a new item takes its units once, however busy its agent
    assert (task.wcu, task.tx, task.over) == (2, 1, [])

    alone = by_key(scenario(known_ops(), ONLY_BATCHES, everyone=False))
    assert alone[(SHARD, "hot agent")].wcu == 40 and not alone[(SHARD, "hot agent")].over
    assert alone[(OWNER, "hot agent")].wcu == 80


def test_the_mix_states_its_requests() -> None:
    assert ONLY_BATCHES.requests_per_s() == pytest.approx(40 + 999)
    mix = Mix()
    other = mix.other_events_per_s
    assert other == pytest.approx(18_000 / 999)
    assert mix.requests_per_s() == pytest.approx(
        40 + 999 * (other * 0.7 / 50 + other * 0.15 / 5 + other * 0.15 / 20))


@pytest.mark.slow
def test_measured_units_add_up_and_land_on_the_hot_agents_keys() -> None:
    ops = measure(agents=1, reps=1)
    assert set(ops) == {"sdk batch", "run request", "otlp export", "eval", "live push",
                        "cluster", "sweep"}
    for op in ops.values():  # every unit the meter counted lands on exactly one partition key
        wru, rru = op.units()
        assert (wru * op.count, rru * op.count) == pytest.approx(
            (op.metered.wru, op.metered.rru)), op.name
    assert ops["sdk batch"].units()[0] > 0 and ops["eval"].units()[0] > 0
    lines: list[str] = []
    flagged = report(ops, Mix(), show=lines.append)
    assert any("Busiest partition keys, the deployment" in line for line in lines)
    assert all(h.wcu > WCU_LIMIT or h.rcu > RCU_LIMIT or h.tx > TX_HOT for h in flagged)
    hot = by_key(scenario(ops, Mix(), everyone=False))
    batches = Mix().hot_rates()["sdk batch"]
    # the batch's tasks and pages land on the agent's partitions, a share on each
    spread = hot[(PARTITION, "hot agent")]
    assert spread.wcu * PARTITIONS >= ops["sdk batch"].units()[0] * batches / 2
    assert not spread.over and not hot[(AGENT, "hot agent")].over
    assert not [h for h in scenario(ops, Mix(), everyone=True) if h.whose == "hot agent" and h.over]
