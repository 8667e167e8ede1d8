"""The offline embedder: unit-length rows, similar failures closer than different ones, and
degenerate input (nothing, one text, no words) handled without errors."""

from __future__ import annotations

import numpy as np
from bench_core.embed.tfidf import TfidfEmbedder

FAILURES = [
    "TimeoutError: request to search API timed out after 30s",
    "TimeoutError: request to fetch API timed out after 30s",
    "HTTP 429 Too Many Requests: rate limit exceeded",
    "HTTP 429 Too Many Requests: rate limit exceeded for model",
]


def test_rows_are_unit_length_and_similar_texts_are_closer() -> None:
    vectors = TfidfEmbedder().embed(FAILURES)
    assert vectors.shape[0] == 4
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > similarity[0, 2]
    assert similarity[2, 3] > similarity[1, 3]


def test_degenerate_inputs_give_one_row_per_text() -> None:
    embedder = TfidfEmbedder()
    assert embedder.embed([]).shape[0] == 0
    assert embedder.embed(["only one failure"]).shape[0] == 1
    blank = embedder.embed(["", "  ", "!!"])
    assert blank.shape[0] == 3 and not np.isnan(blank).any()
