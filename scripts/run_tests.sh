#!/usr/bin/env bash
# Runs the whole suite with the venv's python ($1), in two parts: everything but the
# browser walks on both cores (pytest-xdist, -n 2), then the Chromium walks one at a
# time (each starts a Streamlit server and a browser: two at once would contend for
# the same two cores). Both parts always run; the exit status fails if either fails.
# The PostgreSQL adapter's tests start their own throwaway server on loopback
# (tests/pg_server.py; one a worker) and stop it at exit. ruff and mypy run inside the
# suite (tests/test_lint.py), from the same venv.
set -uo pipefail
PY=${1:-.venv/bin/python}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
"$PY" -m pytest -q -p no:cacheprovider --durations=15 -n 2 -m "not browser"
first=$?
"$PY" -m pytest -q -p no:cacheprovider --durations=15 -m browser
second=$?
exit $(( first != 0 ? first : second ))
