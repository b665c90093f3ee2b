#!/usr/bin/env bash
# Runs the whole suite with the venv's python ($1) on both cores (pytest-xdist, -n 2).
# With --dist loadgroup, tests/conftest.py's scheduler makes the Chromium walks one
# unit: one worker runs them one at a time (each starts a Streamlit server and a
# browser: two at once would contend for the same two cores) while the other worker
# runs the rest.
# The PostgreSQL adapter's tests start their own throwaway server on loopback
# (tests/pg_server.py; one a worker) and stop it at exit. ruff and mypy run inside the
# suite (tests/test_lint.py), from the same venv.
set -uo pipefail
PY=${1:-.venv/bin/python}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec "$PY" -m pytest -q -p no:cacheprovider --durations=25 -n 2 --dist loadgroup
