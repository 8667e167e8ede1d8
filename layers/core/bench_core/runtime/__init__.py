"""Configuration, the composition root (`adapters.py`), logging and Lambda instrumentation."""
