#!/usr/bin/env bash
# Set up if needed, then run the whole test suite side by side on two pytest-xdist workers, or on
# CRAWLBELT_TEST_WORKERS (0: one after another, in this process). The tests that start a cluster stay on one
# worker, one after another, and so do test_train.py's torchruns.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -n "${CRAWLBELT_TEST_WORKERS:-2}" --dist loadgroup "$@"
