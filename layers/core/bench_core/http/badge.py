"""`GET /badge/{login}/{slug}.svg` in a FastAPI app: the endpoint of `bench_core.badge_app`,
which the badge Lambda serves without FastAPI."""

from __future__ import annotations

from fastapi import APIRouter

from ..badge_app import PATH, badge

router = APIRouter()
router.add_api_route(PATH, badge, methods=["GET"], include_in_schema=False)
