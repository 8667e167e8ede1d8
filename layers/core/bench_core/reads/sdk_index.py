"""The server's own SDK as a package index (`/simple/`, PEP 503, with PEP 691's JSON form), so
`pip install --index-url <this Bench>/simple/ bench-observe` gets the SDK that matches this
server, not whatever the public registry holds under that name.

The wheel is built from `sdk/` whenever bench_core is packaged, never committed, and sits in
`Settings.sdk_dist_dir` (bench_core/sdk_dist/ unless BENCH_SDK_DIST says otherwise), so a server
serves its SDK however it was installed and started: `setup.py` builds it into the server's own
wheel (`pip install .`, an sdist, a container) and, for an editable install, into the checkout,
where `make sdk-wheel` (run by `make run`) rebuilds it when sdk/ changes; `sam build` builds it
into the core layer (layers/core/Makefile). Built at packaging time rather than at first start:
an installed server holds no sdk/ to build from, Lambda's file system is read-only, and each
packaging checks it (tests/aws/test_wheel_data.py, scripts/package_check.py). Only a server run
from a bare source tree has none; it answers 404 saying how to build it. Hashes are computed
once per file version (name, size, mtime).
"""

from __future__ import annotations

import functools
import hashlib
import html
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT = "bench-observe"
REQUIRES_PYTHON = ">=3.9"
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
HTML_TYPE = "application/vnd.pypi.simple.v1+html"
_WHEEL = re.compile(r"^bench_observe-[A-Za-z0-9_.!+]+-[^/]+\.whl$")


def install_command(base: str) -> str:
    """The install line every page shows: this server's index only, so the SDK that matches
    it, never the public registry's older `bench-observe`."""
    return f"pip install --index-url {base.rstrip('/')}/simple/ {PROJECT}"


def normalise(name: str) -> str:
    """PEP 503's normalised project name: `Bench_Observe` and `bench.observe` are `bench-observe`."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Distribution:
    filename: str
    sha256: str
    path: Path


def distributions(directory: Path | None) -> list[Distribution]:
    """The SDK wheels in `directory`, by file name; none when it is missing."""
    if directory is None or not directory.is_dir():
        return []
    found = []
    for path in sorted(directory.iterdir()):
        if _WHEEL.match(path.name) and path.is_file():
            stat = path.stat()
            found.append(Distribution(path.name, _sha256(path, stat.st_size, stat.st_mtime_ns),
                                      path))
    return found


@functools.lru_cache(maxsize=32)
def _sha256(path: Path, size: int, mtime_ns: int) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def distribution(directory: Path | None, filename: str) -> Distribution | None:
    return next((d for d in distributions(directory) if d.filename == filename), None)


def wants_json(accept: str | None) -> bool:
    """PEP 691 content negotiation: JSON when the client asks for it and ranks it at least as
    high as either HTML form; HTML otherwise (browsers, old pip, `*/*`)."""
    quality: dict[str, float] = {}
    for part in (accept or "").split(","):
        media, *params = (p.strip() for p in part.split(";"))
        q = next((v for k, _, v in (p.partition("=") for p in params) if k == "q"), "1")
        try:
            quality[media.lower()] = float(q)
        except ValueError:
            quality[media.lower()] = 0.0
    json_q = quality.get(JSON_TYPE, 0.0)
    return json_q > 0 and json_q >= max(quality.get(HTML_TYPE, 0.0), quality.get("text/html", 0.0))


def root_page(as_json: bool) -> tuple[str, str]:
    """The index of projects (one): (body, media type)."""
    if as_json:
        return _json({"meta": {"api-version": "1.0"}, "projects": [{"name": PROJECT}]}), JSON_TYPE
    return (f"<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" content=\"1.0\">"
            f"<title>Simple index</title></head><body>\n<a href=\"{PROJECT}/\">{PROJECT}</a>\n"
            f"</body></html>\n", HTML_TYPE)


def project_page(found: list[Distribution], as_json: bool) -> tuple[str, str]:
    """The files of `bench-observe`, each with its sha256: (body, media type)."""
    if as_json:
        files: list[dict[str, Any]] = [
            {"filename": d.filename, "url": d.filename, "hashes": {"sha256": d.sha256},
             "requires-python": REQUIRES_PYTHON} for d in found]
        return _json({"meta": {"api-version": "1.0"}, "name": PROJECT, "files": files}), JSON_TYPE
    links = "\n".join(
        f'<a href="{html.escape(d.filename)}#sha256={d.sha256}" '
        f'data-requires-python="{html.escape(REQUIRES_PYTHON)}">{html.escape(d.filename)}</a><br>'
        for d in found)
    return (f"<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" content=\"1.0\">"
            f"<title>Links for {PROJECT}</title></head><body>\n<h1>Links for {PROJECT}</h1>\n"
            f"{links}\n</body></html>\n", HTML_TYPE)


def _json(value: Any) -> str:
    return json.dumps(value)
