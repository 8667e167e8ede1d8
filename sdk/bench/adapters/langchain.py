"""Record LangChain runs as Bench tasks::

    from bench.adapters.langchain import BenchCallbackHandler

    handler = BenchCallbackHandler(agent)
    chain.invoke({"question": q}, config={"callbacks": [handler]})

Every chain, chat model or LLM call, tool and retriever run becomes a task, nested as LangChain
nests them (the outermost run under the Bench task running where the chain is invoked, if
any); model calls carry provider, model and token evidence; errors end their task as failed.
Needs ``langchain-core``.

The original's handler (``bench_langchain.BenchCallbackHandler`` from ``bench-langchain`` 0.1.0)
keeps working with this SDK; this one adds parent links that resolve, evidence and retrievers.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional
from uuid import UUID

from bench._client import _FROM_CONTEXT, BenchAgent
from bench.adapters._call import Call, Outcome, guarded, start_call, token_counts

try:
    from langchain_core.callbacks import BaseCallbackHandler
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("bench.adapters.langchain needs langchain-core: "
                      "pip install langchain-core") from exc

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langchain_core.messages import BaseMessage
    from langchain_core.messages.ai import UsageMetadata
    from langchain_core.outputs import LLMResult


class BenchCallbackHandler(BaseCallbackHandler):
    """A LangChain callback handler recording each run as a Bench task of ``agent``.

    One handler may serve many concurrent invocations: runs are told apart by their run ids."""

    def __init__(self, agent: BenchAgent) -> None:
        super().__init__()
        self._agent = agent
        self._runs: dict[UUID, Call] = {}
        self._lock = threading.Lock()

    # ── starts ──

    def on_chain_start(self, serialized: Optional[dict[str, Any]], inputs: Any, *, run_id: UUID,
                       parent_run_id: Optional[UUID] = None, **kwargs: Any) -> None:
        self._start(run_id, parent_run_id, "chain", _plain(inputs),
                    name=_run_name(serialized, kwargs, "chain"))

    def on_chat_model_start(self, serialized: Optional[dict[str, Any]],
                            messages: list[list[BaseMessage]],
                            *, run_id: UUID, parent_run_id: Optional[UUID] = None,
                            metadata: Optional[dict[str, Any]] = None, **kwargs: Any) -> None:
        self._start_model(run_id, parent_run_id, "chat", _plain(messages[0] if messages else []),
                          metadata, kwargs)

    def on_llm_start(self, serialized: Optional[dict[str, Any]], prompts: list[str], *,
                     run_id: UUID, parent_run_id: Optional[UUID] = None,
                     metadata: Optional[dict[str, Any]] = None, **kwargs: Any) -> None:
        self._start_model(run_id, parent_run_id, "text_completion",
                          prompts[0] if len(prompts) == 1 else prompts, metadata, kwargs)

    def on_tool_start(self, serialized: Optional[dict[str, Any]], input_str: str, *, run_id: UUID,
                      parent_run_id: Optional[UUID] = None,
                      inputs: Optional[dict[str, Any]] = None, **kwargs: Any) -> None:
        self._start(run_id, parent_run_id, "execute_tool",
                    _plain(inputs) if inputs is not None else input_str,
                    name=_run_name(serialized, kwargs, "tool"))

    def on_retriever_start(self, serialized: Optional[dict[str, Any]], query: str, *,
                           run_id: UUID, parent_run_id: Optional[UUID] = None,
                           **kwargs: Any) -> None:
        self._start(run_id, parent_run_id, "retrieval", query,
                    name=_run_name(serialized, kwargs, "retriever"))

    # ── ends ──

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, Outcome(output=_plain(outputs)))

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, guarded("langchain model result", read_llm_result, response))

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, Outcome(output=_plain(getattr(output, "content", output))))

    def on_retriever_end(self, documents: Sequence[Document], *, run_id: UUID,
                         **kwargs: Any) -> None:
        self._end(run_id, Outcome(output=_plain(list(documents))))

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, error=error)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, error=error)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, error=error)

    def on_retriever_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, error=error)

    # ── internals ──

    def _start(self, run_id: UUID, parent_run_id: Optional[UUID], operation: str, input: Any,
               *, name: Optional[str] = None, provider: Optional[str] = None,
               model: Optional[str] = None) -> None:
        with self._lock:
            parent = self._runs.get(parent_run_id) if parent_run_id is not None else None
        call = start_call(self._agent, provider=provider, operation=operation, model=model,
                          input=input, parent=parent.task if parent else _FROM_CONTEXT,
                          name=name)
        if call is not None:
            with self._lock:
                self._runs[run_id] = call

    def _start_model(self, run_id: UUID, parent_run_id: Optional[UUID], operation: str,
                     input: Any, metadata: Optional[dict[str, Any]],
                     kwargs: dict[str, Any]) -> None:
        """LangChain names the provider and model in the run's metadata (``ls_provider``,
        ``ls_model_name``) or, for older models, only in the invocation parameters."""
        meta = metadata or {}
        params = kwargs.get("invocation_params") or {}
        model = meta.get("ls_model_name") or params.get("model") or params.get("model_name")
        self._start(run_id, parent_run_id, operation, input, provider=meta.get("ls_provider"),
                    model=model if isinstance(model, str) else None)

    def _end(self, run_id: UUID, outcome: Optional[Outcome] = None,
             error: Optional[BaseException] = None) -> None:
        with self._lock:
            call = self._runs.pop(run_id, None)
        if call is not None:
            call.end(outcome, error)


def read_llm_result(response: LLMResult) -> Outcome:
    """Output, model and tokens of an ``LLMResult``: from the message's ``usage_metadata``
    (every current chat model) or else the provider's ``llm_output`` token usage."""
    generation = response.generations[0][0] if response.generations and response.generations[0] \
        else None
    message = getattr(generation, "message", None)
    llm_output = response.llm_output or {}
    meta = getattr(message, "response_metadata", None) or {}
    model = meta.get("model_name") or meta.get("model") or llm_output.get("model_name")
    return Outcome(output=_message_output(message) if message is not None
                   else getattr(generation, "text", None),
                   model=model if isinstance(model, str) else None,
                   tokens=_usage(getattr(message, "usage_metadata", None), llm_output))


