"""The SQLite adapter of the Store port: the embedded default."""
