"""The composition root (`adapters.py`) and what only entry points use: Lambda instrumentation,
SnapStart hooks, the garbage collector held off, the session secret resource."""
