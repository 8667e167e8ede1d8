"""Bench SDK: observe AI agents with one call.

::

    import bench

    agent = bench.observe(agent="my-agent")          # key from BENCH_KEY, server from BENCH_ENDPOINT

    async with agent.task_ctx("search", {"query": q}) as t:
        t.log("found", 3)
        t.cost(0.004)

    with agent.span("plan") as t:                      # the same for sync code
        ...

Importing this package starts no thread, opens no socket and reads no file; the sender thread
starts with the first event.
"""

from __future__ import annotations

from typing import Optional

from bench._client import BenchAgent, BenchTask, Span
from bench._context import current_task
from bench._privacy import Redactor
from bench._reuse import verify_invocation
from bench._sender import SenderConfig
from bench._version import __version__
from bench.lambda_ import lambda_handler

__all__ = [
    "BenchAgent",
    "BenchTask",
    "SenderConfig",
    "Span",
    "__version__",
    "current_task",
    "lambda_handler",
    "observe",
    "verify_invocation",
]


def observe(
    api_key: Optional[str] = None,
    agent: Optional[str] = None,
    *,
    display_name: Optional[str] = None,
    endpoint: Optional[str] = None,
    flush_interval_ms: int = 2000,
    max_batch_size: int = 50,
    model: Optional[str] = None,
    framework: Optional[str] = None,
    architecture: Optional[str] = None,
    tools: Optional[list[str]] = None,
    version: Optional[str] = None,
    max_queue_size: int = 10_000,
    sample_rate: float = 1.0,
    capture_input: bool = True,
    capture_output: bool = True,
    redact: Optional[Redactor] = None,
    sender_config: Optional[SenderConfig] = None,
    spool_dir: Optional[str] = None,
    spool_max_mb: Optional[float] = None,
) -> BenchAgent:
    """Start observing an agent; returns the :class:`BenchAgent` to record tasks with.

    Args:
        api_key: ``bk_…`` or ``bka_…`` key; default ``BENCH_KEY``, then the key ``bench login`` saved.
        agent: the agent's slug; default ``BENCH_AGENT``, then ``bench.agent.json``.
        display_name, model, framework, architecture, tools: shown on the profile.
        version: the agent's version (a tag, a release, a commit), on every run this process
            records: the profile compares each version's numbers with the one before. Default
            ``BENCH_AGENT_VERSION``, else the short hash of the git commit checked out in the
            working directory, else none. Letters, digits and ``._+-``, at most 64 characters
            (others become ``-``).
        endpoint: server base URL or its ``/ingest`` URL; default ``BENCH_ENDPOINT``, else
            (when no key is given) the server ``bench login`` signed in to last, else the local
            server ``http://127.0.0.1:8000``. Nothing is sent anywhere else.
        flush_interval_ms: how often waiting events are sent.
        max_batch_size: send as soon as this many events wait.
        max_queue_size: events held in memory at most; past it new events are dropped, counted,
            and the count is reported to the server.
        sample_rate: fraction of runs to record, decided per root task (subtasks follow it).
        capture_input / capture_output: False sends no task inputs / no outputs or error text.
        redact: ``redact(value) -> value`` applied to every user value that leaves the process
            (inputs, outputs, error text, log values, event data, metadata, cost details).
        sender_config: delivery tuning (timeouts, backoff, request size, transport).
        spool_dir: where events still undelivered at exit wait for the next process sending to
            this endpoint with this key; default ``BENCH_SPOOL_DIR``, else the user's cache
            directory (``~/.cache/bench/spool`` on Linux, ``/tmp/bench/spool`` in AWS Lambda).
        spool_max_mb: the spool directory's bound; default ``BENCH_SPOOL_MAX_MB``, else 50.
            Over it the oldest events are kept and the rest counted as dropped; 0 turns the
            spool off.

    Without a key or slug, or with ``BENCH_DISABLED=1``, every method is a no-op.
    """
    return BenchAgent(
        api_key,
        agent,
        display_name=display_name,
        endpoint=endpoint,
        flush_interval_ms=flush_interval_ms,
        max_batch_size=max_batch_size,
        model=model,
        framework=framework,
        architecture=architecture,
        tools=tools,
        version=version,
        max_queue_size=max_queue_size,
        sample_rate=sample_rate,
        capture_input=capture_input,
        capture_output=capture_output,
        redact=redact,
        sender_config=sender_config,
        spool_dir=spool_dir,
        spool_max_mb=spool_max_mb,
    )
