"""What every adapter does around a provider call: a Bench task under the current one, the call's
evidence (provider, model, token counts), its latency and its outcome.

Evidence goes out as a ``task.log`` record labelled ``evidence`` with ``cost_usd`` left empty:
the server prices it from its own table, so an SDK never ships (or disagrees with) prices, and
``t.cost()`` stays the owner's alone.

Nothing here may change what a call returns or raises, or raise on its own: each recording step
is guarded, and a failure is logged once while the call goes on unrecorded.
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
import weakref
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol, TypeVar

from bench._client import _FROM_CONTEXT, BenchAgent, BenchTask, _warn_once

if TYPE_CHECKING:  # typing.ParamSpec is 3.10+; annotations are never evaluated at run time
    from typing import ParamSpec

    P = ParamSpec("P")
R = TypeVar("R")

TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens",
                "cache_creation_input_tokens", "reasoning_output_tokens")
WRAPPED = "__bench_wrapped__"


@dataclass
class Outcome:
    """What a finished call produced, as an adapter reads it from the provider's response.
    ``tokens`` is None when the provider reported no usage (then no evidence is recorded)."""

    output: Any = None
    model: Optional[str] = None
    tokens: Optional[dict[str, Optional[int]]] = None


class StreamReader(Protocol):
    """Collects a streamed response item by item; ``outcome`` at any point is what came so far."""

    def add(self, item: Any) -> None: ...

    def outcome(self) -> Outcome: ...


def token_counts(**counts: object) -> dict[str, Optional[int]]:
    """Evidence token fields from a provider's usage numbers: a count the provider did not send
    stays None (never 0), so a total is 0 only when it really was."""
    return {name: _count(counts.get(name)) for name in TOKEN_FIELDS}


def _count(value: object) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def guarded(what: str, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> Optional[R]:
    """``fn(*args, **kwargs)``, or None with a warning (once per ``what``) if it raises."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - recording must never break the agent's call
        _warn_once(f"adapter:{what}", f"bench: could not record {what}: {exc!r}")
        return None


class Call:
    """One provider call being recorded. ``end`` may come from another thread or context (a
    stream read later, a LangChain callback, the garbage collector) and counts once."""

    __slots__ = ("_agent", "_task", "_provider", "_operation", "_model", "_metadata", "_ended",
                 "_lock", "_started")

    def __init__(self, agent: BenchAgent, task: BenchTask, provider: Optional[str],
                 operation: str, model: Optional[str], metadata: dict[str, Any]) -> None:
        self._agent = agent
        self._task = task
        self._provider = provider
        self._operation = operation
        self._model = model
        self._metadata = metadata
        self._ended = False
        self._lock = threading.Lock()
        self._started = time.monotonic()

    @property
    def task(self) -> BenchTask:
        return self._task

    def first_chunk(self) -> None:
        self._metadata.setdefault("time_to_first_chunk_ms",
                                  round((time.monotonic() - self._started) * 1000, 1))

    def end(self, outcome: Optional[Outcome] = None, error: Optional[BaseException] = None) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
        guarded("call end", self._end, outcome or Outcome(), error)

    def _end(self, outcome: Outcome, error: Optional[BaseException]) -> None:
        model = outcome.model or self._model
        if outcome.tokens is not None:
            self._task._record({"label": "evidence", "provider": self._provider, "model": model,
                                "operation": self._operation, **outcome.tokens,
                                "cost_usd": None, "price_source": None})
        about: dict[str, Any] = {"operation": self._operation}
        if self._provider or model:
            about.update(provider=self._provider, model=model,
                         usage_reported=outcome.tokens is not None)
        self._task.metadata({**about, **self._metadata})
        self._agent._end(self._task, error, outcome.output)


def start_call(agent: BenchAgent, *, provider: Optional[str], operation: str,
               model: Optional[str], input: Any, parent: Any = _FROM_CONTEXT,
               name: Optional[str] = None, **metadata: Any) -> Optional[Call]:
    """A recorded call, child of ``parent`` (the current task by default), named ``name`` or
    like a GenAI span (``chat gpt-4o``); None if recording cannot start."""
    def begin() -> Call:
        title = name or (f"{operation} {model}" if model else operation)
        task = agent._begin_detached(title, input, parent)
        return Call(agent, task, provider, operation, model, dict(metadata))

    return guarded("call start", begin)


# ---- streams ---------------------------------------------------------------------------------


