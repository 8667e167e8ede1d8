"""The conversation a run belongs to: ``agent.session(id)`` and a task's ``session_id=``.

A session is carried by a context variable, so every task begun inside ``with
agent.session(...)`` (across ``await``, ``asyncio.gather`` and copied contexts, like the current
task) is sent as part of it. Only a run's root task sends its session and user: the server keeps
them on the run, and its subtasks are part of the run already. An id is made to fit the
server's rule (``bench_core.domain.field_limits.SESSION_RULE``) instead of refused: a session
never costs the agent its events.
"""

from __future__ import annotations

import functools
import inspect
import re
from contextvars import ContextVar, Token
from typing import Any, Callable, Optional, Tuple, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])

MAX_ID_CHARS = 128
"""The server's `MAX_SESSION_CHARS`."""
_NOT_IN_IDS = re.compile(r"[/#\x00-\x1f\x7f-\x9f]")

Session = Tuple[Optional[str], Optional[str]]
"""A session id and a user id, either unknown."""

current_session: ContextVar[Session] = ContextVar("bench_current_session", default=(None, None))


def fit_id(value: Any) -> Optional[str]:
    """A session or user id the server takes: text (a number becomes text), '/' and control
    characters as '-', cut to `MAX_ID_CHARS`; None for anything else or nothing left."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    cleaned = _NOT_IN_IDS.sub("-", str(value).strip())[:MAX_ID_CHARS]
    return cleaned if cleaned not in ("", ".", "..") else None


class SessionScope:
    """What ``agent.session(id, user_id=)`` returns: a sync or async context manager, or a
    decorator whose every call runs inside the session. An id left out (None) keeps the one of
    the session around it."""

    __slots__ = ("_session", "_tokens")

    def __init__(self, session_id: Any, user_id: Any = None) -> None:
        self._session = (fit_id(session_id), fit_id(user_id))
        self._tokens: list[Token[Session]] = []

    def _enter(self) -> None:
        try:
            outer_session, outer_user = current_session.get()
            session_id, user_id = self._session
            self._tokens.append(current_session.set((session_id or outer_session,
                                                     user_id or outer_user)))
        except Exception:  # noqa: BLE001 - never raise into the agent
            self._tokens.append(cast(Token[Session], None))

    def _exit(self) -> None:
        try:
            token = self._tokens.pop() if self._tokens else None
            if token is not None:
                current_session.reset(token)
        except (ValueError, RuntimeError):  # left in another context than it was entered
            pass

    def __enter__(self) -> SessionScope:
        self._enter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._exit()

    async def __aenter__(self) -> SessionScope:
        self._enter()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self._exit()

    @property
    def session_id(self) -> Optional[str]:
        return self._session[0]

    def __call__(self, fn: F) -> F:
        scope = self._session

        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def in_session_async(*args: Any, **kwargs: Any) -> Any:
                inner = SessionScope(*scope)
                with inner:
                    return await fn(*args, **kwargs)

            return cast(F, in_session_async)

        @functools.wraps(fn)
        def in_session(*args: Any, **kwargs: Any) -> Any:
            with SessionScope(*scope):
                return fn(*args, **kwargs)

        return cast(F, in_session)


def root_session(session_id: Any, user_id: Any) -> Session:
    """The session and user a root task is sent with: its own, else the current session's."""
    outer_session, outer_user = current_session.get()
    return fit_id(session_id) or outer_session, fit_id(user_id) or outer_user
