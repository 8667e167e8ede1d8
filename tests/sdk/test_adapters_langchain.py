"""`BenchCallbackHandler` with the real `langchain-core` callback machinery: a chain with a
retriever, a chat model reporting usage the way provider integrations do, and tools (one
failing); and the original's `bench-langchain` 0.1.0 handler, unchanged, against our server."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bench.adapters.langchain import BenchCallbackHandler
from bench_core.domain.models import AgentRef
from langchain_core.callbacks import CallbackManagerForLLMRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.base import LangSmithParams
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool

from tests.conftest import RunningServer
from tests.sdk.conftest import HANG_GUARD, MemoryTransport
from tests.sdk.test_adapters_openai import recorded


class ProviderChat(BaseChatModel):
    """A chat model answering as LangChain's provider integrations do: usage in
    `usage_metadata`, the served model in `response_metadata`, provider in the LS params."""

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        message = AIMessage(
            content="Paris.", response_metadata={"model_name": "gpt-4o-mini-2024-07-18"},
            usage_metadata={"input_tokens": 900, "output_tokens": 12, "total_tokens": 912,
                            "input_token_details": {"cache_read": 512},
                            "output_token_details": {"reasoning": 0}})
        return ChatResult(generations=[ChatGeneration(message=message)])

    @property
    def _llm_type(self) -> str:
        return "provider-chat"

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        return LangSmithParams(ls_provider="openai", ls_model_name="gpt-4o-mini",
                               ls_model_type="chat")


class Atlas(BaseRetriever):
    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [Document(page_content="Paris is the capital of France.",
                         metadata={"source": "atlas"})]


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool
def book_flight(city: str) -> str:
    """Book a flight to a city."""
    raise ConnectionError("airline down")


def answer(question: dict[str, Any], config: Any) -> dict[str, Any]:
    docs = Atlas().invoke(question["q"], config=config)
    reply = ProviderChat().invoke(f"{docs[0].page_content}\n{question['q']}", config=config)
    weather = get_weather.invoke({"city": "Paris"}, config=config)
    return {"answer": reply.content, "weather": weather}


def test_a_chain_is_a_tree_of_tasks_with_evidence(make_agent: Callable[..., Any],
                                                  memory: MemoryTransport) -> None:
    agent = make_agent()
    handler = BenchCallbackHandler(agent)
    chain = RunnableLambda(answer).with_config(run_name="qa")
    with agent.span("question") as task:
        result = chain.invoke({"q": "Capital of France?"}, config={"callbacks": [handler]})
    assert result == {"answer": "Paris.", "weather": "sunny in Paris"}
    calls = recorded(agent, memory)
    qa, model, retriever, weather = (calls[n] for n in (
        "qa", "chat gpt-4o-mini", "Atlas", "get_weather"))
    assert qa["start"]["parent_task_id"] == task.task_id
    assert {c["start"]["parent_task_id"] for c in (model, retriever, weather)} == {
        qa["start"]["task_id"]}
    assert qa["end"]["output"] == result and qa["start"]["input"] == {"q": "Capital of France?"}
    assert model["evidence"]["data"] == {
        "label": "evidence", "provider": "openai", "model": "gpt-4o-mini-2024-07-18",
        "operation": "chat", "input_tokens": 900, "output_tokens": 12,
        "cache_read_input_tokens": 512, "cache_creation_input_tokens": None,
        "reasoning_output_tokens": 0, "cost_usd": None, "price_source": None}
    assert model["start"]["input"][0]["role"] == "human" and model["end"]["output"] == "Paris."
    assert retriever["start"]["input"] == "Capital of France?"
    assert retriever["end"]["output"] == [{"page_content": "Paris is the capital of France.",
                                           "metadata": {"source": "atlas"}}]
    assert weather["start"]["input"] == {"city": "Paris"}
    assert weather["end"]["output"] == "sunny in Paris"
    assert all(c["end"]["status"] == "success" for c in (qa, model, retriever, weather))


def test_prompts_and_tool_calls_are_sent_as_messages(make_agent: Callable[..., Any],
                                                     memory: MemoryTransport) -> None:
    """A prompt template's value goes out as its messages (not its repr), and messages keep
    the tool calls they make and the call a tool message answers."""
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import ToolMessage
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

    agent = make_agent()
    call = {"name": "get_weather", "args": {"city": "Lisbon"}, "id": "c1"}
    model = FakeMessagesListChatModel(responses=[AIMessage(content="", tool_calls=[call])])
    prompt = ChatPromptTemplate.from_messages([("system", "Be brief."),
                                               MessagesPlaceholder("history")])
    history = [ToolMessage(content="sunny", tool_call_id="c0")]
    (prompt | model).invoke({"history": history},
                            config={"callbacks": [BenchCallbackHandler(agent)]})
    calls = recorded(agent, memory)
    sent = [{"role": "system", "content": "Be brief."},
            {"role": "tool", "content": "sunny", "tool_call_id": "c0"}]
    assert calls["ChatPromptTemplate"]["end"]["output"] == sent
    assert calls["chat"]["start"]["input"] == sent
    made = {**call, "type": "tool_call"}
    assert calls["chat"]["end"]["output"] == {"content": "", "tool_calls": [made]}
    assert calls["RunnableSequence"]["end"]["output"] == {"role": "ai", "content": "",
                                                          "tool_calls": [made]}


def test_errors_fail_the_run_and_its_parents(make_agent: Callable[..., Any],
                                             memory: MemoryTransport) -> None:
    agent = make_agent()
    handler = BenchCallbackHandler(agent)
    chain = RunnableLambda(lambda q, config: book_flight.invoke({"city": q}, config=config)
                           ).with_config(run_name="travel")
    with pytest.raises(ConnectionError, match="airline down"):
        chain.invoke("Lisbon", config={"callbacks": [handler]})
    calls = recorded(agent, memory)
    assert calls["book_flight"]["end"]["status"] == "failed"
    assert calls["book_flight"]["end"]["output"] == "airline down"
    assert calls["travel"]["end"]["status"] == "failed"
    assert calls["travel"]["start"]["parent_task_id"] is None


@pytest.fixture(scope="session")
def bench_langchain_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The original's published handler, `bench-langchain==0.1.0`, in a directory of its own
    (without its dependencies: our SDK and the venv's langchain-core stand in)."""
    target = tmp_path_factory.mktemp("bench-langchain-0.1.0")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
         "bench-langchain==0.1.0"], capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        if "No matching distribution" in result.stderr or "connection" in result.stderr.lower():
            pytest.skip(f"the package registry is unreachable: {result.stderr.strip()[-300:]}")
        raise RuntimeError(f"pip install bench-langchain==0.1.0 failed:\n{result.stderr}")
    return target


