"""Feedback from people on a run: `POST /api/agents/{login}/{slug}/runs/{run}/feedback` (the
owner's browser session, an owner key or the agent's own key: the SDK's `agent.feedback`), and
the run page's form, `POST /dashboard/agents/{slug}/runs/{run}/feedback` (the signed-in owner,
without JavaScript), both through `evals.feedback.record_feedback`.

A session's JSON request carries the page's CSRF token in `X-CSRF-Token`, as every browser
request that changes something does (`browser.check_csrf`); a key needs none. Bad input is a
400 naming the field, before anything is written.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal
from urllib.parse import quote

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from starlette.concurrency import run_in_threadpool

from ..accounts import csrf
from ..domain.errors import BadRequest, Unauthorized
from ..domain.feedback import LABEL_PATTERN, MAX_COMMENT_CHARS, Feedback
from ..domain.field_limits import MAX_ID_CHARS, id_allowed
from ..domain.privacy import Sight, Viewer, feedback_view
from ..evals.feedback import record_feedback
from ..ingest.wire import validation_detail
from ..runtime.adapters import Services
from . import services_of
from .api import agent_ref
from .browser import NO_STORE, AccountRoute, account_session, check_csrf, form_fields
from .deps import MISSING_KEY, authenticate_sender, presented_key, read_body
from .session_cookie import session_of

api_router = APIRouter(prefix="/api")
form_router = APIRouter(prefix="/dashboard", route_class=AccountRoute)

BODY_LIMIT = 16 * 1024
"""A comment of `MAX_COMMENT_CHARS` and the rest, with room to spare."""
OWN_SIGHT = Sight(owner=True, inputs=True, outputs=True)


class FeedbackBody(BaseModel):
    """A person's verdict on a run: `thumbs` ("up" or "down") or a `score` from 0 to 1, not
    both; a short `label` (letters, digits, ` ._:-`, up to 64) and a `comment` if they like.
    `feedback_id` (up to 128 characters, no '/') makes a resend keep one; without it each
    request is a new feedback."""

    model_config = ConfigDict(extra="forbid")

    feedback_id: str | None = Field(None, max_length=MAX_ID_CHARS)
    score: float | None = Field(None, ge=0, le=1, allow_inf_nan=False)
    thumbs: Literal["up", "down"] | None = None
    label: str | None = Field(None, pattern=LABEL_PATTERN)
    comment: str | None = Field(None, max_length=MAX_COMMENT_CHARS)

    @model_validator(mode="after")
    def _one_verdict(self) -> FeedbackBody:
        if (self.score is None) == (self.thumbs is None):
            raise ValueError("give either score (0 to 1) or thumbs (up or down)")
        if self.feedback_id is not None and not id_allowed(self.feedback_id):
            raise ValueError("feedback_id: ids are 1 to 128 characters, none of them '/' or a "
                             "control character")
        return self


class FeedbackView(BaseModel):
    """One feedback as its viewer may see it: the comment is content ("[hidden by owner]"
    where the agent hides content from this viewer)."""

    feedback_id: str
    kind: Literal["thumbs", "score"]
    score: float
    thumbs: Literal["up", "down"] | None
    label: str | None
    comment: str | None
    comment_hidden: bool
    source: Literal["owner", "agent"]
    created_at: str


class RunFeedback(BaseModel):
    """A run's feedback from people (the first 100 by id, oldest first) and what it adds up
    to."""

    count: int
    mean_score: float | None
    up: int
    down: int
    items: list[FeedbackView]


class FeedbackAnswer(BaseModel):
    """`POST .../feedback`: the feedback kept, and whether this request kept it."""

    feedback: FeedbackView
    created: bool


def parse_body(raw: bytes | dict[str, Any]) -> FeedbackBody:
    """The request's body as a `FeedbackBody`; a 400 naming what is wrong otherwise."""
    try:
        if isinstance(raw, bytes):
            return FeedbackBody.model_validate_json(raw)
        return FeedbackBody.model_validate(raw)
    except ValidationError as exc:
        detail = [{**d, "loc": ["body", *d["loc"]]} for d in validation_detail(exc)]
        if any(d["type"] == "json_invalid" for d in detail):
            raise BadRequest("body is not valid JSON", detail) from exc
        raise BadRequest("invalid feedback: " + "; ".join(
            f"{'.'.join(str(p) for p in d['loc'][1:]) or 'body'}: {d['msg']}" for d in detail),
            detail) from exc