def _usage(metadata: Optional[UsageMetadata], llm_output: dict[str, Any]
           ) -> Optional[dict[str, Optional[int]]]:
    if metadata:
        inputs = metadata.get("input_token_details") or {}
        outputs = metadata.get("output_token_details") or {}
        return token_counts(input_tokens=metadata.get("input_tokens"),
                            output_tokens=metadata.get("output_tokens"),
                            cache_read_input_tokens=inputs.get("cache_read"),
                            cache_creation_input_tokens=inputs.get("cache_creation"),
                            reasoning_output_tokens=outputs.get("reasoning"))
    usage = llm_output.get("token_usage") or llm_output.get("usage")
    if not isinstance(usage, dict):
        return None
    return token_counts(input_tokens=usage.get("prompt_tokens", usage.get("input_tokens")),
                        output_tokens=usage.get("completion_tokens", usage.get("output_tokens")))


def _message_output(message: Any) -> Any:
    if getattr(message, "tool_calls", None):
        return {"content": message.content, "tool_calls": _plain(message.tool_calls)}
    return message.content


def _run_name(serialized: Optional[dict[str, Any]], kwargs: dict[str, Any], default: str) -> str:
    if kwargs.get("name"):
        return str(kwargs["name"])
    serialized = serialized or {}
    ids = serialized.get("id")
    return str(serialized.get("name") or (ids[-1] if isinstance(ids, list) and ids else default))


def _message(message: Any, depth: int) -> dict[str, Any]:
    """A message as a chat shows it: role and content, and the tool calls an AI message makes
    or the call a tool message answers."""
    plain = {"role": message.type, "content": _plain(message.content, depth + 1)}
    for name in ("tool_calls", "tool_call_id", "name"):
        value = getattr(message, name, None)
        if value:
            plain[name] = _plain(value, depth + 1)
    return plain


def _plain(value: Any, depth: int = 0) -> Any:
    """Messages and documents as small dicts, containers walked (to a bounded depth): what a
    reader of the task wants, not LangChain's full object dumps."""
    if depth > 8:
        return value
    if hasattr(value, "page_content"):
        return {"page_content": value.page_content, "metadata": getattr(value, "metadata", None)}
    if hasattr(value, "content") and hasattr(value, "type"):
        return _message(value, depth)
    if callable(getattr(value, "to_messages", None)):  # a prompt value, between chain steps
        return [_plain(message, depth + 1) for message in value.to_messages()]
    if isinstance(value, dict):
        return {k: _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in value]
    return value
