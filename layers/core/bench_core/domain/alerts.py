"""Alerts: what a regression monitor (`domain.monitors`) found, kept until it is over.

An alert is about one monitor of one agent (its `key`: the metric, and for a version's monitor
the version too, for a failure cluster's the cluster's id), and at most one of an agent's
alerts per key is unresolved: a regression that goes on updates its alert (the numbers,
`updated_at`) and opens no other, so nobody is told twice. It says what changed (`metric`), by
how much (`baseline` to `current`, `change`), with what confidence (`p_value` under the `level`
it was held to), since when (`since`) and where to look (`links`). It resolves by itself when
the monitor finds the metric recovered, or by its owner's hand; an owner may acknowledge it
meanwhile (it stays open: "seen, on it").

Each delivery attempt of an alert to a webhook is kept (`Delivery`): what was sent where, the
answer, and when the next try is due.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field

from .monitors import HIGHER_IS_WORSE, RELATIVE, Finding, Metric, Rule

State = Literal["open", "acknowledged", "resolved"]
Target = Literal["webhook", "slack"]
ALERTS_SHOWN = 50
TITLES = {Metric.SUCCESS: "Success rate", Metric.SCORE: "Judge score",
          Metric.COST: "Cost per successful run", Metric.P95: "p95 latency",
          Metric.CLUSTER: "Failure cluster"}


class Alert(BaseModel):
    """One alert, as stored."""

    model_config = ConfigDict(frozen=True)

    alert_id: str
    key: str
    """The monitor: `metric`, `metric@version` for a version against its predecessor, or
    `metric#cluster` for a failure cluster."""
    metric: Metric
    version: str | None = None
    against: str | None = None
    """For a version's alert: the version it was compared with."""
    cluster: str | None = None
    """For a failure cluster's alert: the cluster's id (`domain.cluster_series`)."""
    cluster_label: str | None = None
    """Its one line as the insights last said it: content, for its owner's eyes
    (`privacy.alert_view` leaves it out)."""
    state: State = "open"
    mode: str = "significant"
    baseline: float | None = None
    current: float | None = None
    p_value: float | None = None
    level: float | None = None
    runs: int = 0
    baseline_runs: int = 0
    since: str
    """When the worse stretch began (the firing window's start)."""
    opened_at: str
    updated_at: str
    acknowledged_at: str | None = None
    resolved_at: str | None = None
    resolved_by: Literal["recovery", "owner", "superseded"] | None = None
    """What ended it: the metric recovered, its owner, or (a version's) a newer version."""

    @property
    def title(self) -> str:
        return TITLES[self.metric] + (f" of version {self.version}" if self.version else "") + (
            f" {self.cluster}" if self.cluster else "")

    @property
    def change(self) -> float | None:
        if self.baseline is None or self.current is None:
            return None
        return self.current - self.baseline

    @property
    def relative(self) -> bool:
        return self.metric in RELATIVE

    @property
    def worse_when_higher(self) -> bool:
        return self.metric in HIGHER_IS_WORSE


def alert_key(metric: Metric, version: str | None = None, cluster: str | None = None) -> str:
    if cluster is not None:
        return f"{metric.value}#{cluster}"
    return metric.value if version is None else f"{metric.value}@{version}"


def from_finding(finding: Finding, *, alert_id: str, since: str, now: str,
                 version: str | None = None, against: str | None = None,
                 cluster: str | None = None, cluster_label: str | None = None) -> Alert:
    """The alert a firing finding opens (or, for one already open, its new numbers)."""
    test = finding.test
    return Alert(alert_id=alert_id, key=alert_key(finding.metric, version, cluster),
                 metric=finding.metric, version=version, against=against, cluster=cluster,
                 cluster_label=cluster_label, mode=finding.mode,
                 baseline=test.baseline if test else None,
                 current=test.current if test else None,
                 p_value=test.p_value if test else None, level=finding.level,
                 runs=test.runs if test else 0, baseline_runs=test.baseline_runs if test else 0,
                 since=since, opened_at=now, updated_at=now)


def updated(kept: Alert, fresh: Alert) -> Alert:
    """`kept` (an unresolved alert of the same key) with `fresh`'s numbers: it keeps its id,
    its state, when it opened and since when."""
    return kept.model_copy(update={
        "baseline": fresh.baseline, "current": fresh.current, "p_value": fresh.p_value,
        "level": fresh.level, "runs": fresh.runs, "baseline_runs": fresh.baseline_runs,
        "updated_at": fresh.updated_at, "cluster_label": fresh.cluster_label or kept.cluster_label})