def test_the_originals_langchain_handler_still_works(bench_server: RunningServer,
                                                     bench_langchain_dir: Path) -> None:
    """It pushes raw events through `BenchAgent._push` with `_uid` ids and `_now_iso` times.

    With langchain-core 1.x its `on_chain_start` fails for runnables that pass no `serialized`
    dict (LangChain logs that and goes on), so a sequence's own run is missing and its steps
    point at a parent that never comes, as they did with the original server."""
    login = "lc" + uuid.uuid4().hex[:8]
    key = bench_server.create_key(login)
    script = textwrap.dedent(f"""
        import bench
        from bench_langchain import BenchCallbackHandler
        from langchain_core.language_models.fake import FakeListLLM
        from langchain_core.language_models.fake_chat_models import FakeListChatModel
        from langchain_core.prompts import ChatPromptTemplate
        from langchain_core.tools import tool

        @tool
        def lookup(city: str) -> str:
            \"\"\"Look a city up.\"\"\"
            return "found " + city

        agent = bench.observe(api_key={key!r}, agent="legacy", endpoint={bench_server.url!r})
        config = {{"callbacks": [BenchCallbackHandler(agent)]}}
        print(FakeListLLM(responses=["Rome"]).invoke("Capital of Italy?", config=config))
        print(lookup.invoke({{"city": "Rome"}}, config=config))
        chain = ChatPromptTemplate.from_template("About {{city}}") | FakeListChatModel(responses=["old"])
        print(chain.invoke({{"city": "Rome"}}, config=config).content)
        assert agent.shutdown_sync(timeout=20)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=HANG_GUARD, env={"PYTHONPATH": str(bench_langchain_dir),
                                                     "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["Rome", "found", "Rome", "old"]
    ref = AgentRef(login, "legacy")
    runs, _ = bench_server.store.ingest.list_tasks(ref)
    assert sorted((t.name, t.status, t.output) for t in runs) == [
        ("llm:FakeListLLM", "success", "Rome"), ("tool:lookup", "success", "found Rome")]
    assert bench_server.get(f"/api/agents/{login}/legacy")["runs"] == 2
    steps = [e for e in bench_server.store.ingest.recent_events(ref, 50) if e["kind"] == "task.end"
             and e["name"] in ("ChatPromptTemplate", "llm:FakeListChatModel")]
    assert len(steps) == 2 and all(e["status"] == "success" for e in steps)
    prompt = next(e for e in steps if e["name"] == "ChatPromptTemplate")
    assert prompt["output"] == [{"role": "human", "content": "About Rome"}], "read, not a repr"
