"""The LiveFeed port (`base.py`): `local.py` in one process, `apigw.py` over API Gateway WebSockets."""

from .base import (
    LiveFeed,
)

__all__ = ["LiveFeed"]
