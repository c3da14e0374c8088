"""The bundled sample on an embedded Spark, its Python workers forked from PySpark's daemon (Spark's default,
crawlbelt's since issue 26) or each started as a Python of its own (`spark.python.use.daemon: false`, crawlbelt's
setting from issue 23 to issue 26), and on an embedded Ray for reference; wall seconds of the whole command:

    .venv/bin/python benchmarks/bench_spark_workers.py [--repeats 3]

The runs alternate, so that a busy moment of the machine falls on each setting alike; medians are printed.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SETTINGS: dict[str, dict] = {
    "spark, daemon": {"engine": "spark", "spark": {"conf": {"spark.python.use.daemon": "true"}}},
    "spark, a Python per worker": {"engine": "spark", "spark": {"conf": {"spark.python.use.daemon": "false"}}},
    "ray": {"engine": "ray"},
}


def config_file(folder: Path, changes: dict) -> Path:
    """configs/local.yaml with CHANGES, in the configs folder (its paths are relative to it)."""
    config = yaml.safe_load((ROOT / "configs" / "local.yaml").read_text())
    for key, value in changes.items():
        config[key] = {**config[key], **value} if isinstance(value, dict) else value
    path = ROOT / "configs" / f".bench-{folder.name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def run(config: Path, out: Path) -> float:
    started = time.perf_counter()
    command = [sys.executable, "-m", "pipeline", "run", str(config), "--output", str(out)]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        sys.exit(result.stderr[-3000:])
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        configs = {
            name: config_file(Path(tmp) / f"c{i}", changes) for i, (name, changes) in enumerate(SETTINGS.items())
        }
        try:
            walls: dict[str, list[float]] = {name: [] for name in SETTINGS}
            for repeat in range(args.repeats):
                for name, config in configs.items():
                    walls[name].append(run(config, Path(tmp) / f"out-{repeat}-{len(walls[name])}-{config.stem}"))
        finally:
            for config in configs.values():
                config.unlink()
    daemon = statistics.median(walls["spark, daemon"])
    for name, values in walls.items():
        median = statistics.median(values)
        print(f"{name:28s} median {median:6.1f} s  ({', '.join(f'{v:.1f}' for v in values)}), {median / daemon:.2f}x")


if __name__ == "__main__":
    main()
