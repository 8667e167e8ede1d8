"""The Embedder port: texts → L2-normalised vectors, for clustering failures (adapters in `embed/`).

- `embed/tfidf.py` `TfidfEmbedder`: scikit-learn TF-IDF + truncated SVD, fitted on the texts it is given
  (vectors compare within one call, which is how clustering uses them); no network.
- `embed/bedrock.py` `BedrockEmbedder`: Titan Text Embeddings V2 (512 dimensions by default).

numpy and scikit-learn are imported only inside these adapters: nothing an HTTP function or the
eval workflow imports may pull them in (cold starts, and only the cluster function ships them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np


class Embedder(Protocol):
    label: str

    def embed(self, texts: list[str]) -> np.ndarray:
        """One row per text, each of unit length (or all zeros for a text with no content)."""
        ...
