"""Benchmarks (SPEC section 8): versioned suites run with repeats, graded and stored with their
evidence, and shown as *benchmark evidence*, apart from the owner's own telemetry.

- `suites.py`: the suite definitions (manifest + cases), loaded and content-hashed.
- `grading.py`: the suite's judge (the configured LLM) or the labelled offline grader.
- `aggregate.py`: pass rates with Wilson intervals, pass^k, pass@k, cost, latency.
- `domain/benchmark_records.py` (in the domain): a stored run and its attempts.
- `runs.py`: a submitted run checked, graded, summarised and stored -- never trusting its summary.
- `views.py`: what pages, the API and MCP show, through the privacy gate.
"""
