# Two commands for a fresh machine: `make run` and `make test`. Each builds the venv it needs:
# `make run` what the server needs (its dependencies and the SDK), `make test` adds the dev extra
# (test tools, linter, type checker). A stamp per set says which one the venv holds.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
STAMP := $(VENV)/.installed

.PHONY: run test lint demo bench clean chromium node-deps sdk-wheel

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Lambda's packages at the exact versions `sam build` installs (the core layer's and each
# function's requirements.txt) are pip constraints here, so the tests run the very versions that
# deploy (tests/aws/test_pinned_layer.py checks the venv against them).
PINS := layers/core/requirements.txt $(sort $(wildcard functions/*/requirements.txt))
CONSTRAINTS := $(foreach pins,$(PINS),-c $(pins))

$(RUN_STAMP): pyproject.toml sdk/pyproject.toml $(PINS) | $(BIN)/python
	$(BIN)/pip install --quiet $(CONSTRAINTS) -e . -e ./sdk
	touch $@

# The dev set holds the run set, so it stamps both.
$(STAMP): pyproject.toml sdk/pyproject.toml $(PINS) | $(BIN)/python
	$(BIN)/pip install --quiet $(CONSTRAINTS) -e ".[dev]" -e ./sdk
	touch $(RUN_STAMP) $@

# The SDK wheel the server's /simple/ index serves, built from sdk/ (never committed). Installing
# the server builds it (setup.py: into the wheel, or here for an editable install); this rebuilds
# it when sdk/ changes. `sam build` packs it into the core layer from the same place.
SDK_DIST := layers/core/bench_core/sdk_dist
SDK_VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"$$/\1/p' sdk/bench/_version.py)
SDK_WHEEL := $(SDK_DIST)/bench_observe-$(SDK_VERSION)-py3-none-any.whl
sdk-wheel: $(SDK_WHEEL)
$(SDK_WHEEL): sdk/pyproject.toml $(shell find sdk/bench -name '*.py' -o -name py.typed) | $(RUN_STAMP)
	@rm -rf $(SDK_DIST) && $(BIN)/pip wheel --quiet --no-deps -w $(SDK_DIST) ./sdk
	@test -f $@ || { echo "the SDK wheel built is not $@" >&2; exit 1; }

# `make run PORT=8001 HOST=0.0.0.0`: another port or address (HOST empty: the default, 127.0.0.1).
PORT ?= 8000
HOST ?= 127.0.0.1
run: $(RUN_STAMP) sdk-wheel
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

# Two workers (pytest-xdist), a test file to each at a time (a file's module-scoped servers start
# once), in collection order, where the slow tests come first (tests/conftest.py): the longest
# file starts at once instead of running alone at the end.
test: $(STAMP) chromium node-deps
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

# With `make run` going in another terminal, given the same PORT and HOST: two example agents fill
# two profiles in seconds (DEMO_RUNS runs each), read back before their URLs are printed. No Bench
# there, or runs that did not arrive: a message saying which, and exit 1 (scripts/demo.py).
DEMO_RUNS ?= 20
demo: $(RUN_STAMP)
	@$(BIN)/python scripts/demo.py --host "$(HOST)" --port $(PORT) --runs $(DEMO_RUNS)

# The benchmarks that compare side by side (tests/perf/run_all.py), a few minutes in all, their ratios
# gathered at the end; `make bench BENCH_ARGS=--full` runs each at its own size (far longer).
BENCH_ARGS ?=
bench: $(STAMP)
	$(BIN)/python tests/perf/run_all.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .bench $(SDK_DIST)
