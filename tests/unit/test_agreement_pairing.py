"""The judge's agreement with people kept as verdicts land, in either order: a run counts once,
in the cell of its verdicts now (the eval steps and `record_feedback` over the in-memory store,
with a scripted judge)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench_core.domain.agreement import AgreementTable
from bench_core.domain.errors import TooManyRequests
from bench_core.domain.privacy import Viewer
from bench_core.evals import workflow
from bench_core.evals.feedback import record_feedback
from bench_core.ports.workflows import eval_start
from bench_core.runtime.adapters import Services
from bench_core.settings import Settings
from bench_core.store.memory.feedback import MemoryFeedback

from tests.unit.test_eval_workflow import REF, ScriptedLLM, ingest, verdict, with_llm

OWNER = Viewer(login=REF.login)


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    s = Services.from_settings(Settings(data_dir=tmp_path, store="memory"))
    yield s
    s.close()


def judge(services: Services, run_id: str, score: float) -> None:
    final = workflow.run_eval(with_llm(services, ScriptedLLM(verdict(score))),
                              eval_start(REF.path, [run_id]))
    assert final["outcomes"][run_id] == "scored"


def feedback(services: Services, run_id: str, feedback_id: str, *, thumbs: str | None = None,
             score: float | None = None) -> bool:
    return record_feedback(services.store, REF, OWNER, run_id, feedback_id=feedback_id,
                           score=score, thumbs=thumbs, label=None, comment=None)[1]


def table(services: Services) -> AgreementTable:
    return services.store.feedback.agreement_tables([REF])[REF]


def test_verdicts_pair_whichever_lands_second(services: Services) -> None:
    ingest(services, "early", "late", "unjudged")
    assert feedback(services, "early", "f1", thumbs="down")
    assert table(services) == AgreementTable()  # no judge yet: nothing to agree with
    judge(services, "early", 0.9)
    assert table(services) == AgreementTable(pf=1)  # the judge passed it, people did not

    judge(services, "late", 0.2)
    assert table(services) == AgreementTable(pf=1)  # nobody has looked yet
    assert feedback(services, "late", "f2", thumbs="down")
    assert feedback(services, "unjudged", "f3", thumbs="up")
    assert table(services) == AgreementTable(pf=1, ff=1)


def test_a_run_moves_when_people_change_their_verdict_and_a_resend_changes_nothing(
        services: Services) -> None:
    ingest(services, "run")
    judge(services, "run", 0.3)
    assert feedback(services, "run", "down", thumbs="down")
    assert table(services) == AgreementTable(ff=1)
    assert feedback(services, "run", "up-1", thumbs="up")  # mean 0.5: people pass it
    assert table(services) == AgreementTable(fp=1)
    assert not feedback(services, "run", "down", thumbs="up")  # resent: kept as it was
    assert feedback(services, "run", "low", score=0.1)  # mean 0.37: fails again
    assert table(services) == AgreementTable(ff=1)


class BusyFeedback(MemoryFeedback):
    """The in-memory feedback store, its agreement counter too contended to write."""

    def set_agreement(self, *args: object, **kwargs: object) -> None:
        raise TooManyRequests("too many concurrent writes to this agent")


def test_a_busy_counter_never_fails_the_eval(services: Services) -> None:
    """A failed eval is delivered again and judged (and paid for) twice: the agreement
    gives way instead, and the run's next verdict counts it."""
    ingest(services, "run")
    assert feedback(services, "run", "down", thumbs="down")
    memory = services.store.feedback
    assert isinstance(memory, MemoryFeedback)
    busy = Services(services.settings, dataclasses.replace(
        services.store, feedback=BusyFeedback(memory.memory, memory.rules)))
    judge(busy, "run", 0.9)
    assert services.store.ingest.get_task(REF, "run").eval.score == 0.9
    assert table(services) == AgreementTable()
    assert feedback(services, "run", "again", thumbs="down")
    assert table(services) == AgreementTable(pf=1)
