"""BenchAgent and BenchTask: the public surface, source-compatible with bench-observe 0.1.3.

Recording an event builds a small dict and appends it to the sender's queue; everything slow
(redaction, JSON, gzip, HTTP, retries) happens on the sender thread. No method here lets an SDK
failure reach the agent: the agent's own return values and exceptions pass through unchanged.

Adapters written for 0.1.3 import ``BenchAgent._push``, ``_uid`` and ``_now_iso`` from this
module, so those names keep their meaning.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
import re
import threading
import time
import zlib
from random import getrandbits
from typing import Any, Awaitable, Callable, Optional, TypeVar, Union, cast

from bench import _config
from bench._context import current
from bench._feedback import FeedbackSender
from bench._privacy import Redactor, Scrubber
from bench._sender import Sender, SenderConfig
from bench._serialize import format_ts
from bench._session import SessionScope, root_session
from bench._version import SDK_NAME, __version__

MAX_TASK_COST_USD = 1_000_000.0
"""The server refuses a task (or cost log) costing more (bench_core.domain.models.MAX_COST_USD)."""

_time = time.time

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
TaskFn = Callable[["BenchTask"], Union[Awaitable[T], T]]

logger = logging.getLogger("bench")

DEFAULT_FLUSH_TIMEOUT = 5.0
"""Seconds ``flush``/``shutdown`` wait by default: long enough to deliver, short enough that a
dead server never stalls the agent."""

_FROM_CONTEXT: Any = object()
"""Sentinel: find the parent task in the current context."""
_UNSET: Any = object()

_rollup_lock = threading.Lock()


class Details:
    """What a task is opened with besides its name and input: the session and user of its run
    (sent by a root task only: ``bench._session``), and tags and metadata it starts with."""

    __slots__ = ("session_id", "user_id", "tags", "metadata")

    def __init__(self, session_id: Any = None, user_id: Any = None, tags: Any = None,
                 metadata: Any = None) -> None:
        self.session_id = session_id
        self.user_id = user_id
        self.tags = tags
        self.metadata = metadata

    @classmethod
    def of(cls, session_id: Any, user_id: Any, tags: Any, metadata: Any) -> Optional[Details]:
        given = (session_id, user_id, tags, metadata)
        return None if all(v is None for v in given) else cls(*given)

    def apply(self, task: BenchTask) -> None:
        if isinstance(self.metadata, dict):
            task.metadata(self.metadata)
        if isinstance(self.tags, (list, tuple, set, frozenset)):
            task.metadata({"tags": [str(tag) for tag in self.tags]})
        elif isinstance(self.tags, str):
            task.metadata({"tags": [self.tags]})
_warned: set[str] = set()


def _uid() -> str:
    """A random 20-hex-character id, the original client's format.

    ``random`` is reseeded in forked children, so ids stay unique across processes; it is
    three times cheaper than ``os.urandom`` on the agent's thread.
    """
    return getrandbits(80).to_bytes(10, "big").hex()


def _now_iso() -> str:
    """The current UTC time in the wire format, e.g. ``2026-12-02T16:12:28.123Z``."""
    return format_ts(time.time())


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        logger.warning(message)


def _snapshot(value: Any) -> Any:
    """Copy a top-level dict or list, so an agent that keeps appending to it (a message list)
    does not change what was recorded; the value is encoded later, on the sender thread."""
    cls = value.__class__
    return value.copy() if cls is dict or cls is list else value


def _discard(event: dict[str, Any]) -> None:
    """The queue of a disabled agent."""


def _error_text(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


FEEDBACK_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._:-]{0,63}")
"""What the server takes as a label: a short name."""


def _feedback_problem(run: Optional[str], score: Any, thumbs: Any, label: Any, comment: Any
                      ) -> Optional[str]:
    """What is wrong with a feedback's values (the server's rules, checked before sending)."""
    if not isinstance(run, str) or not run:
        return "no run_id given and no task running here"
    if (score is None) == (thumbs is None):
        return "give either score (0 to 1) or thumbs (\"up\" or \"down\")"
    if thumbs is not None and thumbs not in ("up", "down"):
        return "thumbs must be \"up\" or \"down\""
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))
                              or not 0 <= score <= 1):
        return "score must be a number from 0 to 1"
    if label is not None and not (isinstance(label, str) and FEEDBACK_LABEL.fullmatch(label)):
        return "label must be a short name (letters, digits, ' ._:-', up to 64)"
    if comment is not None and not (isinstance(comment, str) and len(comment) <= 4000):
        return "comment must be text of up to 4,000 characters"
    return None


class BenchTask:
    """One unit of agent work. Yielded by ``task_ctx``/``span`` and passed to task functions.

    All methods are safe to call from any thread and never raise.
    """

    __slots__ = (
        "_agent", "_name", "_task_id", "_parent", "_parent_id", "_sampled", "_start",
        "_total_cost", "_cost_breakdown", "_metadata", "_output", "_ended",
        "_token", "_opener",
    )

    def __init__(
        self,
        agent: BenchAgent,
        name: str,
        task_id: str,
        parent: Optional[BenchTask] = None,
        sampled: bool = True,
    ) -> None:
        self._agent = agent
        self._name = name
        self._task_id = task_id
        self._parent = parent
        self._parent_id = parent._task_id if parent is not None else None
        self._sampled = sampled
        self._start = time.monotonic()
        self._total_cost = 0.0
        self._cost_breakdown: list[dict[str, Any]] = []
        self._metadata: Optional[dict[str, Any]] = None
        self._output: Any = _UNSET
        self._ended = False
        self._token: Any = None
        self._opener: Optional[Span] = None

    @property
    def task_id(self) -> str:
        return self._task_id

    @property
    def parent_task_id(self) -> Optional[str]:
        return self._parent_id

    @property
    def name(self) -> str:
        return self._name

    def log(self, label: str, value: Any = None) -> None:
        """Record a labelled value (a count, a document id, an intermediate answer)."""
        if self._sampled:
            self._agent._enqueue({
                "id": _uid(), "kind": "task.log", "ts": _time(), "task_id": self._task_id,
                "parent_task_id": self._parent_id, "name": self._name,
                "data": {"label": label, "value": _snapshot(value)},
            })

    def cost(self, usd: float, details: Optional[dict[str, Any]] = None) -> None:
        """Add owner-reported spend in USD; ``details`` defaults to ``{"source": "manual"}``.

        Unlike 0.1.3, an invalid amount is logged and ignored instead of raising into the agent.
        """
        valid_type = usd.__class__ is float or (isinstance(usd, int) and not isinstance(usd, bool))
        if not valid_type or not 0 <= usd <= MAX_TASK_COST_USD - self._total_cost:
            _warn_once("cost", f"bench: ignoring cost {usd!r}: must be a non-negative USD amount "
                               f"keeping the task at most {MAX_TASK_COST_USD:.0f} USD")
            return
        cost_details = dict(details) if isinstance(details, dict) else {"source": "manual"}
        self._total_cost += usd
        self._cost_breakdown.append({**cost_details, "amount_usd": usd})
        if self._sampled:
            self._agent._enqueue({
                "id": _uid(), "kind": "task.log", "ts": _time(), "task_id": self._task_id,
                "parent_task_id": self._parent_id, "name": self._name,
                "data": {"label": "cost", "cost_usd": usd, "cost_details": cost_details},
            })

    def metadata(self, obj: dict[str, Any]) -> None:
        """Merge ``obj`` into the task's metadata, sent with its end event."""
        if isinstance(obj, dict):
            if self._metadata is None:
                self._metadata = {}
            self._metadata.update(obj)

    def set_output(self, value: Any) -> None:
        """Set what the task produced; wins over a task function's return value."""
        self._output = value

    def _record(self, data: dict[str, Any]) -> None:
        """Queue a ``task.log`` whose data is ``data`` as given, not a label and a value: the
        evidence records of ``bench.adapters``."""
        if self._sampled:
            self._agent._enqueue({
                "id": _uid(), "kind": "task.log", "ts": _time(), "task_id": self._task_id,
                "parent_task_id": self._parent_id, "name": self._name, "data": data,
            })

    async def subtask(self, name: str, input: Any, fn: TaskFn[T]) -> T:
        """Run ``fn`` as a child of this task (explicit parent, as in 0.1.3)."""
        return await self._agent._run(name, input, fn, self)