def links(alert: Alert, base_url: str, login: str, slug: str) -> dict[str, str]:
    """Where to look: the profile, the failed runs, the failure clusters (a cluster's alert:
    that cluster, on the profile and on the chart of errors by cluster), the owner's list of
    alerts, and for a version's alert the two versions compared (`bench check`'s answer, and
    the profile's versions)."""
    agent = f"{base_url}/u/{login}/{slug}"
    out = {"agent": agent, "failed_runs": f"{agent}/runs?status=failed",
           "failure_clusters": (f"{agent}#cluster-{quote(alert.cluster)}" if alert.cluster
                                else f"{agent}#insights-title"),
           "alerts": f"{base_url}/dashboard/agents/{slug}/alerts"}
    if alert.cluster is not None:
        out["clusters_over_time"] = f"{agent}?range=30d#chart-clusters"
    if alert.version is not None and alert.against is not None:
        out["versions"] = (f"{base_url}/api/agents/{login}/{slug}/versions/check"
                           f"?version={quote(alert.version)}&against={quote(alert.against)}")
        out["versions_page"] = f"{agent}#versions"
    return out


def says(alert: Alert) -> str:
    """One sentence: what changed, by how much, with what confidence, since when."""
    what = alert.title + (f" ({alert.cluster_label})" if alert.cluster_label else "")
    if alert.metric is Metric.CLUSTER:
        what = ("New " + what[0].lower() + what[1:] if not alert.baseline else what) + (
            ", its share of runs,")
    if alert.mode == "threshold":
        return (f"{what} is {show(alert.metric, alert.current)}, past the threshold of "
                f"{show(alert.metric, alert.baseline)} (since {alert.since})")
    by = ""
    if alert.change is not None and alert.relative and alert.baseline:
        by = f" ({alert.change / alert.baseline:+.0%})"
    elif alert.change is not None and alert.metric in POINTS:
        by = f" ({alert.change * 100:+.1f} points)"
    against = f"version {alert.against}" if alert.against else "the four weeks before"
    p = "" if alert.p_value is None else f", p = {alert.p_value:.2g}"
    return (f"{what} went from {show(alert.metric, alert.baseline)} ({against}) to "
            f"{show(alert.metric, alert.current)}{by} over {alert.runs} runs{p}, since "
            f"{alert.since}")


POINTS = {Metric.SUCCESS, Metric.SCORE, Metric.CLUSTER}


def show(metric: Metric, value: float | None) -> str:
    if value is None:
        return "n/a"
    if metric in (Metric.SUCCESS, Metric.CLUSTER):
        return f"{value:.1%}"
    if metric is Metric.SCORE:
        return f"{value:.2f}"
    if metric is Metric.COST:
        return f"${value:.4g}"
    return f"{value:,.0f} ms"


def newest_first(alerts: list[Alert]) -> list[Alert]:
    return sorted(alerts, key=lambda a: (a.opened_at, a.alert_id), reverse=True)


class Delivery(BaseModel):
    """One attempt to deliver an alert's news to a webhook."""

    model_config = ConfigDict(frozen=True)

    alert_id: str
    attempt: int
    event: Literal["opened", "resolved"]
    target: Target
    url_host: str
    """Only the host: a Slack webhook's path is its secret."""
    at: str
    status: int | None = None
    """The receiver's HTTP status; None when it could not be reached."""
    error: str | None = None
    delivered: bool = False
    next_try_at: str | None = None


class RuleSetting(BaseModel):
    """An owner's choice for one metric (`domain.monitors.Rule`): off, a minimum effect for
    the significance mode, or a threshold."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: Metric
    mode: Literal["significant", "threshold", "off"] = "significant"
    min_effect: float | None = Field(default=None, ge=0, le=10)
    threshold: float | None = Field(default=None, ge=0)


class AlertSettings(BaseModel):
    """Where an agent's alerts go and what its monitors watch for. URLs are the owner's (only
    the owner sees them); a Slack incoming webhook's URL is its secret."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    webhook_url: str | None = Field(default=None, max_length=2000)
    slack_webhook_url: str | None = Field(default=None, max_length=2000)
    rules: tuple[RuleSetting, ...] = ()

    def rules_for(self) -> list[Rule]:
        """Every metric's rule: the owner's where set (none for a metric turned off), else the
        default."""
        chosen = {r.metric: r for r in self.rules}
        out = []
        for metric in Metric:
            setting = chosen.get(metric)
            if setting is None:
                out.append(Rule(metric))
            elif setting.mode != "off" and not (setting.mode == "threshold"
                                                and setting.threshold is None):
                out.append(Rule(metric, setting.mode, setting.min_effect, setting.threshold))
        return out
