"""The Embedder port (`base.py`): `tfidf.py` offline, `bedrock.py` on AWS."""

from .base import (
    Embedder,
)

__all__ = ["Embedder"]
