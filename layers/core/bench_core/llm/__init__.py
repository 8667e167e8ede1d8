"""The LLM port's adapters (the port: `ports/llm.py`): `openai_compat.py` and `bedrock.py`."""
