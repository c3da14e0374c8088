#!/usr/bin/env bash
# The GPU check: the train stage (throughput and MFU at 125M and 350M, a checkpoint round trip, a CLI run on
# cuda) and the transformers scorer's documents per second.
cd "$(dirname "$0")/.." && PYTHONUNBUFFERED=1 PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}" exec python3 scripts/gpu_check.py "$@"
