#!/usr/bin/env bash
# Create .venv (Python 3.11) and install crawlbelt with its pinned dependencies, the test, train, spark,
# classify and export extras; quick when already done. engine: spark also needs Java 17, which this checks for.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.crawlbelt-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  # uv installs the same pins in about two thirds of pip's time here (docs/design.md, "The test suite"). It
  # reads none of pip's settings: the extra folders of wheels that pip is given (torch's CPU build) are passed on.
  .venv/bin/python -m pip install --quiet --isolated --upgrade pip uv==0.13.9
  links=()
  for folder in ${PIP_FIND_LINKS:-}; do links+=(--find-links "$folder"); done
  # fasttext-predict built here runs language ID 1.7 times faster than its wheel (docs/benchmarks.md);
  # the wheel where there is no C++ compiler.
  no_binary=()
  if command -v g++ >/dev/null; then no_binary=(--no-binary fasttext-predict); fi
  # Compiled now: this machine's Python writes no bytecode as it imports (PYTHONDONTWRITEBYTECODE).
  .venv/bin/uv pip install --quiet --python .venv/bin/python --compile-bytecode "${links[@]}" "${no_binary[@]}" \
    -e ".[test,train,spark,classify,export]"
  touch "$stamp"
fi
# fastText's own trainer (train-classifier --kind fasttext, pipeline/train_classifier.py). The fasttext package
# is the module `fasttext` as fasttext-predict is, so it goes in a folder of its own that only the command's
# child process reads. It builds from source (about a minute, needs g++).
if [ ! -d .venv/fasttext-trainer/fasttext ] && command -v g++ >/dev/null; then
  .venv/bin/uv pip install --quiet --python .venv/bin/python --no-deps --target .venv/fasttext-trainer fasttext==0.9.3
fi
# MosaicML Streaming, only to read back (tests) and time against (benchmarks/bench_export.py) the MDS export,
# which needs no library: streaming 0.13 pins numpy<2.2 and transformers<5, so it cannot be an extra; its
# pure-Python code runs on ours from a folder of its own (tests/mds_reader.py). Without its vision module
# (torchvision, whose wheel here needs CUDA), which the reader loads around.
if [ ! -d .venv/mds-reader/streaming ]; then
  .venv/bin/uv pip install --quiet --python .venv/bin/python --no-deps --target .venv/mds-reader \
    mosaicml-streaming==0.13.0 python-snappy==0.7.3 cramjam==2.14.0 brotli==1.2.1 zstd==1.5.7.2 xxhash==3.6.0 \
    catalogue==2.0.10 pillow==12.0.0
fi
if ! command -v java >/dev/null; then
  echo "setup: no java on PATH: engine: spark (and its tests) need Java 17: apt install openjdk-17-jre-headless" >&2
fi
