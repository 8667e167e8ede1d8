"""The Store port: everything Bench keeps (`base.py`), with two adapters, `sqlite/` and `dynamodb/`."""

from .base import (
    SETTABLE,
    Store,
    decode_cursor,
    encode_cursor,
)

__all__ = ["Store", "SETTABLE", "encode_cursor", "decode_cursor"]
