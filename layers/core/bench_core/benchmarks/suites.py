"""Benchmark suites: the versioned definitions in `benchmarks/<name>-v<N>/`, loaded and hashed.

A suite is a folder holding `manifest.json` (name, version, description, grading) and
`cases.json` (the cases). The server reads the copy packaged beside this module (a Lambda
package holds only its own folders; tests/unit/test_benchmark_suites.py keeps it identical to
the repository's `benchmarks/`). A suite's identity is its content hash: the SHA-256 of its
canonical JSON, which the SDK computes the same way with the standard library, so a client and
the server can tell whether they hold the same suite.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from ..data_files import benchmarks_data
from ..domain.errors import NotFound

SUITES_DIR = benchmarks_data("", "benchmarks/suites")
"""Each suite is a folder holding `manifest.json` (the repository's `benchmarks/`, or the copy
the build packaged)."""
Id = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Grading(_Strict):
    judge_prompt: str
    """The LLM judge's prompt in eval-prompts.md (`grounding-v1`)."""
    offline_grader: str
    """The labelled rule set used when no model is configured (`grounding-heuristic-v1`)."""
    pass_threshold: Annotated[float, Field(ge=0, le=1)]
    repeats: Annotated[int, Field(ge=1, le=10)]


class Manifest(_Strict):
    name: Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$")]
    version: Annotated[int, Field(ge=1)]
    description: str
    instructions: str
    """What the agent is told with every case (how to answer and cite)."""
    grading: Grading

    @property
    def suite_id(self) -> str:
        return f"{self.name}-v{self.version}"


class Source(_Strict):
    id: Id
    title: str
    url: str
    text: str


class CaseInput(_Strict):
    question: str
    sources: list[Source] = Field(min_length=1)


class Fact(_Strict):
    id: Id
    claim: str
    """The fact in words (what an LLM judge checks)."""
    terms: list[list[str]] = Field(min_length=1)
    """For the offline grader: every group must occur in the answer, any one term of a group."""
    sources: list[Id] = Field(min_length=1)
    """Source ids of which the answer must cite at least one for this fact."""


class Case(_Strict):
    id: Id
    input: CaseInput
    facts: list[Fact] = Field(min_length=1)
    contradictions: list[str] = []
    """Phrases that state the opposite of a source; an answer containing one contradicts it."""


class Suite(_Strict):
    manifest: Manifest
    cases: list[Case] = Field(min_length=1)

    @property
    def suite_id(self) -> str:
        return self.manifest.suite_id

    def case(self, case_id: str) -> Case | None:
        return next((c for c in self.cases if c.id == case_id), None)

    def agent_input(self, case: Case) -> dict[str, Any]:
        """What the agent is called with for `case` (and what the evidence records)."""
        return {"instructions": self.manifest.instructions, **case.input.model_dump()}


def canonical_json(value: Any) -> bytes:
    """The one byte form hashes are taken of: sorted keys, no spaces, UTF-8 (stdlib `json`
    gives the same bytes in the SDK)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode()


def value_hash(value: Any) -> str:
    """`sha256:<hex>` of a JSON value's canonical form (outputs, suites)."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


def suite_document(folder: Path) -> dict[str, Any]:
    """A suite folder as the JSON document that is hashed, served and submitted against."""
    return {"manifest": json.loads((folder / "manifest.json").read_text(encoding="utf-8")),
            "cases": json.loads((folder / "cases.json").read_text(encoding="utf-8"))}


@dataclass(frozen=True)
class PackagedSuite:
    suite: Suite
    content_hash: str
    document: dict[str, Any]
    """The files as read: what is hashed and what `GET /api/benchmarks/{suite}` serves."""


@cache
def packaged_suites() -> dict[str, PackagedSuite]:
    """Every suite this server serves, by id."""
    found = {}
    for folder in sorted(p for p in SUITES_DIR.iterdir() if (p / "manifest.json").is_file()):
        document = suite_document(folder)
        suite = Suite.model_validate(document)
        if suite.suite_id != folder.name:
            raise ValueError(f"suite folder {folder.name} holds {suite.suite_id}")
        found[suite.suite_id] = PackagedSuite(suite, value_hash(document), document)
    return found


def load_suite(suite_id: str) -> PackagedSuite:
    """The suite `suite_id` (`<name>-v<N>`); 404 for one this server does not have."""
    try:
        return packaged_suites()[suite_id]
    except KeyError:
        raise NotFound(f"unknown benchmark suite {suite_id!r}",
                       [{"loc": ["path", "suite"], "msg": "no such suite on this server"}]) from None
