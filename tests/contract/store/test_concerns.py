"""The Store port is one small protocol per concern, a `Store` one object per concern, and each
concern has its contract suite here (`test_<concern>*.py`): every adapter implements each
protocol's methods as declared, in a class of its own in its file of that concern's name, and
every method is exercised by its concern's suite."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import get_type_hints

import bench_core.ports.store as port
import bench_core.store as adapters
import pytest
from bench_core.clock import Clock

CONCERNS: dict[str, type] = {
    "ingest": port.IngestStore, "agents": port.AgentStore, "accounts": port.AccountStore,
    "evals": port.EvalStore, "leaderboard": port.LeaderboardStore, "reuse": port.ReuseStore,
    "benchmarks": port.BenchmarkStore, "retention": port.RetentionStore, "runs": port.RunStore,
    "feedback": port.FeedbackStore, "alerts": port.AlertStore,
    "timeseries": port.TimeSeriesStore, "clusters": port.ClusterStore,
}
"""Each concern's name (the `Store`'s attribute, its file in `store/sqlite/`, `store/dynamodb/`,
`store/memory/` and here) and protocol."""

SUITES = Path(__file__).parent
ADAPTERS = Path(adapters.__file__).parent


def methods(protocol: type) -> list[str]:
    return [name for name, value in vars(protocol).items()
            if callable(value) and not name.startswith("_")]


def shape(signature: inspect.Signature) -> list[tuple[str, object, object]]:
    """What a caller relies on: the names, kinds and defaults of the parameters."""
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()
            if p.name != "self"]


def test_the_store_is_exactly_its_concerns() -> None:
    assert get_type_hints(port.Store) == {**CONCERNS, "clock": Clock}, \
        "a new concern protocol needs its name here"
    assert methods(port.Store) == ["close"]
    names = [name for protocol in CONCERNS.values() for name in methods(protocol)]
    assert len(names) == len(set(names)), "a method belongs to one concern"


@pytest.mark.parametrize("concern", list(CONCERNS))
def test_every_adapter_implements_the_concern_as_declared(store: port.Store, concern: str) -> None:
    implementation = getattr(store, concern)
    kind = type(implementation)
    assert kind.__module__.rpartition(".")[2] == concern, f"{kind.__name__} lives in {kind.__module__}"
    others = {type(getattr(store, other)) for other in CONCERNS if other != concern}
    assert kind not in others, f"{kind.__name__} is more than one concern"
    for name in methods(CONCERNS[concern]):
        declared = inspect.signature(getattr(CONCERNS[concern], name))
        implemented = getattr(implementation, name, None)
        assert callable(implemented), f"{kind.__name__} has no {name}"
        assert shape(inspect.signature(implemented)) == shape(declared), name
        assert implemented.__module__.rpartition(".")[2] == concern, (
            f"{kind.__name__}.{name} lives in {implemented.__module__}")


def test_every_adapter_holds_one_file_per_concern_and_their_shared_helpers() -> None:
    helpers = {"sqlite": {"connection", "events", "derived_events", "packing", "repack",
                          "run_list", "versions", "run_text", "sessions", "task_times",
                          "slim_events", "task_row", "task_ids"},
               "dynamodb": {"client", "codec", "table", "wire", "migration", "layout", "rehome",
                            "content", "packs"},
               "memory": {"state"}}
    for adapter, shared in helpers.items():
        modules = ({p.stem for p in (ADAPTERS / adapter).glob("*.py")} - {"__init__", "store"}
                   | {p.parent.name for p in (ADAPTERS / adapter).glob("*/__init__.py")})
        assert modules - shared == set(CONCERNS), adapter


@pytest.mark.parametrize("concern", list(CONCERNS))
def test_every_method_is_exercised_by_its_concerns_suite(concern: str) -> None:
    suites = sorted(SUITES.glob(f"test_{concern}*.py"))
    assert suites, f"no contract suite for {concern}"
    text = "".join(path.read_text() for path in suites)
    untested = [name for name in methods(CONCERNS[concern]) if not re.search(rf"\.{name}\(", text)]
    assert untested == []
