"""What the leaderboard ranks by, and who qualifies: one definition both stores index.

Each store keeps, per agent, the value it ranks by in each sort mode, written on every change to
the agent (ingest, settings), never computed at read time: SQLite in indexed columns, DynamoDB
in the sparse `lb_*` GSI keys. A value is absent (NULL / no attribute) when the agent does not
qualify, so a ranking is one index range read, and a private agent is absent from all of them.

A new agent ranks nowhere until it has some runs and is a day old (`Qualification`), so agents
made in bulk do not fill the leaderboard the moment they send their first spans.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from . import stats
from .errors import BadRequest
from .models import Agent, iso
from .pricing import headline_cost
from .privacy import listed

MIN_RUNS = 10
PAGE_SIZE = 25
MAX_PAGE = 200


@dataclass(frozen=True)
class Sort:
    name: str
    title: str
    descending: bool
    """Higher values rank first (rates, scores, runs); cost and latency rank lowest first."""
    rule: str
    """Who qualifies, in words, for the page."""


SORTS = {s.name: s for s in (
    Sort("runs", "Runs", True, "every public agent once it is a day old and has a few runs"),
    Sort("success", "Success rate", True, f"at least {MIN_RUNS} runs"),
    Sort("score", "Eval score", True, f"at least {MIN_RUNS} scored runs"),
    Sort("cost", "Cost per run", False,
         f"at least {MIN_RUNS} runs with a cost: owner-reported, else provider evidence"),
    Sort("latency", "p50 latency", False, f"at least {MIN_RUNS} timed runs"),
)}


@dataclass(frozen=True)
class Qualification:
    """When an agent first ranks: once it has `min_runs` runs and its first batch came
    `min_age_hours` before, by Bench's clock (the runs' own times are the sender's to set, and
    one request can claim any). Its ranks are recomputed on its writes, so it appears with the
    first of them after both hold."""

    min_runs: int = 5
    min_age_hours: float = 24.0

    def admits(self, agent: Agent, now: datetime) -> bool:
        return (agent.stats.runs >= self.min_runs
                and agent.created_at <= iso(now - timedelta(hours=self.min_age_hours)))

    @property
    def rule(self) -> str:
        return f"at least {self.min_runs} runs, {self.min_age_hours:g} hours after its first batch"


def rank_values(agent: Agent, qualification: Qualification, now: datetime
                ) -> dict[str, float | None]:
    """The value `agent` ranks by in each sort mode at `now`; None where it does not
    qualify."""
    if not listed(agent) or not qualification.admits(agent, now):
        return dict.fromkeys(SORTS)
    s = agent.stats
    enough = s.runs >= MIN_RUNS
    return {
        "runs": float(s.runs),
        "success": s.successes / s.runs if enough else None,
        "score": s.eval_score_sum / s.eval_count if s.eval_count >= MIN_RUNS else None,
        "cost": _cost(agent) if enough else None,
        "latency": (stats.percentile(s.latency_hist, 50)
                    if sum(s.latency_hist) >= MIN_RUNS else None),
    }


def _cost(agent: Agent) -> float | None:
    s = agent.stats
    cost, source = headline_cost(s.cost_usd_total, s.evidence_cost_usd_total, s.runs)
    return cost if source is not None else None


def search_text(agent: Agent) -> str | None:
    """What `q=` matches against, lowercased (DynamoDB's `contains` is case-sensitive); None
    for an agent that is not listed."""
    if not listed(agent):
        return None
    fields = (agent.login, agent.slug, agent.display_name, agent.framework, agent.model)
    return " ".join(f for f in fields if f).lower()


def normalise_query(q: str | None) -> str | None:
    q = " ".join((q or "").split()).lower()
    return q[:100] or None


def dynamo_rank_key(value: float | None) -> Decimal | None:
    """A DynamoDB GSI sort key ordering by `value` to nine decimals, as an exact integer (the
    runs tie-break is applied when the page is read, so the key moves only with the value)."""
    return None if value is None else Decimal(round(value * 10**9))


def leaderboard_params(sort: str | None, q: str | None, page: str | None
                       ) -> tuple[str, str | None, int]:
    """`sort`, `q` and `page` of a leaderboard request, defaults filled in; 400 for values the
    page cannot serve, naming the parameter and what it accepts."""
    sort = sort or "runs"
    if sort not in SORTS:
        raise BadRequest(f"unknown sort {sort!r}: use one of {', '.join(SORTS)}",
                         [{"loc": ["query", "sort"], "msg": "unknown sort"}])
    number = page or "1"
    if not (number.isascii() and number.isdigit() and len(number) <= 4
            and 1 <= int(number) <= MAX_PAGE):
        raise BadRequest(f"page must be a whole number from 1 to {MAX_PAGE}",
                         [{"loc": ["query", "page"], "msg": "invalid page"}])
    return sort, normalise_query(q), int(number)
