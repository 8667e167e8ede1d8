"""The Workflows port (`base.py`): `local.py` in process, `stepfunctions.py` on AWS."""

from .base import (
    NoWorkflows,
    State,
    Workflows,
    parse_agent,
)

__all__ = ["State", "Workflows", "parse_agent", "NoWorkflows"]
