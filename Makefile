# Two commands for a fresh machine: `make run` and `make test`. Each builds the venv it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint demo bench clean

$(STAMP): pyproject.toml sdk/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]" -e ./sdk
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/bench-server serve

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python benchmarks/perf/ingest.py

clean:
	rm -rf $(VENV) .bench
