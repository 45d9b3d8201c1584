# The README's two commands: `make run` and `make test`.
# Each sets up what it needs (a virtualenv with the pinned packages) first.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# pytest-xdist workers for the suite: one per core; 0 runs it in this process.
TEST_WORKERS ?= auto

.PHONY: run test test-fallback engine lint format install clean

$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c requirements.lock -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

## Build SecantusDB's Rust server once per machine (cached outside the clone).
engine: $(STAMP)
	$(PY) manage.py ensure_engine

## Set up, then run Marquee with demo data on the embedded database.
run: engine
	$(PY) manage.py serve $(ARGS)

## Set up, then lint and run the whole test suite (browser tests included).
test: engine
	scripts/ensure-chromium
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m pytest -n $(TEST_WORKERS) $(ARGS)

## The fallback's conformance: shop, booking and races on the Python server.
test-fallback: $(STAMP)
	MARQUEE_DB_ENGINE=python $(PY) -m pytest tests/shop tests/booking tests/concurrency -n $(TEST_WORKERS) $(ARGS)

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

clean:
	rm -rf $(VENV) var
