"""The in-memory adapter of the Store port: plain Python structures behind one lock, for tests
and throwaway servers (`BENCH_STORE=memory`); `MemoryStore` in `store.py`."""
