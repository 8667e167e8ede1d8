"""`/simple/`: this server's own SDK as a package index (`reads.sdk_index`), for
`pip install --index-url <bench>/simple/ bench-observe` and `--extra-index-url`."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, RedirectResponse, Response

from ..domain.errors import NotFound
from ..reads import sdk_index
from ..runtime.adapters import Services
from . import services_of

router = APIRouter()
CACHE = "public, max-age=300"
NO_WHEEL = ("this Bench runs without its SDK wheel, which installing it builds (`pip install .`); "
            "in a checkout build it with `make sdk-wheel` (sdk/ → layers/core/bench_core/sdk_dist/), "
            "or point BENCH_SDK_DIST at a directory holding it")


def _answer(body: str, media_type: str) -> Response:
    return Response(body, media_type=media_type, headers={"Cache-Control": CACHE,
                                                          "Vary": "Accept"})


@router.get("/simple", include_in_schema=False)
def simple_redirect() -> RedirectResponse:
    return RedirectResponse("/simple/", status_code=301)


@router.get("/simple/")
def simple_root(request: Request) -> Response:
    return _answer(*sdk_index.root_page(sdk_index.wants_json(request.headers.get("accept"))))


@router.get("/simple/{project}/")
def simple_project(project: str, request: Request,
                   services: Services = Depends(services_of)) -> Response:
    if sdk_index.normalise(project) != sdk_index.PROJECT:
        raise NotFound(f"this index serves only {sdk_index.PROJECT}")
    if project != sdk_index.PROJECT:
        return RedirectResponse(f"/simple/{sdk_index.PROJECT}/", status_code=301)
    found = sdk_index.distributions(services.settings.sdk_dist_dir)
    if not found:
        raise NotFound(NO_WHEEL)
    return _answer(*sdk_index.project_page(found, sdk_index.wants_json(
        request.headers.get("accept"))))


@router.get("/simple/{project}")
def simple_project_redirect(project: str) -> RedirectResponse:
    return RedirectResponse(f"/simple/{project}/", status_code=301)


@router.get("/simple/{project}/{filename}")
def simple_file(project: str, filename: str,
                services: Services = Depends(services_of)) -> FileResponse:
    found = (sdk_index.distribution(services.settings.sdk_dist_dir, filename)
             if sdk_index.normalise(project) == sdk_index.PROJECT else None)
    if found is None:
        raise NotFound("no such file in this index")
    return FileResponse(found.path, media_type="application/octet-stream", filename=filename,
                        headers={"Cache-Control": "public, max-age=86400, immutable"})
