"""The JSON read API and the owner's agent settings (`/api/agents/...`)."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Depends, Query
from starlette.concurrency import run_in_threadpool

from ..accounts import live_grants
from ..accounts.agents import change_settings_with_key
from ..domain.errors import NotFound
from ..domain.field_limits import VERSION_PATTERN
from ..domain.models import LOGIN_PATTERN, SLUG_PATTERN, Agent, AgentRef, AgentSettingsPatch, KeyRecord
from ..domain.privacy import Viewer
from ..reads import tasks
from ..reads.agents import agent_detail, visible
from ..reads.analytics import analytics, selection
from ..reads.compare import MIN_SAMPLE
from ..reads.versions import agent_versions, check_version
from ..runtime.adapters import Services
from . import services_of
from .deps import current_viewer, require_key
from .heavy_reads import heavy_read

router = APIRouter(prefix="/api")

_LOGIN = re.compile(LOGIN_PATTERN)
_SLUG = re.compile(SLUG_PATTERN)


def agent_ref(login: str, slug: str) -> AgentRef:
    """The agent a URL names; malformed names are simply not found."""
    if not _LOGIN.match(login) or not _SLUG.match(slug):
        raise NotFound("agent not found")
    return AgentRef(login.lower(), slug.lower())


def load_visible(services: Services, login: str, slug: str, viewer: Viewer) -> Agent:
    return visible(services.store, agent_ref(login, slug), viewer)


@router.get("/agents/{login}/{slug}")
def get_agent(login: str, slug: str, viewer: Viewer = Depends(current_viewer),
              services: Services = Depends(services_of)) -> dict[str, Any]:
    agent = load_visible(services, login, slug, viewer)
    return agent_detail(services.store, agent, viewer)


@router.get("/agents/{login}/{slug}/versions")
def get_versions(login: str, slug: str, viewer: Viewer = Depends(current_viewer),
                 services: Services = Depends(services_of)) -> dict[str, Any]:
    """Each version's numbers and the newest against the one before it (`reads.versions`)."""
    return agent_versions(services.store, load_visible(services, login, slug, viewer))


@router.get("/agents/{login}/{slug}/versions/check")
def get_version_check(login: str, slug: str,
                      version: str = Query(..., pattern=VERSION_PATTERN),
                      against: str | None = Query(None, pattern=VERSION_PATTERN),
                      min_runs: int = Query(MIN_SAMPLE, ge=MIN_SAMPLE, le=1_000_000),
                      viewer: Viewer = Depends(current_viewer),
                      services: Services = Depends(services_of)) -> dict[str, Any]:
    """A version against its predecessor (or `against`) as `bench check` gates on it
    (`reads.versions.check_version`): whoever may see the agent may ask."""
    return check_version(services.store, load_visible(services, login, slug, viewer), version,
                         against, min_runs)


@router.get("/agents/{login}/{slug}/analytics")
def get_analytics(login: str, slug: str, span: str | None = Query(None, alias="range"),
                  version: str | None = None, tag: str | None = None,
                  viewer: Viewer = Depends(current_viewer),
                  services: Services = Depends(services_of)) -> dict[str, Any]:
    """Each period's numbers for a range, by version or tag (`reads.analytics`)."""
    agent = load_visible(services, login, slug, viewer)
    return analytics(services.store, agent, selection(agent, viewer, span, version, tag), viewer)


@router.get("/agents/{login}/{slug}/events")
def get_events(login: str, slug: str, limit: int = Query(100, ge=1, le=1000),
               viewer: Viewer = Depends(current_viewer),
               services: Services = Depends(services_of)) -> dict[str, Any]:
    return tasks.recent_events(services.store, agent_ref(login, slug), viewer, limit)


@router.get("/agents/{login}/{slug}/tasks")
def get_tasks(login: str, slug: str, status: str | None = None, parent: str | None = None,
              cursor: str | None = None, limit: int = Query(50, ge=1, le=200),
              viewer: Viewer = Depends(current_viewer),
              services: Services = Depends(services_of)) -> dict[str, Any]:
    return tasks.tasks_page(services.store, agent_ref(login, slug), viewer, parent=parent,
                            status=status, limit=limit, cursor=cursor)


@router.get("/agents/{login}/{slug}/tasks/{task_id}")
async def get_task(login: str, slug: str, task_id: str,
                   viewer: Viewer = Depends(current_viewer),
                   services: Services = Depends(services_of)) -> dict[str, Any]:
    """A task with all its subtasks' ids and events: a heavy read (`heavy_reads`)."""
    return await heavy_read(services.settings, tasks.task_detail, services.store,
                            agent_ref(login, slug), viewer, task_id)


@router.patch("/agents/{login}/{slug}")
async def patch_agent(login: str, slug: str, patch: AgentSettingsPatch,
                      key: KeyRecord = Depends(require_key),
                      services: Services = Depends(services_of)) -> dict[str, Any]:
    agent = await run_in_threadpool(change_settings_with_key, services.store, key,
                                    agent_ref(login, slug), patch.model_dump(exclude_none=True))
    await live_grants.settings_changed(services.live, agent)
    return agent_detail(services.store, agent, Viewer.of_key(key))
