"""Settings from the environment: the same names work in Lambda (the template sets them) and locally."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw not in (None, "") else default


@dataclass(frozen=True)
class Limits:
    """Ingest limits; generous for real agents, tight enough to keep one batch O(1) to process."""

    max_events_per_batch: int = 1000
    max_body_bytes: int = 5 * 1024 * 1024
    max_field_bytes: int = 32 * 1024
    recent_events: int = 1000


@dataclass(frozen=True)
class Settings:
    store: str = "sqlite"
    data_dir: Path = Path(".bench")
    table_name: str = "bench"
    public_url: str | None = None
    limits: Limits = field(default_factory=Limits)

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        values: dict[str, object] = {
            "store": os.environ.get("BENCH_STORE", "sqlite"),
            "data_dir": Path(os.environ.get("BENCH_DATA_DIR", ".bench")),
            "table_name": os.environ.get("BENCH_TABLE_NAME", "bench"),
            "public_url": (os.environ.get("BENCH_PUBLIC_URL") or None),
            "limits": Limits(
                max_events_per_batch=_int("BENCH_MAX_EVENTS_PER_BATCH", 1000),
                max_body_bytes=_int("BENCH_MAX_BODY_BYTES", 5 * 1024 * 1024),
                max_field_bytes=_int("BENCH_MAX_FIELD_BYTES", 32 * 1024),
            ),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "bench.db"
