#!/usr/bin/env bash
# Runs the whole suite with the venv's python ($1). The PostgreSQL adapter's tests
# start their own throwaway server on loopback (tests/pg_server.py) and stop it at exit.
# ruff and mypy run inside the suite (tests/test_lint.py), from the same venv.
set -euo pipefail
PY=${1:-.venv/bin/python}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec "$PY" -m pytest -q -p no:cacheprovider --durations=15
