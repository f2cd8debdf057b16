# The two commands of the README. Both set up everything they need in .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench screenshots setup setup-test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

setup: $(BIN)/python
	$(BIN)/pip install --quiet -e .

setup-test: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	@# docker-compose (Debian package) validates docker-compose.yml without a daemon
	@command -v docker-compose >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    (apt-get install -y -qq docker-compose >/dev/null 2>&1 || \
	     (apt-get update -qq && apt-get install -y -qq docker-compose >/dev/null)); } || \
	  echo "note: docker-compose not installed; the compose validation test will skip"
	@# Debian's Chromium for the dashboard's browser tests (Playwright drives it by its path)
	@command -v chromium >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    (apt-get install -y -qq chromium >/dev/null 2>&1 || \
	     (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)); } || \
	  echo "note: chromium not installed; the dashboard browser tests need it"

demo: setup
	$(BIN)/crawl-ledger demo

# two pytest-xdist workers, a test file each at a time (module fixtures stay shared);
# TEST_WORKERS=0 runs the suite in this process, one test after the other
TEST_WORKERS ?= 2

test: setup-test
	$(BIN)/lint-imports --no-cache
	$(BIN)/pytest --numprocesses $(TEST_WORKERS) --dist loadfile

# the README's dashboard images, from the browser tests
screenshots: setup-test
	LEDGER_SCREENSHOTS=docs/screenshots $(BIN)/pytest -q tests/e2e/test_dashboard.py

bench: setup-test
	$(BIN)/python bench/crawl_bench.py
	$(BIN)/python bench/memory_bench.py
	$(BIN)/python bench/extraction_bench.py
	$(BIN)/python bench/ledger_bench.py
	$(BIN)/python bench/relay_bench.py
	$(BIN)/python bench/distributed_bench.py
	$(BIN)/python bench/analytics_bench.py
	$(BIN)/python bench/api_bench.py
	$(BIN)/python bench/dashboard_bench.py
	$(BIN)/python bench/search_bench.py
	$(BIN)/python bench/growth_bench.py --sizes 100000
	$(BIN)/python bench/growth_storage.py
