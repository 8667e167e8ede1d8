"""The Embedder port's adapters (the port: `ports/embed.py`): `tfidf.py` offline, `bedrock.py` on
AWS."""
