"""The JSON read API and the owner's agent settings (`/api/agents/...`)."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Depends, Query
from starlette.concurrency import run_in_threadpool

from ..accounts import live_grants
from ..domain.errors import BadRequest, Forbidden, NotFound
from ..domain.models import LOGIN_PATTERN, SLUG_PATTERN, Agent, AgentRef, AgentSettingsPatch, KeyRecord
from ..domain.privacy import Viewer, event_view, task_view, visible_agent
from ..reads.agents import agent_detail
from ..runtime.adapters import Services
from . import services_of
from .deps import current_viewer, require_key

router = APIRouter(prefix="/api")

TASK_STATUSES = ("running", "success", "failed")


_LOGIN = re.compile(LOGIN_PATTERN)
_SLUG = re.compile(SLUG_PATTERN)


def agent_ref(login: str, slug: str) -> AgentRef:
    """The agent a URL names; malformed names are simply not found."""
    if not _LOGIN.match(login) or not _SLUG.match(slug):
        raise NotFound("agent not found")
    return AgentRef(login.lower(), slug.lower())


def load_visible(services: Services, login: str, slug: str, viewer: Viewer) -> Agent:
    return visible_agent(services.store.get_agent(agent_ref(login, slug)), viewer)


@router.get("/agents/{login}/{slug}")
def get_agent(login: str, slug: str, viewer: Viewer = Depends(current_viewer),
              services: Services = Depends(services_of)) -> dict[str, Any]:
    agent = load_visible(services, login, slug, viewer)
    return agent_detail(services.store, agent, viewer)


@router.get("/agents/{login}/{slug}/events")
def get_events(login: str, slug: str, limit: int = Query(100, ge=1, le=1000),
               viewer: Viewer = Depends(current_viewer),
               services: Services = Depends(services_of)) -> dict[str, Any]:
    agent = load_visible(services, login, slug, viewer)
    events = services.store.recent_events(agent.ref, limit)
    return {"events": [event_view(e, agent, viewer) for e in events]}


@router.get("/agents/{login}/{slug}/tasks")
def get_tasks(login: str, slug: str, status: str | None = None, parent: str | None = None,
              cursor: str | None = None, limit: int = Query(50, ge=1, le=200),
              viewer: Viewer = Depends(current_viewer),
              services: Services = Depends(services_of)) -> dict[str, Any]:
    if status is not None and status not in TASK_STATUSES:
        raise BadRequest(f"unknown status {status!r}: use one of {', '.join(TASK_STATUSES)}",
                         [{"loc": ["query", "status"], "msg": "unknown status"}])
    agent = load_visible(services, login, slug, viewer)
    try:
        tasks, next_cursor = services.store.list_tasks(agent.ref, parent=parent, status=status,
                                                       limit=limit, cursor=cursor)
    except ValueError as exc:
        raise BadRequest(str(exc), [{"loc": ["query", "cursor"], "msg": str(exc)}]) from exc
    children = services.store.subtask_ids(agent.ref, [t.task_id for t in tasks])
    return {"tasks": [{**task_view(t, agent, viewer), "subtask_ids": children[t.task_id]}
                      for t in tasks],
            "next_cursor": next_cursor}


@router.get("/agents/{login}/{slug}/tasks/{task_id}")
def get_task(login: str, slug: str, task_id: str, viewer: Viewer = Depends(current_viewer),
             services: Services = Depends(services_of)) -> dict[str, Any]:
    agent = load_visible(services, login, slug, viewer)
    task = services.store.get_task(agent.ref, task_id)
    if task is None:
        raise NotFound("task not found")
    children = services.store.subtask_ids(agent.ref, [task_id])[task_id]
    events = services.store.task_events(agent.ref, task_id)
    return {**task_view(task, agent, viewer, events), "subtask_ids": children,
            "events": [event_view(e, agent, viewer) for e in events]}


@router.patch("/agents/{login}/{slug}")
async def patch_agent(login: str, slug: str, patch: AgentSettingsPatch,
                      key: KeyRecord = Depends(require_key),
                      services: Services = Depends(services_of)) -> dict[str, Any]:
    ref = agent_ref(login, slug)
    if key.login != ref.login:
        raise NotFound("agent not found")
    if key.agent_slug is not None:
        raise Forbidden("agent keys may only ingest; use an owner key (bk_...) for settings")
    changes = patch.model_dump(exclude_none=True)
    agent = await run_in_threadpool(services.store.update_agent, ref, changes)
    if agent is None:
        raise NotFound("agent not found")
    await live_grants.settings_changed(services.live, agent)
    return agent_detail(services.store, agent, Viewer.of_key(key))
