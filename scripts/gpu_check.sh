#!/usr/bin/env bash
# The train stage's GPU check (throughput and MFU at 125M and 350M, a checkpoint round trip, a CLI run on cuda).
cd "$(dirname "$0")/.." && PYTHONUNBUFFERED=1 PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}" exec python3 scripts/gpu_check.py "$@"
