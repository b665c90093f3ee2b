#!/usr/bin/env bash
# Runs the whole suite with the venv's python ($1) on both cores (pytest-xdist, -n 2).
# The Chromium walks are one xdist group (tests/conftest.py), so --dist loadgroup
# gives them all to one worker, one at a time (each starts a Streamlit server and a
# browser: two at once would contend for the same two cores), while the other worker
# runs the rest; a walk mostly waits on its page, so the two overlap well.
# The PostgreSQL adapter's tests start their own throwaway server on loopback
# (tests/pg_server.py; one a worker) and stop it at exit. ruff and mypy run inside the
# suite (tests/test_lint.py), from the same venv.
set -uo pipefail
PY=${1:-.venv/bin/python}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec "$PY" -m pytest -q -p no:cacheprovider --durations=25 -n 2 --dist loadgroup
