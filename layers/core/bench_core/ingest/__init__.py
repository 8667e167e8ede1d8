"""Ingest, the one write path: the `/ingest` wire format, OTLP decoding and mapping, and the pipeline
every source calls."""
