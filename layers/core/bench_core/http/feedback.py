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
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import quote

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from starlette.concurrency import run_in_threadpool

from ..accounts import csrf
from ..domain.errors import BadRequest, Unauthorized
from ..domain.feedback import LABEL_PATTERN, MAX_COMMENT_CHARS, MAX_LABELS, Feedback
from ..domain.field_limits import MAX_ID_CHARS, id_allowed
from ..domain.privacy import Sight, Viewer, feedback_view
from ..evals.feedback import record_feedback, set_label_set
from ..ingest.wire import validation_detail
from ..reads.agents import visible
from ..reads.feedback import label_set
from ..runtime.adapters import Services
from . import services_of
from .api import agent_ref
from .browser import NO_STORE, AccountRoute, account_session, check_csrf, form_fields
from .deps import MISSING_KEY, authenticate_sender, current_viewer, presented_key, read_body
from .session_cookie import session_of

api_router = APIRouter(prefix="/api")
form_router = APIRouter(prefix="/dashboard", route_class=AccountRoute)

BODY_LIMIT = 16 * 1024
"""A comment of `MAX_COMMENT_CHARS` and the rest, with room to spare."""
OWN_SIGHT = Sight(owner=True, inputs=True, outputs=True)
Body = TypeVar("Body", bound=BaseModel)


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


class LabelSetBody(BaseModel):
    """The agent's label set: up to 50 short names (as a feedback's `label`), in the order the
    run page and the annotation queue offer them; `[]` clears it (any label goes)."""

    model_config = ConfigDict(extra="forbid")

    labels: list[Annotated[str, Field(pattern=LABEL_PATTERN)]] = Field(max_length=MAX_LABELS)


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


def _parsed(model: type[Body], raw: bytes | dict[str, Any], what: str) -> Body:
    """The request's body as `model`; a 400 naming what is wrong otherwise."""
    try:
        if isinstance(raw, bytes):
            return model.model_validate_json(raw)
        return model.model_validate(raw)
    except ValidationError as exc:
        detail = [{**d, "loc": ["body", *d["loc"]]} for d in validation_detail(exc)]
        if any(d["type"] == "json_invalid" for d in detail):
            raise BadRequest("body is not valid JSON", detail) from exc
        raise BadRequest(f"invalid {what}: " + "; ".join(
            f"{'.'.join(str(p) for p in d['loc'][1:]) or 'body'}: {d['msg']}" for d in detail),
            detail) from exc


def parse_body(raw: bytes | dict[str, Any]) -> FeedbackBody:
    return _parsed(FeedbackBody, raw, "feedback")


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


@api_router.get("/agents/{login}/{slug}/labels")
def get_labels(login: str, slug: str, viewer: Viewer = Depends(current_viewer),
               services: Services = Depends(services_of)) -> dict[str, list[str]]:
    """The agent's label set (`[]`: none, any label goes), for whoever may see the agent."""
    agent = visible(services.store, agent_ref(login, slug), viewer)
    return {"labels": label_set(services.store, agent.ref)}


@api_router.put("/agents/{login}/{slug}/labels")
async def put_labels(request: Request, login: str, slug: str,
                     services: Services = Depends(services_of)) -> dict[str, list[str]]:
    """Replace the agent's label set (the owner's session with the page's CSRF token, or an
    owner key; 404 for anyone else, an agent key included); feedback labels are then checked
    against it (a 400 naming the label)."""
    viewer = await _sender(request, services)
    body = _parsed(LabelSetBody, await read_body(request, BODY_LIMIT), "label set")
    kept = await run_in_threadpool(set_label_set, services.store, agent_ref(login, slug),
                                   viewer, body.labels)
    return {"labels": kept}


@form_router.post("/agents/{slug}/labels")
async def post_labels_form(request: Request, slug: str,
                           services: Services = Depends(services_of)) -> Response:
    """The agent's dashboard page's form: labels one a line or comma-separated."""
    session = await account_session(request, services)
    fields = await form_fields(request)
    await check_csrf(request, services, fields)
    given = [part.strip() for part in fields.get("labels", "").replace("\n", ",").split(",")]
    body = _parsed(LabelSetBody, {"labels": [label for label in given if label]}, "label set")
    await run_in_threadpool(set_label_set, services.store, agent_ref(session.login, slug),
                            Viewer(session.login), body.labels)
    return RedirectResponse(f"/dashboard/agents/{quote(slug)}?saved=1#labels", status_code=303,
                            headers=NO_STORE)


def annotation_form(request: Request, services: Services, viewer: Viewer, login: str,
                    slug: str) -> dict[str, Any] | None:
    """The run page's feedback form, for the owner of the agent's account signed in (a
    sandbox session or a key has no form): its CSRF token, and a fresh feedback id, so a form
    sent twice keeps one; the agent's `labels` to choose from. None for everyone else. Sync:
    the page is drawn in a worker thread, after `current_viewer` looked the session up."""
    session = getattr(request.state, "session", None)
    if not viewer.owns_account(login) or session is None or session.sandbox \
            or session.login != login:
        return None
    return {"csrf": csrf.token(services.secrets.session_key(), session.session_id),
            "feedback_id": uuid.uuid4().hex,
            "labels": label_set(services.store, agent_ref(login, slug))}
