"""A run is judged on its conversation, on every store: where its root span recorded no
content (an OpenTelemetry GenAI agent's `invoke_agent`), the judge reads its first model call's
input, the tool calls and results the last one was shown, and the last one's answer, and its
verdict says so; only a run none of whose spans recorded anything is unscored for it."""

from __future__ import annotations

from typing import Any

from bench_core.domain.models import NO_CONTENT, AgentMeta, AgentRef
from bench_core.evals import workflow
from bench_core.evals.conversation import NOTE
from bench_core.ports.store import Store
from bench_core.ports.workflows import eval_start
from bench_core.runtime.adapters import Services
from bench_core.settings import Settings

from tests.factories import clean, ev
from tests.unit.test_eval_workflow import ScriptedLLM, verdict

REF = AgentRef("alice", "agent-1")
QUESTION = [{"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
            {"role": "user", "parts": [{"type": "text", "content": "Weather in Lisbon?"}]}]
CALL = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_weather",
                                         "arguments": {"city": "Lisbon"}}]}]
RESULT = [{"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1",
                                      "response": "sunny, 24 C"}]}]
ANSWER = [{"role": "assistant", "parts": [{"type": "text", "content": "Sunny and 24 C."}]}]


class RecordingLLM(ScriptedLLM):
    def __init__(self, *answers: str) -> None:
        super().__init__(*answers)
        self.prompts: list[str] = []

    def complete(self, system: str, messages: Any, *, max_tokens: int) -> Any:
        self.prompts.append(messages[0]["content"])
        return super().complete(system, messages, max_tokens=max_tokens)


def span(task_id: str, parent: str | None, name: str, input: Any = None,
         output: Any = None) -> list[dict[str, Any]]:
    start = {"name": name, "parent_task_id": parent}
    if input is not None:
        start["input"] = input
    end: dict[str, Any] = {"name": name, "status": "success"}
    if output is not None:
        end["output"] = output
    return [ev("task.start", task_id, **start), ev("task.end", task_id, **end)]


def agent_run(store: Store, run: str, *, content: bool = True) -> None:
    """An agent's run: a root without content, two model calls and a tool between them."""
    events = [ev("task.start", run, name="invoke_agent weather")]
    if content:
        events += [*span(f"{run}-llm1", run, "chat gpt-4.1-mini", QUESTION, CALL),
                   *span(f"{run}-tool", run, "execute_tool get_weather", {"city": "Lisbon"},
                         "sunny, 24 C"),
                   *span(f"{run}-llm2", run, "chat gpt-4.1-mini", [*QUESTION, *CALL, *RESULT],
                         ANSWER)]
    else:
        events += [*span(f"{run}-llm1", run, "chat gpt-4.1-mini"),
                   *span(f"{run}-tool", run, "execute_tool get_weather")]
    events.append(ev("task.end", run, name="invoke_agent weather", status="success"))
    store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), clean(events))


def judged(store: Store, run: str, llm: ScriptedLLM | None = None) -> dict[str, str]:
    services = Services(Settings(store="memory"), store)
    if llm is not None:
        services = services.provide(llm=llm)
    return workflow.run_eval(services, eval_start(REF.path, [run]))["outcomes"]


def test_a_root_without_content_is_judged_on_its_model_calls(store: Store) -> None:
    agent_run(store, "r1")
    llm = RecordingLLM(verdict(0.9))
    assert judged(store, "r1", llm) == {"r1": "scored"}
    [prompt] = llm.prompts
    for seen in ("Be brief.", "Weather in Lisbon?", "calls get_weather", '"city": "Lisbon"',
                 "sunny, 24 C", "Sunny and 24 C."):
        assert seen in prompt, seen
    assert prompt.index("Weather in Lisbon?") < prompt.index("sunny, 24 C") < prompt.index(
        "Sunny and 24 C.")
    result = store.ingest.get_task(REF, "r1").eval
    assert (result.status, result.score) == ("scored", 0.9)
    assert result.reasoning == f"{NOTE} It deserves 0.9."


def test_the_offline_judge_reads_the_conversation_too(store: Store) -> None:
    agent_run(store, "r2")
    assert judged(store, "r2") == {"r2": "scored"}
    result = store.ingest.get_task(REF, "r2").eval
    assert result.score == 1.0 and result.reasoning.startswith(NOTE)


def test_only_a_run_no_span_of_which_holds_content_is_unscored_for_it(store: Store) -> None:
    agent_run(store, "r3", content=False)
    assert judged(store, "r3", RecordingLLM(verdict(0.5))) == {"r3": "unscored"}
    assert store.ingest.get_task(REF, "r3").eval.reason == NO_CONTENT


def test_content_arriving_on_a_span_later_gets_the_run_judged_and_counted_once(
        store: Store) -> None:
    agent_run(store, "r4", content=False)
    assert judged(store, "r4") == {"r4": "unscored"}
    late = [ev("task.content", "r4-llm1", input=QUESTION, output=ANSWER)]
    store.ingest.ingest(REF.login, AgentMeta(slug=REF.slug), clean(late))
    assert judged(store, "r4") == {"r4": "scored"}
    stats = store.agents.get_agent(REF).stats
    assert (stats.eval_count, stats.eval_unscored) == (1, 0)
