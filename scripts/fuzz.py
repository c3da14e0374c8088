#!/usr/bin/env python3
"""Fuzz the reader and the per-document stages for longer than CI does.

    python scripts/fuzz.py [EXAMPLES]        (default 20000; random, not the derandomized CI examples)

Runs tests/test_fuzz.py with FUZZ_EXAMPLES=EXAMPLES and FUZZ_RANDOM=1 and prints hypothesis's statistics;
a failing input is shrunk and printed by hypothesis.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    examples = argv[0] if argv else "20000"
    env = {**os.environ, "FUZZ_EXAMPLES": examples, "FUZZ_RANDOM": "1"}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--hypothesis-show-statistics",
        str(ROOT / "tests" / "test_fuzz.py"),
    ]
    return subprocess.call(command, cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
