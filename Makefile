# Two commands for a fresh machine: `make run` and `make test`. Each builds the venv it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint demo bench clean chromium node-deps sdk-wheel

$(STAMP): pyproject.toml sdk/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]" -e ./sdk
	touch $(STAMP)

# The SDK wheel the server's /simple/ index serves, built from sdk/ (never committed); `sam build`
# packs it into the core layer from the same place.
SDK_DIST := layers/core/bench_core/sdk_dist
sdk-wheel: $(SDK_DIST)/.built
$(SDK_DIST)/.built: $(STAMP) sdk/pyproject.toml $(shell find sdk/bench -name '*.py' -o -name py.typed)
	@rm -rf $(SDK_DIST) && $(BIN)/pip wheel --quiet --no-deps --no-build-isolation -w $(SDK_DIST) ./sdk
	@touch $@

# `make run PORT=8001 HOST=0.0.0.0`: another port or address (HOST empty: the default, 127.0.0.1).
PORT ?= 8000
HOST ?= 127.0.0.1
run: $(STAMP) sdk-wheel
	$(BIN)/bench-server serve --port $(PORT) $(if $(HOST),--host $(HOST))

# Browser tests use Debian's Chromium; install it when we can (root), else they are skipped.
chromium:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || echo "note: chromium not installed; browser tests will be skipped"; }

# The JavaScript end-to-end tests' npm packages, each set from its lockfile, where npm is: the Vercel
# AI SDK (tests/e2e/node) and the two lines of Mastra (tests/e2e/mastra/v0, v1).
NODE_DIRS := tests/e2e/node tests/e2e/mastra/v0 tests/e2e/mastra/v1
node-deps:
	@command -v npm >/dev/null 2>&1 || exit 0; for dir in $(NODE_DIRS); do \
	  [ -f $$dir/node_modules/.package-lock.json ] || (cd $$dir && npm ci --no-audit --no-fund --silent) \
	  || echo "note: npm ci failed in $$dir; its Node test will install or skip"; done

test: $(STAMP) chromium node-deps
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

# With `make run` going in another terminal: two example agents fill a profile in seconds.
demo: $(STAMP)
	@KEY=$$($(BIN)/bench-server keys create --login demo --name demo) && \
	  export BENCH_KEY=$$KEY BENCH_ENDPOINT=$${BENCH_ENDPOINT:-http://127.0.0.1:8000} && \
	  $(BIN)/python examples/research_agent.py --runs 20 && \
	  $(BIN)/python examples/tool_agent.py --runs 20 && \
	  echo "open $$BENCH_ENDPOINT/u/demo/research-agent and $$BENCH_ENDPOINT/u/demo/tool-agent"

bench: $(STAMP)
	$(BIN)/python tests/perf/ingest.py
	$(BIN)/python tests/perf/sdk_overhead.py

clean:
	rm -rf $(VENV) .bench $(SDK_DIST)
