#!/usr/bin/env bash
# Runs the whole suite with the venv's python ($1). A throwaway PostgreSQL server
# on loopback is started for the PostgreSQL adapter's tests and stopped afterwards.
set -euo pipefail
PY=${1:-.venv/bin/python}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
if [ -f scripts/pg_throwaway.sh ] && [ "${MEMWB_SKIP_POSTGRES:-0}" != 1 ]; then
  source scripts/pg_throwaway.sh
  pg_throwaway_start
  trap pg_throwaway_stop EXIT
fi
"$PY" -m pytest -q -p no:cacheprovider
