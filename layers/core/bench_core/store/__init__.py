"""The Store port: everything Bench keeps (`base.py`), with two adapters, `sqlite/` and `dynamodb/`."""

from .base import (
    SETTABLE,
    AccountStore,
    AgentStore,
    BenchmarkStore,
    EvalStore,
    IngestStore,
    LeaderboardStore,
    RetentionStore,
    ReuseStore,
    RunCounts,
    RunHead,
    RunStore,
    Store,
    decode_cursor,
    encode_cursor,
)

__all__ = ["Store", "IngestStore", "AgentStore", "AccountStore", "EvalStore", "LeaderboardStore",
           "ReuseStore", "BenchmarkStore", "RetentionStore", "RunStore", "RunHead", "RunCounts",
           "SETTABLE", "encode_cursor",
           "decode_cursor"]
