"""TF-IDF + truncated SVD (latent semantic analysis): the offline embedder.

Word and word-pair TF-IDF finds the shared vocabulary of similar errors ("timed out", "429");
SVD folds it into a few dense dimensions where k-means works well and fast. Words seen in a
single text (request ids, timestamps) are dropped once there is enough text to afford it.
"""

from __future__ import annotations

import numpy as np
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.preprocessing import normalize


class TfidfEmbedder:
    label = "tfidf"

    def __init__(self, dimensions: int = 64, max_features: int = 20_000) -> None:
        self.dimensions = dimensions
        self.max_features = max_features

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        vectorizer = TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2), dtype=np.float32,
                                     min_df=2 if len(texts) >= 20 else 1,
                                     max_features=self.max_features)
        try:
            matrix = vectorizer.fit_transform(texts)
        except ValueError:  # no word in any text: nothing tells them apart
            return np.zeros((len(texts), 1), dtype=np.float32)
        components = min(self.dimensions, matrix.shape[1] - 1, len(texts) - 1)
        if components < 2:
            rows: np.ndarray = normalize(matrix.toarray())
            return rows
        dense = TruncatedSVD(components, random_state=0).fit_transform(matrix)
        reduced: np.ndarray = normalize(dense).astype(np.float32)
        return reduced
