"""Failure clustering time and memory: 1k, 10k and 50k failed tasks through the offline path
(TF-IDF + SVD embeddings, k-means with k chosen by silhouette, term descriptions), each size in
a fresh process so that its peak memory is its own.

    python tests/perf/cluster.py [--sizes 1000 10000 50000] [--kinds 8]

Not a test: the numbers depend on the machine. Goal: 10k under 5 s, memory bounded (it grows
with the tasks clustered, never with the agent's history: the workflow reads at most
`bench_core.clustering.workflow.MAX_TASKS` of them).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SERVICES = ["search", "fetch", "weather", "geocode", "vector-db", "crm", "billing", "calendar"]
TEMPLATES = [
    "TimeoutError: request to the {svc} API timed out after {n}s (request id {rid})",
    "HTTP 429 Too Many Requests from {svc}: rate limit exceeded, retry after {n} seconds",
    "JSONDecodeError: Expecting value: line {n} column {m} (char {rid}) in the {svc} reply",
    "KeyError: 'results' missing from the {svc} response (status {n})",
    "ValidationError: 1 validation error for {svc}Request: field required ({rid})",
    "ConnectionResetError: [Errno 104] connection reset by peer while calling {svc}",
    "ContextLengthExceeded: prompt of {n}000 tokens exceeds the model's window ({svc})",
    "PermissionError: 403 Forbidden: the {svc} key lacks scope {rid}",
]


def failures(n: int, kinds: int, seed: int = 1) -> list[str]:
    r = random.Random(seed)
    return [TEMPLATES[i % kinds].format(svc=r.choice(SERVICES), n=r.randint(1, 99),
                                        m=r.randint(1, 99), rid=f"{r.getrandbits(40):x}")
            for i in range(n)]


def measure(n: int, kinds: int) -> dict[str, float | int]:
    """One size, in this process: the same code path as `cluster_agent`, without the store."""
    from bench_core.clustering.describe import describe, top_terms, words
    from bench_core.clustering.kmeans import group
    from bench_core.embed.tfidf import TfidfEmbedder

    texts = failures(n, kinds)
    start = time.perf_counter()
    vectors = TfidfEmbedder().embed(texts)
    embedded = time.perf_counter()
    grouping = group(vectors)
    grouped = time.perf_counter()
    vocab = [words(t) for t in texts]
    labels = []
    for members in grouping.nearest:
        inside = set(members)
        terms = top_terms([vocab[i] for i in members], [v for i, v in enumerate(vocab) if i not in inside])
        labels.append(describe(None, [texts[i] for i in members[:3]], terms, len(members)).label)
    done = time.perf_counter()
    return {"tasks": n, "clusters": grouping.k, "embed_s": embedded - start,
            "kmeans_s": grouped - embedded, "describe_s": done - grouped, "total_s": done - start,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "labels": labels}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 50_000])
    parser.add_argument("--kinds", type=int, default=8, choices=range(1, len(TEMPLATES) + 1))
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.kinds)))
        return 0
    print(f"{'tasks':>8} {'clusters':>9} {'embed':>8} {'k-means':>8} {'describe':>9} "
          f"{'total':>8} {'peak RSS':>9}")
    for n in args.sizes:
        done = subprocess.run([sys.executable, __file__, "--one", str(n), "--kinds", str(args.kinds)],
                              capture_output=True, text=True, check=True, cwd=REPO)
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{r['tasks']:>8} {r['clusters']:>9} {r['embed_s']:>7.2f}s {r['kmeans_s']:>7.2f}s "
              f"{r['describe_s']:>8.2f}s {r['total_s']:>7.2f}s {r['peak_rss_mb']:>7.0f}MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
