"""How far the judge agrees with people: a 2×2 table of pass/fail verdicts on the runs both
have judged, and what it says (accuracy and Cohen's kappa, each with a 95% interval).

Verdicts are made pass/fail at `PASS_MARK` (0.5, the mark below which a run is low-scored,
`domain.eval_records.LOW_SCORE`): the judge's 0-1 score passes at 0.5 or more; people's verdict
on a run is the mean of its feedback (a thumbs up is 1, down 0, a score as given), passing at
0.5 or more, so one person's thumbs up and another's down pass the run. A run counts once,
in the cell of its current pair of verdicts (`Cell`), however often either is given again.

Intervals are analytic, so the same table always reads the same (a bootstrap would not):
accuracy's is Wilson's score interval (`domain.stats.wilson_interval`, honest at small n);
kappa's is kappa ± 1.96·SE with the large-sample standard error of Fleiss, Cohen and Everitt
(1969), which, unlike the simpler sqrt(po(1-po)/n)/(1-pe), holds when kappa is not 0, cut to
[-1, 1]. Kappa is undefined (None) when chance agreement is 1: judge and people each gave one
verdict only, all pass or all fail.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from .stats import Z_95, wilson_interval

PASS_MARK = 0.5
LOW_KAPPA = 0.4
"""Below this kappa the judge's agreement with people is marked low (Landis and Koch's
"moderate" begins at 0.41)."""

Cell = Literal["pp", "pf", "fp", "ff"]
"""A run's pair of verdicts: the judge's letter, then people's (p pass, f fail)."""
CELLS: tuple[Cell, ...] = ("pp", "pf", "fp", "ff")
UNJUDGED = "-"
"""How a store writes the cell of a run people labelled and the judge has not scored."""
Level = Literal["unknown", "low", "ok"]


def passes(score: float) -> bool:
    return score >= PASS_MARK


def people_pass(scores: list[float]) -> bool | None:
    """People's verdict on a run from its feedback scores; None without any."""
    return passes(sum(scores) / len(scores)) if scores else None


def cell_of(judge_pass: bool, human_pass: bool) -> Cell:
    cell: Cell = ("p" if judge_pass else "f") + ("p" if human_pass else "f")  # type: ignore[assignment]
    return cell


def as_cell(stored: str) -> Cell | None:
    """A stored cell back: one of `CELLS`, else None (`UNJUDGED`)."""
    return next((cell for cell in CELLS if cell == stored), None)


@dataclass(frozen=True)
class AgreementTable:
    """How many runs fell in each cell."""

    pp: int = 0
    pf: int = 0
    fp: int = 0
    ff: int = 0

    @classmethod
    def of(cls, counts: dict[str, int]) -> AgreementTable:
        return cls(**{cell: max(0, int(counts.get(cell, 0))) for cell in CELLS})

    @property
    def n(self) -> int:
        return self.pp + self.pf + self.fp + self.ff


def kappa_with_se(table: AgreementTable) -> tuple[float, float] | None:
    """Cohen's kappa and its Fleiss-Cohen-Everitt standard error; None when undefined."""
    n = table.n
    if n == 0:
        return None
    p = [[table.pp / n, table.pf / n], [table.fp / n, table.ff / n]]
    judge = [p[0][0] + p[0][1], p[1][0] + p[1][1]]
    people = [p[0][0] + p[1][0], p[0][1] + p[1][1]]
    observed = p[0][0] + p[1][1]
    chance = judge[0] * people[0] + judge[1] * people[1]
    if chance >= 1:
        return None
    kappa = (observed - chance) / (1 - chance)
    diagonal = sum(p[i][i] * (1 - (judge[i] + people[i]) * (1 - kappa)) ** 2 for i in (0, 1))
    off = (1 - kappa) ** 2 * sum(p[i][j] * (people[i] + judge[j]) ** 2
                                 for i in (0, 1) for j in (0, 1) if i != j)
    variance = (diagonal + off - (kappa - chance * (1 - kappa)) ** 2) / (n * (1 - chance) ** 2)
    return kappa, math.sqrt(max(0.0, variance))


def level(kappa: float | None) -> Level:
    if kappa is None:
        return "unknown"
    return "low" if round(kappa, 12) < LOW_KAPPA else "ok"  # 0.4 computed may be 0.39999...


def agreement_view(table: AgreementTable) -> dict[str, Any]:
    """What the profile and the API show: counts and rates only (no content)."""
    agree = table.pp + table.ff
    accuracy = wilson_interval(agree, table.n)
    fitted = kappa_with_se(table)
    kappa = None if fitted is None else fitted[0]
    return {
        "n": table.n, "agree": agree, "table": {cell: getattr(table, cell) for cell in CELLS},
        "accuracy": agree / table.n if table.n else None,
        "accuracy_ci95": list(accuracy) if accuracy else None,
        "kappa": kappa,
        "kappa_se": None if fitted is None else fitted[1],
        "kappa_ci95": None if fitted is None else [max(-1.0, fitted[0] - Z_95 * fitted[1]),
                                                   min(1.0, fitted[0] + Z_95 * fitted[1])],
        "level": level(kappa),
    }
