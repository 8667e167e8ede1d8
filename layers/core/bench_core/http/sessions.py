"""Sessions: an agent's sessions list `/u/{login}/{slug}/sessions`, one session's page
`/u/{login}/{slug}/sessions/{session_id}` (its runs in order as one conversation), and their
JSON twins under `/api/agents/{login}/{slug}/sessions`. Read through `reads.sessions`, each
read taking its turn in a worker thread (`heavy_reads`): a session's page reads each run's
root."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from ..domain.privacy import Viewer
from ..domain.sessions import SESSION_PAGE, STATUSES
from ..reads import sessions as reads
from ..runtime.adapters import Services
from . import public_base, services_of
from .api import agent_ref
from .deps import current_viewer
from .heavy_reads import heavy_read
from .templating import PageRoute, page

router = APIRouter(route_class=PageRoute)
api_router = APIRouter(prefix="/api")

FILTERS = ("user", "status", "since", "until")


def _params(request: Request) -> Any:
    """The list's filters from the query string; a blank one is none."""
    return lambda name: request.query_params.get(name) or None


@router.get("/u/{login}/{slug}/sessions")
async def sessions_page(request: Request, login: str, slug: str, cursor: str | None = None,
                        viewer: Viewer = Depends(current_viewer),
                        services: Services = Depends(services_of)) -> Response:
    """The agent's sessions, newest first, filtered by the query string (`FILTERS`)."""
    model = await heavy_read(services.settings, reads.sessions_json, services.store,
                             agent_ref(login, slug), viewer, _params(request), cursor)
    kept = {name: value for name in FILTERS if (value := request.query_params.get(name))}
    return page(request, "sessions.html", viewer=viewer, **model, login=login, slug=slug,
                statuses=STATUSES, base=public_base(request, services),
                next_query=urlencode({**kept, "cursor": model["next_cursor"]})
                if model["next_cursor"] else None)


@router.get("/u/{login}/{slug}/sessions/{session_id}")
async def session_page(request: Request, login: str, slug: str, session_id: str,
                       viewer: Viewer = Depends(current_viewer),
                       services: Services = Depends(services_of)) -> Response:
    """One session: its numbers, then its runs in order, each as a turn of the conversation."""
    model = await heavy_read(services.settings, reads.session_json, services.store,
                             agent_ref(login, slug), viewer, session_id)
    return page(request, "session.html", viewer=viewer, session=model, login=login, slug=slug,
                base=public_base(request, services))


@api_router.get("/agents/{login}/{slug}/sessions")
async def sessions_json(request: Request, login: str, slug: str, cursor: str | None = None,
                        limit: int = Query(SESSION_PAGE, ge=1, le=200),
                        viewer: Viewer = Depends(current_viewer),
                        services: Services = Depends(services_of)) -> dict[str, Any]:
    """The agent's sessions, newest first: `user` (the owner's filter only), `status`
    (`success` or `failed`), `since`, `until` (when a session began); `next_cursor` reads on."""
    answer: dict[str, Any] = await heavy_read(
        services.settings, reads.sessions_json, services.store, agent_ref(login, slug), viewer,
        _params(request), cursor, limit)
    return answer


@api_router.get("/agents/{login}/{slug}/sessions/{session_id}")
async def session_json(login: str, slug: str, session_id: str,
                       viewer: Viewer = Depends(current_viewer),
                       services: Services = Depends(services_of)) -> dict[str, Any]:
    """One session: its numbers and its `runs` in order, each with its `messages` where the
    viewer may see content."""
    answer: dict[str, Any] = await heavy_read(services.settings, reads.session_json,
                                              services.store, agent_ref(login, slug), viewer,
                                              session_id)
    return answer
