"""Titan Text Embeddings V2 on Bedrock: one InvokeModel per text (the model takes one input),
a few in parallel; botocore's adaptive retry mode absorbs throttling."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

MAX_CHARS = 20_000
"""Titan V2 accepts up to 8,192 tokens (about 50,000 characters); failure text needs far less."""


def titan_client() -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client("bedrock-runtime", config=Config(
        read_timeout=30, connect_timeout=5, retries={"mode": "adaptive", "max_attempts": 8}))


class BedrockEmbedder:
    def __init__(self, model: str, *, dimensions: int = 512, client: Any = None,
                 workers: int = 8) -> None:
        self.model = model
        self.label = f"bedrock:{model}"
        self.dimensions = dimensions
        self.workers = workers
        self._client = client if client is not None else titan_client()

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        with ThreadPoolExecutor(max_workers=min(self.workers, len(texts))) as pool:
            rows = list(pool.map(self._embed_one, texts))
        matrix = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1, norms)

    def _embed_one(self, text: str) -> list[float]:
        body = {"inputText": text[:MAX_CHARS] or "(empty)", "dimensions": self.dimensions,
                "normalize": True}
        response = self._client.invoke_model(modelId=self.model, body=json.dumps(body),
                                              contentType="application/json", accept="application/json")
        embedding: list[float] = json.loads(response["body"].read())["embedding"]
        return embedding
