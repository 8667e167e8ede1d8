"""Two runs of one agent side by side. Pure: spans matched, rows in drawing order, what changed.

A span is matched by its path: the names from the root down to it, each with its place among
the siblings of that name (the second `search` under `plan` is `plan/search#2` in both runs),
so a run that repeats a step is matched step for step and one that does a step more shows
one added span. The roots are always matched. A matched span has changed when its status,
duration (`DURATION_SHARE` and `DURATION_MS`), headline cost, token counts or model differ, or,
where the viewer may see them, its input or output (`Shown`: compared by digest, as the
privacy gate lets the viewer see them, so what is hidden can neither show nor tell).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from .runs import Node

DURATION_SHARE = 0.2
"""A matched span's duration has changed when it differs by more than this share of the
longer one, and by at least `DURATION_MS`: timings jitter from run to run."""
DURATION_MS = 10.0
COST_EPSILON = 1e-9
"""Costs closer than this are the same (sums of floats)."""
AT_START = frozenset({"name", "input"})
"""What a span is given as it starts; the rest (status, duration, cost, tokens, model,
output) comes at its end, after the spans under it: a change there that a changed span
below it explains (a parent's numbers sum its children's) is no divergence of its own."""

Kind = Literal["same", "changed", "added", "removed"]
Key = tuple[str, int]


@dataclass(frozen=True)
class Shown:
    """A span's input and output as the viewer may see them: a digest to compare and a
    preview to show, each None where the privacy gate hides it."""

    input_digest: str | None = None
    output_digest: str | None = None
    input_preview: str | None = None
    output_preview: str | None = None


@dataclass(frozen=True)
class Facts:
    """What is compared of one span, every field public (the run page shows them)."""

    name: str | None
    status: str
    duration_ms: float | None
    cost_usd: float
    input_tokens: int | None
    output_tokens: int | None
    model: str | None

    @classmethod
    def of(cls, node: Node) -> Facts:
        task = node.task
        usage = task.evidence
        return cls(task.name, task.status, task.duration_ms,
                   float(task.cost_headline()["headline_cost_usd"] or 0.0),
                   usage.input_tokens if usage else None, usage.output_tokens if usage else None,
                   task.model)


@dataclass
class DiffRow:
    """One line of the diff: a span of run A, of run B, or of both (`kind`), at its depth,
    with what is compared of each (`facts_a`, `facts_b`)."""

    kind: Kind
    depth: int
    a: Node | None
    b: Node | None
    changes: tuple[str, ...] = ()
    shown_a: Shown = field(default_factory=Shown)
    shown_b: Shown = field(default_factory=Shown)
    facts_a: Facts | None = None
    facts_b: Facts | None = None

    @property
    def name(self) -> str | None:
        node = self.b if self.a is None else self.a
        return node.task.name if node is not None else None

    @property
    def duration_delta_ms(self) -> float | None:
        return _delta(self.a.task.duration_ms if self.a else None,
                      self.b.task.duration_ms if self.b else None)


@dataclass
class RunDiff:
    """Every row in drawing order (depth first, siblings by start, a span only in B after
    the matched sibling it follows in B), the first where the runs part
    (`first_divergence`), and counts by kind."""

    rows: list[DiffRow]
    first_divergence: int | None
    counts: dict[str, int]


def changes(fa: Facts, fb: Facts, shown_a: Shown, shown_b: Shown, *, root: bool = False
            ) -> tuple[str, ...]:
    """What differs between two matched spans, by the names the page shows."""
    found: list[str] = []
    if root and fa.name != fb.name:
        found.append("name")
    if fa.status != fb.status:
        found.append("status")
    if _duration_changed(fa.duration_ms, fb.duration_ms):
        found.append("duration")
    if abs(fa.cost_usd - fb.cost_usd) > COST_EPSILON:
        found.append("cost")
    if (fa.input_tokens, fa.output_tokens) != (fb.input_tokens, fb.output_tokens):
        found.append("tokens")
    if fa.model != fb.model:
        found.append("model")
    if shown_a.input_digest is not None and shown_b.input_digest is not None \
            and shown_a.input_digest != shown_b.input_digest:
        found.append("input")
    if shown_a.output_digest is not None and shown_b.output_digest is not None \
            and shown_a.output_digest != shown_b.output_digest:
        found.append("output")
    return tuple(found)


def _duration_changed(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return (a is None) != (b is None)
    gap = abs(a - b)
    return gap >= DURATION_MS and gap > DURATION_SHARE * max(a, b)


def _delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def keyed(children: list[Node]) -> list[tuple[Key, Node]]:
    """Children by their key: name and place among the earlier siblings of that name."""
    seen: dict[str, int] = {}
    out = []
    for child in children:
        name = child.task.name or ""
        seen[name] = seen.get(name, 0) + 1
        out.append(((name, seen[name]), child))
    return out


def merged(a_kids: list[Node], b_kids: list[Node]) -> list[tuple[Node | None, Node | None]]:
    """The children of two matched spans as pairs, in A's order, each span only in B placed
    after the matched sibling it follows in B (before them all if it follows none)."""
    a_keyed, b_keyed = keyed(a_kids), keyed(b_kids)
    in_a = {k for k, _ in a_keyed}
    in_b = dict(b_keyed)
    after: dict[Key | None, list[Node]] = {}
    anchor: Key | None = None
    for key, node in b_keyed:
        if key in in_a:
            anchor = key
        else:
            after.setdefault(anchor, []).append(node)
    pairs: list[tuple[Node | None, Node | None]] = [(None, n) for n in after.get(None, [])]
    for key, node in a_keyed:
        pairs.append((node, in_b.get(key)))
        pairs += [(None, n) for n in after.get(key, [])]
    return pairs


def diff(a: Node, b: Node, shown_a: Mapping[str, Shown], shown_b: Mapping[str, Shown]
         ) -> RunDiff:
    """The diff of two runs' trees (`domain.runs.build_tree`), their roots matched."""
    rows: list[DiffRow] = []
    stack: list[tuple[Node | None, Node | None, int]] = [(a, b, 0)]
    none = Shown()
    while stack:
        left, right, depth = stack.pop()
        sa = shown_a.get(left.task_id, none) if left else none
        sb = shown_b.get(right.task_id, none) if right else none
        fa: Facts | None
        fb: Facts | None
        if left is not None and right is not None:
            fa, fb = Facts.of(left), Facts.of(right)
            found = changes(fa, fb, sa, sb, root=depth == 0)
            kind: Kind = "changed" if found else "same"
            pairs = merged(left.children, right.children)
        elif left is not None:
            fa, fb = Facts.of(left), None
            kind, found, pairs = "removed", (), [(c, None) for c in left.children]
        else:
            assert right is not None
            fa, fb = None, Facts.of(right)
            kind, found, pairs = "added", (), [(None, c) for c in right.children]
        rows.append(DiffRow(kind, depth, left, right, found, sa, sb, fa, fb))
        stack.extend((x, y, depth + 1) for x, y in reversed(pairs))
    first = first_divergence(rows)
    counts = {kind: sum(r.kind == kind for r in rows)
              for kind in ("same", "changed", "added", "removed")}
    return RunDiff(rows, first, counts)


def first_divergence(rows: list[DiffRow]) -> int | None:
    """The first row, in drawing order, where the runs part: added, removed, changed with no
    changed span below it, or changed in what it started with (`AT_START`): so the step that
    differs is found, not the root whose end follows from it."""
    below = [False] * len(rows)
    later: list[tuple[int, bool]] = []  # (depth, whether it or a span under it differs)
    for i in reversed(range(len(rows))):
        depth = rows[i].depth
        while later and later[-1][0] > depth:
            below[i] = later.pop()[1] or below[i]
        later.append((depth, below[i] or rows[i].kind != "same"))
    return next((i for i, r in enumerate(rows) if r.kind != "same"
                 and not (below[i] and not AT_START & set(r.changes))), None)
