#!/usr/bin/env bash
# Set up if needed, then run the whole test suite. CRAWLBELT_TEST_WORKERS=N runs its tests side by side on N
# pytest-xdist workers (the tests that start a cluster stay on one worker, one after another).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -n "${CRAWLBELT_TEST_WORKERS:-0}" --dist loadgroup "$@"
