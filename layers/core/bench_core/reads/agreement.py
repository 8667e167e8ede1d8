"""The judge's agreement with people as the profile, the agent's JSON and the leaderboard show
it (`domain.agreement.agreement_view`: counts and rates, no content), read from the counters
`evals.agreement` keeps: one item per agent, a page of agents in one batch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..domain.agreement import AgreementTable, agreement_view
from ..domain.models import AgentRef
from ..ports.services import WithFeedback

UNLABELLED = agreement_view(AgreementTable())
"""What an agent without labelled runs shows (`level` unknown)."""


def judge_agreement(store: WithFeedback, refs: Sequence[AgentRef]
                    ) -> dict[AgentRef, dict[str, Any]]:
    return {ref: agreement_view(table)
            for ref, table in store.feedback.agreement_tables(refs).items()}
