"""An export that outlasts an API answer, made by a function of its own (AWS).

API Gateway gives an answer 30 seconds at most, and a runs export of 100,000 runs with their
spans takes longer to read. So where exports go to a file drop, the API function makes an
export for `INLINE_S` only; if it is not done by then it stops (abandoning its upload), marks
the job started on the drop and hands it to the export function (`ports/files.py`
`ExportHandOff`, Lambda's asynchronous invoke), which makes the whole export from the start
with up to 15 minutes to do it, and answers 202 with where to look (`poll_path`). The look
(`job_state`) finds the file (a link to it), a mark that the job failed, or only the start
mark (still under way). Why start again rather than carry on: the export is a generator over
a store read, which cannot be handed to another process half-read, and what the API function
read in its 20 seconds is a small part of an export that needs the hand-off.

A job's files are named by who asked (a digest of the viewer, so one viewer cannot look at
another's job), its random id and the file name, under the drop's private prefix; the drop
forgets them after a day. The export function trusts its payload: only the API function's role
may invoke it.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ..domain.models import AgentRef
from ..domain.privacy import Viewer
from ..ports.files import FileDrop
from . import export
from .export import MEDIA_TYPES, ExportReads, Format

INLINE_S = 20.0
"""How long the API function makes an export before handing it off: the HTTP API waits 30 s,
and a hand-off then takes a write and an Invoke."""
POLL_AFTER_S = 5
"""What a 202 asks the caller to wait before looking again (`Retry-After`)."""
State = Literal["ready", "failed", "preparing"]


class Overrun(Exception):
    """An export ran past its time in the API function."""


@dataclass(frozen=True)
class ExportJob:
    """What the export function needs to make an export as the API function would have."""

    agent: str
    """`login/slug`."""
    form: Format
    filters: dict[str, Any]
    spans: bool
    limit: int
    login: str | None = None
    """Who asked (`Viewer`): an owner sees what the privacy gate shows an owner."""
    agent_slug: str | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def ref(self) -> AgentRef:
        login, _, slug = self.agent.partition("/")
        return AgentRef(login, slug)

    @property
    def viewer(self) -> Viewer:
        return Viewer(self.login, self.agent_slug)

    def payload(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def of(cls, payload: dict[str, Any]) -> ExportJob:
        return cls(**payload)


def file_name(ref: AgentRef, form: Format) -> str:
    """What a download of the export is saved as."""
    return f"{ref.login}-{ref.slug}-runs.{form}"


def _folder(viewer: Viewer, job_id: str) -> str:
    who = hashlib.sha256(f"{viewer.login}\0{viewer.agent_slug}".encode()).hexdigest()[:16]
    return f"jobs/{who}/{job_id}/"


def _names(viewer: Viewer, ref: AgentRef, job_id: str, form: Format) -> tuple[str, str, str]:
    """The job's file, its start mark and its failure mark."""
    folder = _folder(viewer, job_id)
    return folder + file_name(ref, form), folder + "started", folder + "failed"


def within(chunks: Iterator[bytes], seconds: float,
           clock: Callable[[], float] = time.monotonic) -> Iterator[bytes]:
    """`chunks` until `seconds` have passed, then `Overrun`."""
    deadline = clock() + seconds
    for chunk in chunks:
        if clock() > deadline:
            raise Overrun
        yield chunk


def mark_started(drop: FileDrop, job: ExportJob) -> None:
    _, started, _ = _names(job.viewer, job.ref, job.id, job.form)
    drop.put(started, iter([b""]), "text/plain")


def run_job(store: ExportReads, drop: FileDrop, job: ExportJob, seconds: float) -> str:
    """Make the whole export to the drop within `seconds` (what the export function has left,
    less the time a mark takes); a failure, running out of time included, leaves its mark (and
    is raised, for the function's log), so a look never waits on an export that was cut off."""
    name, _, failed = _names(job.viewer, job.ref, job.id, job.form)
    try:
        records = export.export(store, job.ref, job.viewer, job.filters, spans=job.spans,
                                limit=job.limit)
        return drop.put(name, within(export.encoded(records, job.form), seconds),
                        MEDIA_TYPES[job.form])
    except Exception:
        drop.put(failed, iter([b""]), "text/plain")
        raise


def job_state(drop: FileDrop, viewer: Viewer, ref: AgentRef, job_id: str, form: Format
              ) -> tuple[State, str | None] | None:
    """Where the job `job_id` of `viewer` stands: ready (with a link), failed, or still
    preparing; None if there is no such job (or not this viewer's, or forgotten)."""
    name, started, failed = _names(viewer, ref, job_id, form)
    link = drop.link(name)
    if link is not None:
        return "ready", link
    if drop.link(failed) is not None:
        return "failed", None
    if drop.link(started) is not None:
        return "preparing", None
    return None


def poll_path(job: ExportJob) -> str:
    return f"/api/agents/{job.agent}/exports/{job.id}.{job.form}"
