"""Bench's domain library: one codebase for the AWS functions and the single-machine server."""

__version__ = "0.1.0"