def observe_stream(stream: Any, call: Call, reader: StreamReader) -> None:
    """Watch ``stream`` (a provider SDK's ``Stream``/``AsyncStream``) as the caller reads it, and
    end ``call`` when it is exhausted, fails, is dropped or is collected.

    The stream object itself is returned to the caller unchanged: only the iterator it reads
    from (the SDKs' ``_iterator``) is wrapped. A stream without one is recorded unread."""
    iterator = getattr(stream, "_iterator", None)
    if iterator is None:
        call.end(reader.outcome())
        return
    observed = (_observed_async(iterator, call, reader) if hasattr(iterator, "__anext__")
                else _observed(iterator, call, reader))
    stream._iterator = observed
    weakref.finalize(stream, _end_unread, call, reader)


def _end_unread(call: Call, reader: StreamReader) -> None:
    call.end(guarded("stream outcome", reader.outcome))


def _observed(iterator: Iterator[Any], call: Call, reader: StreamReader) -> Iterator[Any]:
    try:
        for item in iterator:
            call.first_chunk()
            guarded("stream chunk", reader.add, item)
            yield item
    except GeneratorExit:
        call.end(guarded("stream outcome", reader.outcome))
        raise
    except BaseException as exc:
        call.end(guarded("stream outcome", reader.outcome), exc)
        raise
    call.end(guarded("stream outcome", reader.outcome))


async def _observed_async(iterator: AsyncIterator[Any], call: Call,
                          reader: StreamReader) -> AsyncIterator[Any]:
    try:
        async for item in iterator:
            call.first_chunk()
            guarded("stream chunk", reader.add, item)
            yield item
    except GeneratorExit:
        call.end(guarded("stream outcome", reader.outcome))
        raise
    except BaseException as exc:
        call.end(guarded("stream outcome", reader.outcome), exc)
        raise
    call.end(guarded("stream outcome", reader.outcome))


# ---- wrapping a client method ----------------------------------------------------------------


@dataclass(frozen=True)
class Api:
    """How to record one provider method: what the request says (``describe``: kwargs →
    (model, input)), what a response says (``read``), and how to read its stream, if any."""

    provider: str
    operation: str
    describe: Callable[[dict[str, Any]], tuple[Optional[str], Any]]
    read: Callable[[Any], Outcome]
    stream: Optional[Callable[[], StreamReader]] = None


def wrap_method(client: object, path: str, agent: BenchAgent, api: Api) -> None:
    """Replace the method at ``path`` (``"chat.completions.create"``) of ``client`` by one that
    records each call; sync and async alike (an async client's method returns an awaitable).
    Wrapping twice is a no-op; a client without the method is left alone."""
    *resources, name = path.split(".")
    owner = guarded(f"{api.provider} client", functools.reduce, getattr, resources, client)
    original = getattr(owner, name, None)
    if original is None:
        return
    if getattr(original, WRAPPED, False):
        return

    @functools.wraps(original)
    def recorded(*args: Any, **kwargs: Any) -> Any:
        call = start_api_call(agent, api, kwargs)
        try:
            result = original(*args, **kwargs)
        except BaseException as exc:
            _fail(call, exc)
            raise
        if inspect.isawaitable(result):
            return _awaited(call, api, kwargs, result)
        return _finish(call, api, kwargs, result)

    setattr(recorded, WRAPPED, True)
    guarded(f"{api.provider} client", setattr, owner, name, recorded)


def start_api_call(agent: BenchAgent, api: Api, kwargs: dict[str, Any],
                   stream: Optional[bool] = None) -> Optional[Call]:
    """The recorded call of a request made with ``kwargs``."""
    described = guarded(f"{api.provider} request", api.describe, kwargs)
    model, input = described if described is not None else (None, None)
    return start_call(agent, provider=api.provider, operation=api.operation, model=model,
                      input=input, stream=kwargs.get("stream") is True if stream is None else stream)


def _fail(call: Optional[Call], exc: BaseException) -> None:
    if call is not None:
        call.end(error=exc)


async def _awaited(call: Optional[Call], api: Api, kwargs: dict[str, Any], awaitable: Any) -> Any:
    try:
        result = await awaitable
    except BaseException as exc:
        _fail(call, exc)
        raise
    return _finish(call, api, kwargs, result)


def _finish(call: Optional[Call], api: Api, kwargs: dict[str, Any], result: Any) -> Any:
    if call is not None:
        if kwargs.get("stream") is True and api.stream is not None:
            guarded("stream", observe_stream, result, call, api.stream())
        else:
            call.end(guarded(f"{api.provider} response", api.read, result))
    return result
