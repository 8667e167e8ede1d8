"""The judge's and describer's prompts, read from `benchmarks/eval-prompts.md` at run time.

The file is the prompts' only home (it is open source and documents itself); this module finds
it, splits it into versioned prompts and fills in placeholders. A prompt's recorded version is
`<kind>-v<N>#<sha256[:8]>` of its text, so an unversioned edit is still visible in the results.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..data_files import benchmarks_data

PROMPTS_ENV = "BENCH_EVAL_PROMPTS"
FILE_NAME = "eval-prompts.md"
_PROMPT = re.compile(r"^## (?P<kind>[a-z]+)-v(?P<n>\d+)\s*$", re.M)
_SECTION = re.compile(r"^### (?P<name>[a-z]+)\s*\n+```text\n(?P<body>.*?)\n```\s*$", re.M | re.S)
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


class PromptError(Exception):
    """The prompts file is missing, or a prompt lacks a section or a value."""


@dataclass(frozen=True)
class Prompt:
    kind: str
    number: int
    sections: dict[str, str]

    @property
    def version(self) -> str:
        digest = hashlib.sha256("\0".join(f"{k}\0{v}" for k, v in sorted(self.sections.items()))
                                .encode()).hexdigest()[:8]
        return f"{self.kind}-v{self.number}#{digest}"

    def render(self, section: str, **values: object) -> str:
        """`section` with every `{{name}}` replaced; a placeholder without a value is an error
        (a silently empty field would change what the judge sees)."""
        if section not in self.sections:
            raise PromptError(f"prompt {self.kind}-v{self.number} has no '### {section}' section")

        def fill(match: re.Match[str]) -> str:
            if match.group(1) not in values:
                raise PromptError(f"no value for {{{{{match.group(1)}}}}} in {self.kind}-v{self.number}")
            return str(values[match.group(1)])

        return _PLACEHOLDER.sub(fill, self.sections[section])


def prompts_path() -> Path:
    """`$BENCH_EVAL_PROMPTS`, else the repository's `benchmarks/eval-prompts.md` (one machine,
    tests), else the copy the layer or wheel build put beside this module."""
    if os.environ.get(PROMPTS_ENV):
        return Path(os.environ[PROMPTS_ENV])
    path = benchmarks_data(FILE_NAME, f"evals/{FILE_NAME}")
    if not path.is_file():
        raise PromptError(f"{FILE_NAME} not found (in the repository's benchmarks/ or at {path}); "
                          f"set {PROMPTS_ENV}")
    return path


def load_prompt(kind: str, pinned: str | None = None, path: Path | None = None) -> Prompt:
    """The newest `kind` prompt in the file (or the `pinned` one, e.g. "judge-v1"). Re-read
    whenever the file changes, so an edited prompt applies without a restart."""
    path = path or prompts_path()
    prompts = [p for p in _parse(str(path), path.stat().st_mtime_ns) if p.kind == kind]
    if pinned:
        prompts = [p for p in prompts if f"{p.kind}-v{p.number}" == pinned]
    if not prompts:
        raise PromptError(f"no {pinned or kind} prompt in {path}")
    return max(prompts, key=lambda p: p.number)


@lru_cache(maxsize=8)
def _parse(path: str, mtime_ns: int) -> tuple[Prompt, ...]:
    text = Path(path).read_text(encoding="utf-8")
    heads = list(_PROMPT.finditer(text))
    prompts = []
    for head, nxt in zip(heads, [*heads[1:], None], strict=True):
        body = text[head.end(): nxt.start() if nxt else len(text)]
        body = body.split("\n## ", 1)[0]
        sections = {m["name"]: m["body"] for m in _SECTION.finditer(body)}
        if sections:
            prompts.append(Prompt(head["kind"], int(head["n"]), sections))
    return tuple(prompts)
