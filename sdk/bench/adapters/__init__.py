"""Adapters that record provider and framework calls as Bench tasks with token evidence.

- ``bench.adapters.openai.wrap_openai(client, agent)``: chat completions (streamed too),
  responses, embeddings; sync and async clients.
- ``bench.adapters.anthropic.wrap_anthropic(client, agent)``: ``messages.create`` and
  ``messages.stream``; sync and async clients.
- ``bench.adapters.langchain.BenchCallbackHandler(agent)``: chains, model calls, tools and
  retrievers (needs ``langchain-core``).

Each call becomes a task (a subtask of the task running where it is made) with the provider,
model, token counts and latency; the server prices the tokens from its price table, shown apart
from what the owner reports with ``t.cost()``. Wrapped calls return and raise exactly what they
would without Bench. Nothing here is imported by ``import bench``; the provider packages are
never imported by the wrappers themselves.
"""
