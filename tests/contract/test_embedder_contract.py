"""The Embedder port: TF-IDF and Bedrock (Titan V2 on a Stubber answering with a bag-of-words
stand-in for its vectors) pass one suite: a row per text in order, each of unit length (or zero
for a text with nothing in it), similar failures closer than different ones, and degenerate
input handled without errors."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
from bench_core.embed.tfidf import TfidfEmbedder
from bench_core.ports.embed import Embedder

from tests.contract.model_doubles import titan_embedder, unit_or_zero_rows

FAILURES = [
    "TimeoutError: request to search API timed out after 30s",
    "TimeoutError: request to fetch API timed out after 30s",
    "HTTP 429 Too Many Requests: rate limit exceeded",
    "HTTP 429 Too Many Requests: rate limit exceeded for model",
]

Embed = Callable[[list[str]], np.ndarray]


@pytest.fixture(params=["tfidf", "bedrock"])
def embedder(request: pytest.FixtureRequest) -> Iterator[tuple[Embedder, Embed]]:
    """The adapter, and how to embed with it (Titan's stand-in is told the texts first)."""
    if request.param == "tfidf":
        tfidf = TfidfEmbedder()
        yield tfidf, tfidf.embed
        return
    with titan_embedder() as titan:
        def embed(texts: list[str]) -> np.ndarray:
            titan.expect(texts)
            return titan.embedder.embed(texts)

        yield titan.embedder, embed


def test_rows_are_unit_length_and_similar_texts_are_closer(embedder: tuple[Embedder, Embed]) -> None:
    _, embed = embedder
    vectors = embed(FAILURES)
    assert vectors.shape[0] == 4
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > similarity[0, 2]
    assert similarity[2, 3] > similarity[1, 3]


def test_degenerate_inputs_give_one_row_per_text(embedder: tuple[Embedder, Embed]) -> None:
    _, embed = embedder
    assert embed([]).shape[0] == 0
    assert embed(["only one failure"]).shape[0] == 1
    blank = embed(["", "  ", "!!"])
    assert blank.shape[0] == 3 and not np.isnan(blank).any() and unit_or_zero_rows(blank)


def test_the_label_says_which_embedder_made_the_vectors(embedder: tuple[Embedder, Embed]) -> None:
    adapter, _ = embedder
    assert adapter.label in ("tfidf", "bedrock:amazon.titan-embed-text-v2:0")
