"""k-means over failure embeddings, with k chosen from the data by silhouette.

Imported only inside the cluster workflow (numpy and scikit-learn are heavy; only the cluster
function ships them). With too little data, or no structure worth splitting (the best
silhouette below `MIN_SILHOUETTE`), everything is one cluster: fewer, honest groups beat
clusters of noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import silhouette_score

from ..domain.cluster_series import MAX_CLUSTERS

MIN_TO_SPLIT = 6
MAX_K = MAX_CLUSTERS
MIN_SILHOUETTE = 0.1
SILHOUETTE_SAMPLE = 2000
"""Silhouette is O(n²): a fixed random sample keeps choosing k linear in n."""


@dataclass(frozen=True)
class Grouping:
    labels: np.ndarray
    """Cluster index per row, clusters numbered by size, largest first."""
    silhouette: float | None
    nearest: list[list[int]]
    """Per cluster, its members' row indices, nearest to the centroid first."""

    @property
    def k(self) -> int:
        return len(self.nearest)


def group(vectors: np.ndarray, max_k: int = MAX_K) -> Grouping:
    n = len(vectors)
    labels, silhouette = np.zeros(n, dtype=int), None
    distinct = len(np.unique(vectors.round(5), axis=0)) if n else 0
    upper = min(max_k, n - 1, distinct)
    if n >= MIN_TO_SPLIT and upper >= 2:
        best: tuple[float, np.ndarray] | None = None
        for k in range(2, upper + 1):
            candidate = KMeans(n_clusters=k, n_init=3, random_state=0).fit_predict(vectors)
            score = float(silhouette_score(vectors, candidate, sample_size=min(n, SILHOUETTE_SAMPLE),
                                           random_state=0))
            if best is None or score > best[0]:
                best = (score, candidate)
        if best is not None and best[0] >= MIN_SILHOUETTE:
            silhouette, labels = best[0], best[1]
    if n == 0:
        return Grouping(labels, None, [])
    labels, nearest = _by_size(vectors, labels)
    return Grouping(labels, silhouette, nearest)


def _by_size(vectors: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, list[list[int]]]:
    """Relabel clusters largest first; order each one's members by distance to its centroid."""
    sizes = np.bincount(labels)
    order = np.argsort(-sizes, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    labels = rank[labels]
    nearest = []
    for cluster in range(len(order)):
        members = np.flatnonzero(labels == cluster)
        distance = np.linalg.norm(vectors[members] - vectors[members].mean(axis=0), axis=1)
        nearest.append(members[np.argsort(distance, kind="stable")].tolist())
    return labels, nearest
