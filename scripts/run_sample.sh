#!/usr/bin/env bash
# Set up if needed, then run the belt on the bundled fixture crawl with an embedded Ray.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pipeline run configs/local.yaml "$@"
