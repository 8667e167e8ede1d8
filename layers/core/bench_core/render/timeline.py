"""A run's waterfall, drawn on the server as inline SVG: one bar per span, placed by its start
offset from the run's start and sized by its duration, on a scale shared by every row.

SVG attributes place the bars (the pages' CSP allows no inline styles) and CSS classes colour
them (`wf-success`, `wf-failed`, `wf-running`), so one drawing serves both themes. A span still
running reaches to the run's latest known instant, drawn open-ended.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from ..domain.runs import Node, walk
from . import formatting as fmt

SCALE = 1000
"""Width of the bars' viewBox; each row's SVG stretches it across its cell."""
MIN_BAR = 2.0
"""The narrowest bar drawn (a 0 ms span still shows where it happened)."""
TICKS = 4


@dataclass(frozen=True)
class Extent:
    """The time the waterfall covers: from the run's start to its last known end."""

    total_ms: float

    def x(self, offset_ms: float) -> float:
        return SCALE * offset_ms / self.total_ms if self.total_ms > 0 else 0.0


def extent(tree: Node, *more: Node) -> Extent:
    """The time `tree` covers (a run's, from its root's start), and the subtrees `more` of
    the same run (drawn on the same scale) too."""
    ends = [(n.start_offset_ms or 0.0) + (n.task.duration_ms or 0.0)
            for top in (tree, *more) for n in walk(top)]
    return Extent(max([*ends, tree.task.duration_ms or 0.0, 1.0]))


def bar(node: Node, scale: Extent) -> str:
    """The row's bar as an `<svg>` (with a `<title>` tooltip and an accessible name)."""
    start = node.start_offset_ms or 0.0
    running = node.task.duration_ms is None
    length = scale.total_ms - start if running else node.task.duration_ms or 0.0
    x = min(scale.x(start), SCALE - MIN_BAR)
    width = max(MIN_BAR, min(scale.x(length), SCALE - x))
    label = (f"{node.task.name or 'span'}: starts at +{fmt.ms(start)}, "
             + ("still running" if running else f"takes {fmt.ms(length)}"))
    status = node.task.status if node.task.status in ("success", "failed") else "running"
    return (f'<svg class="wf" viewBox="0 0 {SCALE} 10" preserveAspectRatio="none" role="img" '
            f'aria-label="{escape(label)}"><title>{escape(label)}</title>'
            f'<rect class="wf-{status}" x="{x:.1f}" y="1" width="{width:.1f}" height="8" '
            'rx="1"/></svg>')


def axis(scale: Extent) -> list[tuple[str, str]]:
    """Tick labels for the waterfall's header: (position class, text), start to end."""
    return [(f"t{k}", fmt.ms(scale.total_ms * k / TICKS) if k else "0")
            for k in range(TICKS + 1)]
