"""The test suite. Imported before any conftest or test module, so it claims the root logger
first: a handler that writes nothing, which makes every later `logging.basicConfig` a no-op. The
MCP SDK calls one when `bench_core.mcp` is imported (for the local server's console), and its
stderr handler printed the ERROR lines of moto's background threads across the progress dots
of a passing run. Records still reach pytest's own capture, shown with the test that fails."""

import logging

logging.getLogger().addHandler(logging.NullHandler())
