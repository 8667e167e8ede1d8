"""The export function (`functions/export`): an export the API function handed off because it
outlasts an API answer (`reads/export_jobs.py`), made whole to the export bucket."""

from __future__ import annotations

from typing import Any

from ..reads import export_jobs
from .handler import ServicesHandler

MARGIN_S = 30.0
"""What the function keeps of its time to abandon the upload and mark the job failed."""


class ExportJobs(ServicesHandler):
    def __call__(self, event: dict[str, Any], context: Any) -> None:
        drop = self.services.files
        if drop is None:
            raise RuntimeError("BENCH_EXPORT_BUCKET is not set: there is nowhere to write")
        seconds = context.get_remaining_time_in_millis() / 1000 - MARGIN_S
        export_jobs.run_job(self.services.store, drop, export_jobs.ExportJob.of(event), seconds)