class Span:
    """A task opened by ``agent.span(...)`` (and ``agent.task_ctx(...)``), usable four ways.

    ``with`` and ``async with`` yield the :class:`BenchTask`; as a decorator on a sync or async
    function every call is a new task whose input is the call's arguments (unless ``input`` was
    given) and whose output is the return value. The parent is whatever task is running in the
    current context. One ``Span`` may be entered many times, even concurrently: each entry is its
    own task, and exit finds it through the context.
    """

    __slots__ = ("_agent", "_name", "_input", "_parent", "_details")

    def __init__(self, agent: BenchAgent, name: Optional[str], input: Any, parent: Any = _FROM_CONTEXT,
                 details: Optional[Details] = None):
        self._agent = agent
        self._name = name
        self._input = input
        self._parent = parent
        self._details = details

    def __enter__(self) -> BenchTask:
        return self._agent._begin(self._name or "task", self._input, self._parent, self, self._details)

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> None:
        self._agent._exit(self, exc)

    async def __aenter__(self) -> BenchTask:
        return self.__enter__()

    async def __aexit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> None:
        self._agent._exit(self, exc)

    def __call__(self, fn: F) -> F:
        agent = self._agent
        name = self._name or getattr(fn, "__qualname__", None) or "task"
        describe = _describe_call(fn) if self._input is None else (lambda args, kwargs: self._input)
        details = self._details

        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def traced_async(*args: Any, **kwargs: Any) -> Any:
                task = agent._begin(name, describe(args, kwargs) if agent._capture_input else None,
                                    details=details)
                try:
                    result = await fn(*args, **kwargs)
                except BaseException as exc:
                    agent._end(task, exc)
                    raise
                agent._end(task, None, result)
                return result

            return cast(F, traced_async)  # functools.wraps gave it fn's signature

        @functools.wraps(fn)
        def traced(*args: Any, **kwargs: Any) -> Any:
            task = agent._begin(name, describe(args, kwargs) if agent._capture_input else None,
                                    details=details)
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                agent._end(task, exc)
                raise
            agent._end(task, None, result)
            return result

        return cast(F, traced)


