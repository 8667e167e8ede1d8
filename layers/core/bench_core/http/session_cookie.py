"""Who a browser is signed in as: the session its cookie carries, looked up once per request.

Separate from `browser.py` so `deps.current_viewer` can ask without importing the account
pages' machinery. A cookie that cannot be checked counts as no session: signed out, never in.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import HTTPConnection

from ..accounts import sessions
from ..accounts.secrets import SecretUnavailable
from ..accounts.sessions import Session
from ..log import logger
from ..runtime.adapters import Services


def _load(services: Services, cookie: str) -> Session | None:
    try:
        return sessions.load(services.store, services.secrets.session_key(), cookie)
    except SecretUnavailable:
        logger.exception("cannot check a session cookie: the session secret is unavailable")
        return None


async def session_of(connection: HTTPConnection, services: Services) -> Session | None:
    """The live session of this request's (or WebSocket's) cookie."""
    if not hasattr(connection.state, "session"):
        cookie = connection.cookies.get(sessions.COOKIE)
        connection.state.session = (await run_in_threadpool(_load, services, cookie)
                                    if cookie else None)
    session: Session | None = connection.state.session
    return session
