#!/usr/bin/env bash
# Set up if needed, then run the whole test suite: its tests side by side, one worker per core (at most 4: each
# test starts Ray or Spark processes of its own). CRAWLBELT_TEST_WORKERS=0 runs them one after another.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cores=$(nproc)
workers=${CRAWLBELT_TEST_WORKERS:-$((cores < 4 ? cores : 4))}
exec .venv/bin/python -m pytest -n "$workers" --dist loadgroup "$@"
