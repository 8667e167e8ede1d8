"""One-line descriptions of failure clusters: by the LLM when there is one, else by their terms.

The offline describer, `terms-v1`, names a cluster by the words whose share of the cluster's
texts most exceeds their share of the other clusters' (documented in benchmarks/eval-prompts.md).
The terms are computed either way and given to the model as a hint.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ..domain.task_text import clip
from ..evals.prompts import load_prompt
from ..log import logger
from ..ports.llm import LLM, LLMError

TERMS_LABEL = "terms-v1"
MAX_LABEL_CHARS = 120
EXAMPLE_CHARS = 600
_TOKEN = re.compile(r"[a-z][a-z0-9_]{2,}|\b\d{3}\b")
_STOP = frozenset((
    "the", "and", "for", "with", "that", "this", "from", "was", "were", "are", "not", "but", "you",
    "your", "have", "has", "had", "into", "out", "over", "after", "before", "when", "then", "than",
    "there", "their", "they", "them", "its", "also", "all", "any", "can", "could", "would",
    "should", "will", "just", "only", "more", "most", "some", "such", "very", "what", "which",
    "who", "whom", "why", "how", "our", "ours", "about", "none", "null", "true", "false"))


@dataclass(frozen=True)
class Description:
    label: str
    describer: str
    prompt_version: str | None = None


def words(text: str) -> dict[str, int]:
    """A text's distinct words, each with its first position (error messages lead with the
    words that say most: "TimeoutError: request to ...")."""
    found: dict[str, int] = {}
    for position, word in enumerate(_TOKEN.findall(text.lower())):
        if word not in _STOP:
            found.setdefault(word, position)
    return found


def top_terms(members: list[dict[str, int]], others: list[dict[str, int]], n: int = 4) -> list[str]:
    """The words most over-represented in `members` (each text's `words`) versus `others`;
    ties go to the more frequent, then to the word that comes earlier in its texts."""
    inside = Counter(w for ws in members for w in ws)
    outside = Counter(w for ws in others for w in ws)
    first: Counter[str] = Counter()
    for ws in members:
        first.update(ws)
    size_in, size_out = max(1, len(members)), max(1, len(others))

    def rank(word: str) -> tuple[float, int, float]:
        return (inside[word] / size_in - outside[word] / size_out, inside[word],
                -first[word] / inside[word])

    ranked = sorted(inside, key=rank, reverse=True)
    return [w for w in ranked if rank(w)[0] > 0][:n] or ranked[:n]


def describe(llm: LLM | None, examples: list[str], terms: list[str], count: int,
             pinned_prompt: str | None = None) -> Description:
    """The model's one line for a cluster, or its terms when there is no model or no answer."""
    by_terms = Description(" · ".join(terms) or "(no distinguishing words)", TERMS_LABEL)
    if llm is None:
        return by_terms
    prompt = load_prompt("describe", pinned_prompt)
    shown = "\n\n".join(f"{i}. {clip(text, EXAMPLE_CHARS)}" for i, text in enumerate(examples, 1))
    try:
        answer = llm.complete(prompt.render("system"), [{"role": "user", "content": prompt.render(
            "user", terms=", ".join(terms) or "(none)", count=count, examples=shown)}], max_tokens=60)
    except LLMError as exc:
        logger.warning("cluster describer unavailable; using terms", extra={"error": str(exc)})
        return by_terms
    line = next((s.strip().strip("\"'`").strip() for s in answer.text.splitlines() if s.strip()), "")
    if not line:
        return by_terms
    return Description(line[:MAX_LABEL_CHARS], llm.label, prompt.version)