def _record(services: Services, login: str, slug: str, viewer: Viewer, run: str,
            body: FeedbackBody) -> tuple[Feedback, bool]:
    return record_feedback(services.store, agent_ref(login, slug), viewer, run,
                           **body.model_dump())


async def _sender(request: Request, services: Services) -> Viewer:
    """Who sends: a key (counted as the SDK's other requests are), else the browser session,
    whose request must carry the page's CSRF token."""
    raw = presented_key(request)
    if raw is not None:
        return Viewer.of_key(await run_in_threadpool(authenticate_sender, services, raw))
    session = await session_of(request, services)
    if session is None:
        raise Unauthorized(MISSING_KEY)
    await check_csrf(request, services, {})
    return Viewer(login=session.login)


@api_router.post("/agents/{login}/{slug}/runs/{run}/feedback", status_code=201,
                 response_class=JSONResponse,
                 responses={201: {"model": FeedbackAnswer},
                            200: {"model": FeedbackAnswer,
                                  "description": "sent before under this feedback_id: kept "
                                                 "as it was"}})
async def post_feedback(request: Request, login: str, slug: str, run: str,
                        services: Services = Depends(services_of)) -> Response:
    """Feedback on a run: 201 with it, or 200 with the one kept before under its
    `feedback_id` (unchanged). 404 for a run (or agent) the sender does not own."""
    viewer = await _sender(request, services)
    body = parse_body(await read_body(request, BODY_LIMIT))
    kept, new = await run_in_threadpool(_record, services, login, slug, viewer, run, body)
    return JSONResponse({"feedback": feedback_view(kept, OWN_SIGHT), "created": new},
                        status_code=201 if new else 200)


@form_router.post("/agents/{slug}/runs/{run}/feedback")
async def post_feedback_form(request: Request, slug: str, run: str,
                        services: Services = Depends(services_of)) -> Response:
    """The run page's form: a thumbs button, or a score, with a label and a comment; back to
    the run's page, at its feedback."""
    session = await account_session(request, services)
    fields = await form_fields(request)
    await check_csrf(request, services, fields)
    given: dict[str, Any] = {name: fields[name].strip() for name in
                             ("feedback_id", "label", "comment", "thumbs")
                             if fields.get(name, "").strip()}
    if "thumbs" not in given and fields.get("score", "").strip():
        given["score"] = fields["score"].strip()
    body = parse_body(given)
    await run_in_threadpool(_record, services, session.login, slug, Viewer(session.login), run,
                            body)
    target = f"/u/{quote(session.login)}/{quote(slug)}/runs/{quote(run, safe='')}#feedback"
    return RedirectResponse(target, status_code=303, headers=NO_STORE)


def annotation_form(request: Request, services: Services, viewer: Viewer, login: str
                    ) -> dict[str, str] | None:
    """The run page's feedback form, for the owner of the agent's account signed in (a
    sandbox session or a key has no form): its CSRF token, and a fresh feedback id, so a form
    sent twice keeps one. None for everyone else. Sync: the page is drawn in a worker thread,
    after `current_viewer` looked the session up."""
    session = getattr(request.state, "session", None)
    if not viewer.owns_account(login) or session is None or session.sandbox \
            or session.login != login:
        return None
    return {"csrf": csrf.token(services.secrets.session_key(), session.session_id),
            "feedback_id": uuid.uuid4().hex}
