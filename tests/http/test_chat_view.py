"""A model call's span detail reads as a chat, whatever client sent it: each convention's real
payload goes in through the server's own routes (`/v1/traces`, `/v1/logs`, `/ingest`), and the
run page shows the same conversation: instructions, the question, the earlier tool call and its
result, and the answer's call of `get_weather` with its arguments; the raw JSON stays one
toggle away. A visitor of an agent that hides its content sees none of it, on both stores."""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import Callable

import httpx
import pytest

from tests.conftest import RunningServer
from tests.http.chat_data import (
    EARLIER,
    MASTRA,
    QUESTION,
    SYSTEM,
    VERCEL,
    ChatRun,
    attributes_run,
    langchain_run,
    openinference_run,
    otel_genai_run,
)

FULL = ["system", "user", "assistant", "tool", "assistant"]
SENDERS: dict[str, tuple[Callable[[RunningServer], ChatRun], list[str]]] = {
    "otel-genai": (otel_genai_run, FULL),
    "openinference": (openinference_run, FULL),
    "langchain": (langchain_run, FULL),
    "vercel-ai": (lambda s: attributes_run(s, "vercel", VERCEL), FULL),
    "mastra": (lambda s: attributes_run(s, "mastra", MASTRA), ["system", "user", "assistant"]),
}


def chat_of(server: RunningServer, run: ChatRun, key: str | None = None) -> str:
    headers = {"X-Bench-Key": key} if key else {}
    response = httpx.get(server.url + run.page, headers=headers, timeout=30)
    assert response.status_code == 200, response.text[:300]
    return response.text


@pytest.mark.parametrize("convention", SENDERS)
def test_each_convention_reads_as_the_same_chat(bench_server: RunningServer,
                                                convention: str) -> None:
    send, roles = SENDERS[convention]
    run = send(bench_server)
    page = chat_of(bench_server, run)
    chat = page[page.index("data-chat"):page.index("data-raw-json")]
    assert re.findall(r'data-role="(\w+)"', chat) == roles
    assert re.findall(r'data-side="(\w+)"', chat)[-1] == "output"
    text = html.unescape(re.sub(r"<[^>]+>", " ", chat))
    for said in (SYSTEM, QUESTION):
        assert said in text, said
    answer = chat[chat.rindex('data-role="assistant"'):]
    assert "data-tool-call" in answer and "get_weather" in answer
    assert '"city": "Lisbon"' in html.unescape(answer), "the call's arguments, as JSON"
    if roles == FULL:
        assert EARLIER in text and "data-tool-result" in chat
    raw = page[page.index("data-raw-json"):]
    assert "<summary>Raw JSON</summary>" in raw and "<pre>" in raw


def test_a_langchain_prompt_is_stored_as_messages_not_a_repr(bench_server: RunningServer) -> None:
    run = langchain_run(bench_server)
    answer = bench_server.get(f"/api/agents/{run.login}/{run.slug}/runs/{run.run_id}", run.key)
    spans = {s["name"]: s for s in answer["spans"]}
    prompt = spans["ChatPromptTemplate"]["output"]
    assert prompt[:2] == [{"role": "system", "content": SYSTEM},
                          {"role": "human", "content": QUESTION}]
    assert prompt[3] == {"role": "tool", "content": EARLIER, "tool_call_id": "call_0"}
    assert "ChatPromptValue" not in str(answer)


def test_a_repr_sent_by_an_older_client_is_stored_as_messages(bench_server: RunningServer) -> None:
    """The original client's handler (and SDKs before this one) sent a chain step's prompt as
    its repr: the server reads it back as messages, and the page shows them as a chat."""
    from tests.factories import batch, ev
    from tests.http.test_ingest_http import post

    login = "lcrepr" + uuid.uuid4().hex[:8]
    bench_server.showing_content(login, "legacy")
    key = bench_server.create_key(login)
    prompt = ("ChatPromptValue(messages=[SystemMessage(content='Be brief.', additional_kwargs={}, "
              "response_metadata={}), HumanMessage(content='Weather in Lisbon?', "
              "additional_kwargs={}, response_metadata={})])")
    answer = ("AIMessage(content='Sunny.', additional_kwargs={}, response_metadata={"
              "'finish_reason': 'stop'}, id='run-1', usage_metadata={'input_tokens': 9})")
    events = [ev("task.start", "m1", name="llm:Chat", input=prompt),
              ev("task.end", "m1", name="llm:Chat", status="success", output=answer)]
    assert post(bench_server, batch("legacy", events), key).status_code == 200
    task = bench_server.get(f"/api/agents/{login}/legacy/tasks/m1")
    assert task["input"] == [{"role": "system", "content": SYSTEM},
                             {"role": "human", "content": QUESTION}]
    assert task["output"] == {"role": "ai", "content": "Sunny."}
    page = httpx.get(f"{bench_server.url}/u/{login}/legacy/runs/m1?span=m1", timeout=30).text
    assert re.findall(r'data-role="(\w+)"', page) == ["system", "user", "assistant"]


def test_long_texts_fold_and_attachments_are_named_not_inlined(
        bench_server: RunningServer) -> None:
    from tests.factories import batch, ev
    from tests.http.test_ingest_http import post

    login = "chatlong" + uuid.uuid4().hex[:8]
    bench_server.showing_content(login, "long")
    key = bench_server.create_key(login)
    essay = "Lisbon. " * 400
    asked = [{"role": "user", "content": [
        {"type": "text", "text": essay},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 4000}},
        {"type": "file", "file": {"filename": "forecast.pdf", "file_data": "JVBERi0x"}}]}]
    events = [ev("task.start", "m1", name="chat", input=asked),
              ev("task.end", "m1", name="chat", status="success", output="<b>Sunny</b>.")]
    assert post(bench_server, batch("long", events), key).status_code == 200
    page = httpx.get(f"{bench_server.url}/u/{login}/long/runs/m1?span=m1", timeout=30).text
    chat = page[page.index("data-chat"):page.index("data-raw-json")]
    assert '<details class="chat-long">' in chat and "3,200 characters: show all" in chat
    assert chat.count("data-attachment") == 2 and "forecast.pdf" in chat and "image/png" in chat
    assert "AAAA" not in chat and "JVBERi0x" not in chat, "attachments are named, not inlined"
    assert "&lt;b&gt;Sunny&lt;/b&gt;." in chat, "autoescaped"


def test_a_hidden_agents_chat_shows_a_visitor_nothing_on_each_store(
        server_on_each_store: RunningServer) -> None:
    server = server_on_each_store
    runs = [otel_genai_run(server, shown=False), langchain_run(server, shown=False)]
    for run in runs:
        visitor = chat_of(server, run)
        assert "data-chat" not in visitor and "data-role" not in visitor
        for said in (SYSTEM, QUESTION, EARLIER, "get_weather"):
            assert said not in visitor, said
        assert "Hidden by the owner" in visitor
        owner = chat_of(server, run, run.key)
        assert "data-chat" in owner and QUESTION in owner
