"""Adapters of `ports/files.py`: where answers too big to return are dropped."""
