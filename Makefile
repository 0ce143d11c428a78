# paperwatch — the two commands of the README are `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck check bench clean clean-data install browser

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

## Ingest seeds/ into data/paperwatch.duckdb and write this week's report to reports/out/.
run: $(STAMP)
	$(BIN)/paperwatch run

## Run the whole test suite (offline; starts what it needs).
test: $(STAMP)
	$(BIN)/python -m pytest

## Install headless Chromium (Debian package `chromium`) for the report's browser test.
## As root it runs apt-get; otherwise it says what to run. Without it that test is skipped.
browser:
	@if command -v chromium >/dev/null 2>&1; then \
		echo "chromium: $$(command -v chromium)"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; \
	else \
		echo "Chromium is missing: run 'sudo apt-get install chromium' (the browser test is skipped without it)"; \
	fi

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

check: lint typecheck test

## Remove caches and the written reports (reports/out/). The database in data/ is kept.
clean:
	rm -rf reports/out .pytest_cache .mypy_cache .ruff_cache
	find . -path ./.venv -prune -o -type d -name __pycache__ -exec rm -rf {} +

## DELETES THE DATABASE: data/ (paperwatch.duckdb, its snapshot, log and Prefect home).
## Everything loaded, quarantine releases and the send history are lost; the listings stay.
clean-data:
	rm -rf data