def _describe_call(fn: Callable[..., Any]) -> Callable[[tuple[Any, ...], dict[str, Any]], Any]:
    """Turn a call's arguments into a readable input dict, leaving out ``self``/``cls``."""
    try:
        signature: Optional[inspect.Signature] = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None

    def describe(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if signature is None:
            return {"args": list(args), "kwargs": kwargs}
        try:
            arguments = signature.bind_partial(*args, **kwargs).arguments
        except TypeError:
            return {"args": list(args), "kwargs": kwargs}
        return {k: v for k, v in arguments.items() if k not in ("self", "cls")}

    return describe


class BenchAgent:
    """Records tasks and events for one agent and delivers them in the background.

    Create it with :func:`bench.observe`. Async API as in 0.1.3 (``task``, ``task_ctx``,
    ``flush``), plus ``span`` for sync and async code alike and ``*_sync`` variants of
    ``flush``/``shutdown`` for code without an event loop.
    """

    def __init__(
        self,
        api_key: Optional[str] = None,
        agent: Optional[str] = None,
        *,
        display_name: Optional[str] = None,
        model: Optional[str] = None,
        framework: Optional[str] = None,
        architecture: Optional[str] = None,
        tools: Optional[list[str]] = None,
        version: Optional[str] = None,
        endpoint: Optional[str] = None,
        flush_interval_ms: Optional[int] = None,
        max_batch_size: Optional[int] = None,
        max_queue_size: Optional[int] = None,
        sample_rate: float = 1.0,
        capture_input: bool = True,
        capture_output: bool = True,
        redact: Optional[Redactor] = None,
        sender_config: Optional[SenderConfig] = None,
        spool_dir: Optional[str] = None,
        spool_max_mb: Optional[float] = None,
    ) -> None:
        server = _config.base_url(endpoint, api_key)
        key = None if _config.disabled() else _config.api_key(api_key, server)
        slug = _config.agent_slug(agent)
        self._slug = slug
        self._sample_rate = min(max(float(sample_rate), 0.0), 1.0)
        self._capture_input = capture_input
        self._sender: Optional[Sender] = None
        self._feedback: Optional[FeedbackSender] = None
        self._feedback_lock = threading.Lock()
        self._redact = redact
        self._enqueue: Callable[[dict[str, Any]], None] = _discard
        if _config.disabled():
            return
        if not key or not slug:
            missing = "api_key (or BENCH_KEY)" if not key else "agent (or BENCH_AGENT)"
            _warn_once("config", f"bench: no {missing} given; events are not recorded")
            return
        config = sender_config or SenderConfig()
        if flush_interval_ms is not None:
            config = dataclasses.replace(config, flush_interval=flush_interval_ms / 1000.0)
        if max_batch_size is not None:
            config = dataclasses.replace(config, max_batch_size=max_batch_size)
        if max_queue_size is not None:
            config = dataclasses.replace(config, max_queue_size=max_queue_size)
        if spool_dir is not None:
            config = dataclasses.replace(config, spool_dir=str(spool_dir))
        if spool_max_mb is not None:
            config = dataclasses.replace(config, spool_max_mb=spool_max_mb)
        meta = {
            "agent_slug": slug, "display_name": display_name, "model": model, "framework": framework,
            "architecture": architecture, "tools": tools, "sdk": {"name": SDK_NAME, "version": __version__},
        }
        agent_version = _config.agent_version(version)
        if agent_version is not None:
            meta["version"] = agent_version
        scrubber = Scrubber(capture_input=capture_input, capture_output=capture_output, redact=redact)
        self._sender = Sender(url=server + "/ingest", api_key=key, meta=meta, scrubber=scrubber, config=config)
        self._enqueue = self._sender.push
        self._feedback_to = (server, key, slug, config.spool_dir, config.spool_max_mb)

    def __repr__(self) -> str:
        state = "enabled" if self._sender is not None else "disabled"
        return f"<BenchAgent {self._slug!r} {state}>"

    # ── tasks ────────────────────────────────────────────────────────────────────────────

    async def task(self, name: str, input: Any, fn: TaskFn[T], *, session_id: Optional[str] = None,
                   user_id: Optional[str] = None, tags: Optional[list[str]] = None,
                   metadata: Optional[dict[str, Any]] = None) -> T:
        """Run ``fn(task)`` as a task and return its result; exceptions mark it ``failed`` and
        propagate unchanged. Nested inside another task it becomes that task's child. The
        keywords are ``span``'s."""
        return await self._run(name, input, fn, _FROM_CONTEXT,
                               Details.of(session_id, user_id, tags, metadata))

    def task_ctx(self, name: str, input: Any = None, *, session_id: Optional[str] = None,
                 user_id: Optional[str] = None, tags: Optional[list[str]] = None,
                 metadata: Optional[dict[str, Any]] = None) -> Span:
        """``async with agent.task_ctx(name, input) as t:`` (0.1.3 form; same object as ``span``)."""
        return Span(self, name, input, details=Details.of(session_id, user_id, tags, metadata))

    def session(self, session_id: Any, user_id: Any = None) -> SessionScope:
        """The conversation the runs begun inside belong to, and the person having it: a sync
        or async context manager, or a decorator. Nested tasks are part of their run's
        session; a run's own ``session_id=`` wins over the one around it.

        ::

            with agent.session(conversation_id, user_id=user.id):
                answer(question)          # every run begun here is a turn of the conversation

            @agent.session("nightly-batch")
            async def nightly(): ...

        The server shows the session's runs in order as one conversation; a user id is shown
        to visitors only as a pseudonym. Never raises: an id the server would refuse is made
        to fit."""
        return SessionScope(session_id, user_id)

    def span(self, name: Optional[str] = None, input: Any = None, *, session_id: Optional[str] = None,
             user_id: Optional[str] = None, tags: Optional[list[str]] = None,
             metadata: Optional[dict[str, Any]] = None) -> Span:
        """A task for sync or async code: a context manager or a decorator.

        ::

            with agent.span("plan", {"goal": goal}) as t:        # sync
                t.log("steps", 3)

            async with agent.span("search", {"q": q}) as t:      # async
                t.set_output(await search(q))

            @agent.span("fetch")                                  # sync or async function
            def fetch(url): ...

        The parent is found through ``contextvars``: across ``await``, ``asyncio.gather`` and
        threads started with a copied context (``asyncio.to_thread``, ``copy_context().run``).
        Without ``name`` a decorated function's qualified name is used. ``session_id`` and
        ``user_id`` put a run in a conversation (see ``session``; a root task sends them),
        ``tags`` and ``metadata`` start the task's metadata (``t.metadata(tags=[...])``).
        """
        return Span(self, name, input, details=Details.of(session_id, user_id, tags, metadata))

    def event(self, kind: str, data: Any = None) -> None:
        """Record a custom event (e.g. ``"tool.use"``), linked to the current task if any."""
        try:
            task = current.get()
            event: dict[str, Any] = {"id": _uid(), "kind": kind, "ts": _time(), "data": _snapshot(data)}
            if task is not None:
                if not task._sampled:
                    return
                event["task_id"] = task._task_id
                event["parent_task_id"] = task._parent_id
            elif not self._sample(event["id"]):
                return
            self._enqueue(event)
        except Exception as exc:  # noqa: BLE001 - never raise into the agent
            _warn_once("event", f"bench: could not record event: {exc!r}")

    # ── feedback from people ─────────────────────────────────────────────────────────────

    def feedback(
        self,
        run_id: Optional[str] = None,
        score: Optional[float] = None,
        *,
        thumbs: Optional[str] = None,
        comment: Optional[str] = None,
        label: Optional[str] = None,
        feedback_id: Optional[str] = None,
    ) -> Optional[str]:
        """Pass on what a person said of a run: a ``score`` from 0 to 1 or ``thumbs`` ("up" or
        "down"), with a short ``label`` and a ``comment`` if they like. ``run_id`` defaults to
        the run of the task running here. Sent in the background (after the run's own
        events); returns the feedback's id (``feedback_id`` if given: sending one id twice
        keeps one), or None when nothing is sent (bad values are warned about, never raised).

        ::

            with agent.span("answer", question) as t:
                ...
            agent.feedback(t.task_id, thumbs="up", comment="solved it")   # later
        """
        try:
            if self._sender is None:
                return None
            run = run_id if run_id is not None else self._current_run()
            problem = _feedback_problem(run, score, thumbs, label, comment)
            if problem:
                _warn_once("feedback", f"bench: feedback not sent: {problem}")
                return None
            fid = feedback_id or _uid()
            body: dict[str, Any] = {"feedback_id": fid}
            body.update({"thumbs": thumbs} if thumbs is not None else {"score": float(score)})  # type: ignore[arg-type]
            if label is not None:
                body["label"] = label
            if comment is not None:
                body["comment"] = self._redact(comment) if self._redact is not None else comment
            self._feedback_sender().put(cast(str, run), body)
            return fid
        except Exception as exc:  # noqa: BLE001 - never raise into the agent
            _warn_once("feedback-error", f"bench: could not send feedback: {exc!r}")
            return None

    def _current_run(self) -> Optional[str]:
        """The root of the task running here, if it is recorded (sampled)."""
        task = current.get()
        while task is not None and task._parent is not None:
            task = task._parent
        return task._task_id if task is not None and task._sampled else None

    def _feedback_sender(self) -> FeedbackSender:
        with self._feedback_lock:
            if self._feedback is None:
                server, key, slug, spool_dir, spool_max_mb = self._feedback_to
                sender = self._sender
                assert sender is not None
                self._feedback = FeedbackSender(server, key, slug, settle_events=sender.flush,
                                                spool_dir=spool_dir, spool_max_mb=spool_max_mb)
            return self._feedback

    # ── delivery ─────────────────────────────────────────────────────────────────────────

    async def flush(self, timeout: Optional[float] = DEFAULT_FLUSH_TIMEOUT) -> bool:
        """Wait (without blocking the event loop) until queued events are delivered.

        Returns False if ``timeout`` passed first; the events stay queued and keep retrying.
        """
        if self._sender is None:
            return True
        import asyncio

        return await asyncio.get_running_loop().run_in_executor(None, self.flush_sync, timeout)

    def flush_sync(self, timeout: Optional[float] = DEFAULT_FLUSH_TIMEOUT) -> bool:
        """Block until queued events (and feedback) are delivered or ``timeout`` passes; False
        on timeout."""
        try:
            deadline = None if timeout is None else time.monotonic() + timeout
            delivered = self._sender is None or self._sender.flush(timeout)
            if self._feedback is not None:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                delivered = self._feedback.flush(left) and delivered
            return delivered
        except Exception as exc:  # noqa: BLE001
            _warn_once("flush", f"bench: flush failed: {exc!r}")
            return False

    async def shutdown(self, timeout: Optional[float] = DEFAULT_FLUSH_TIMEOUT) -> bool:
        """Flush and stop the sender; later events are dropped. Async form of ``shutdown_sync``."""
        if self._sender is None:
            return True
        import asyncio

        return await asyncio.get_running_loop().run_in_executor(None, self.shutdown_sync, timeout)

    def shutdown_sync(self, timeout: Optional[float] = DEFAULT_FLUSH_TIMEOUT) -> bool:
        """Flush, then stop the sender thread. Interpreter exit does this on its own."""
        try:
            if self._feedback is not None:
                self._feedback.shutdown(timeout)
            return self._sender is None or self._sender.shutdown(timeout)
        except Exception as exc:  # noqa: BLE001
            _warn_once("shutdown", f"bench: shutdown failed: {exc!r}")
            return False

    # ── internals (``_push`` is used by adapters written for 0.1.3) ──────────────────────

    def _push(self, event: dict[str, Any]) -> None:
        """Queue a wire-format event dict. It is redacted and encoded later, on the sender."""
        self._enqueue(event)

    def _sample(self, root_id: str) -> bool:
        """Keep a whole run or none of it, decided by a stable hash of its root id."""
        if self._sender is None:
            return False
        rate = self._sample_rate
        return rate >= 1.0 or zlib.crc32(root_id.encode()) < rate * 2**32

    async def _run(self, name: str, input: Any, fn: TaskFn[T], parent: Any,
                   details: Optional[Details] = None) -> T:
        task = self._begin(name, input, parent, details=details)
        try:
            result = fn(task)
            if inspect.isawaitable(result):
                result = await result
        except BaseException as exc:
            self._end(task, exc)
            raise
        self._end(task, None, result)
        return result

    def _begin(self, name: str, input: Any, parent: Any = _FROM_CONTEXT, opener: Optional[Span] = None,
               details: Optional[Details] = None) -> BenchTask:
        try:
            if parent is _FROM_CONTEXT:
                parent = current.get()
            task_id = _uid()
            sampled = parent._sampled if parent is not None else self._sample(task_id)
            task = BenchTask(self, name, task_id, parent, sampled)
            task._opener = opener
            task._token = current.set(task)
            if details is not None:
                details.apply(task)
            if sampled:
                event = {
                    "id": _uid(), "kind": "task.start", "ts": _time(), "task_id": task_id,
                    "parent_task_id": task._parent_id, "name": name, "input": _snapshot(input),
                }
                if parent is None:
                    session_id, user_id = root_session(details and details.session_id,
                                                       details and details.user_id)
                    if session_id is not None:
                        event["session_id"] = session_id
                    if user_id is not None:
                        event["user_id"] = user_id
                self._enqueue(event)
            return task
        except Exception as exc:  # noqa: BLE001 - the agent's work runs even if recording cannot
            _warn_once("begin", f"bench: could not start task: {exc!r}")
            return BenchTask(self, name, "", None, False)

    def _begin_detached(self, name: str, input: Any, parent: Any = _FROM_CONTEXT) -> BenchTask:
        """Begin a task without entering it: the current task stays current. For adapters
        whose task ends elsewhere (a stream read later, a LangChain callback) and has no
        children through the context; end it with ``_end``."""
        task = self._begin(name, input, parent)
        if task._token is not None:
            current.reset(task._token)
            task._token = None
        return task

    def _exit(self, opener: Span, exc: Optional[BaseException]) -> None:
        task = current.get()
        if task is None or task._opener is not opener:
            _warn_once("exit", "bench: a span was exited in another context than it was entered; not recorded")
            return
        self._end(task, exc)

    def _end(self, task: BenchTask, exc: Optional[BaseException], result: Any = None) -> None:
        try:
            if task._token is not None:
                try:
                    current.reset(task._token)
                except (ValueError, RuntimeError):  # ended in another context than it began
                    current.set(task._parent)
            with _rollup_lock:
                task._ended = True
                breakdown = list(task._cost_breakdown)
                parent = task._parent
                if parent is not None and breakdown and not parent._ended:
                    parent._total_cost += task._total_cost
                    parent._cost_breakdown.extend(breakdown)
            if not task._sampled:
                return
            if exc is not None:
                status, output = "failed", _error_text(exc)
            else:
                status, output = "success", result if task._output is _UNSET else task._output
            event = {
                "id": _uid(), "kind": "task.end", "ts": _time(), "task_id": task._task_id,
                "parent_task_id": task._parent_id, "name": task._name, "status": status,
                "output": _snapshot(output), "duration_ms": int((time.monotonic() - task._start) * 1000),
                "cost_usd": task._total_cost,
                "data": dict(task._metadata) if task._metadata is not None else None,
            }
            if breakdown:
                event["cost_breakdown"] = breakdown
            self._enqueue(event)
        except Exception as exc2:  # noqa: BLE001
            _warn_once("end", f"bench: could not end task: {exc2!r}")
