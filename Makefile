# The two commands of the README:
#   make demo   build the demo database if absent and open the workbench on it
#   make test   run the whole test suite (make test-fast: the quick tier)
# Both create .venv and install everything into it on a fresh machine.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DEMO_DB ?= sample_data/out/demo.duckdb
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: demo test test-fast venv system-deps lint bench clean

venv: $(STAMP)

# torch==2.13.0 first and explicitly: anything else pulls a multi-GB CUDA build.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Debian packages the tests need (chromium for the browser test, PostgreSQL for
# the PostgreSQL adapter). Installed only when absent.
system-deps:
	bash scripts/system_deps.sh

demo: $(STAMP)
	$(PY) -m memory_core.cli demo --db $(DEMO_DB) --if-absent
	$(PY) -m memory_core.cli ui --db $(DEMO_DB)

test: $(STAMP) system-deps
	bash scripts/run_tests.sh $(PY)

# The quick tier (< 3 min on 2 cores): unit tests, conformance on in-memory and SQLite,
# AppTest pages; no browser, no PostgreSQL, no MiniLM, nothing marked slow; on both
# cores (pytest-xdist: each test in one of two worker processes).
test-fast: $(STAMP)
	MEMWB_SKIP_POSTGRES=1 $(PY) -m pytest -q -p no:cacheprovider --durations=10 -n 2 \
		-m "not browser and not model and not postgres and not slow and not full"

lint: $(STAMP)
	$(VENV)/bin/ruff check memory_core app sample_data tests bench
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) -m bench.run_all

clean:
	rm -rf $(VENV) sample_data/out
