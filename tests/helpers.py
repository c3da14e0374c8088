"""Shared test helpers: the repository's paths, the command line as a subprocess, ledger tables, the Spark skip
(needs_spark), two runs' output compared byte for byte, and the CRAWL_SAMPLE pages from shared/crawl_sample.md. (Fixtures and markers are in conftest.py,
which pytest loads itself and which is not meant to be imported.)"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from stages.ledger import LEDGER_COLUMNS

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"
FIXTURES = ROOT / "tests" / "fixtures"
SHARED = ROOT.parent / "shared"  # real crawls beside the repository; tests that read it skip without it


def spark_missing() -> str | None:
    """Why Spark cannot run here, in one line, or None."""
    if shutil.which("java") is None:
        return "Spark needs a Java runtime (17): apt install openjdk-17-jre-headless, or set JAVA_HOME"
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed: .venv/bin/python -m pip install -e '.[spark]'"
    return None


# The JVM flags of the tests' Spark: a test's JVM lives for seconds on a few hundred records, and on 2 cores the
# optimizing compiler's threads and the parallel collector cost more than they give back (a Spark run of the
# sample: 39 CPU-s with the JVM's defaults, 27 with these). They change how fast the JVM is, not what Spark does.
SPARK_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

# Spark's classes as loaded and verified by a first JVM, which later JVMs map instead of loading them again (class
# data sharing): 3 CPU-s and 3 s less per Spark run of the sample. Built once per venv by conftest; a JVM whose
# class path or Java differs from the archive's (the standalone harness's, with its own conf folder) goes on
# without it, silently (-Xlog:cds=off).
SPARK_CLASS_ARCHIVE = Path(sys.prefix) / "spark-classes.jsa"


def spark_jvm_options() -> str:
    """SPARK_JVM_OPTIONS, with the class archive once it is built."""
    if not SPARK_CLASS_ARCHIVE.exists():
        return SPARK_JVM_OPTIONS
    return f"{SPARK_JVM_OPTIONS} -XX:SharedArchiveFile={SPARK_CLASS_ARCHIVE} -Xlog:cds=off -Xlog:cds+dynamic=off"


def build_spark_class_archive() -> None:
    """SPARK_CLASS_ARCHIVE from a small local Spark job, which the JVM writes as it exits; nothing if it fails
    (the tests' JVMs then load their classes as usual)."""
    if SPARK_CLASS_ARCHIVE.exists() or spark_missing() is not None:
        return
    building = SPARK_CLASS_ARCHIVE.with_name(f"{SPARK_CLASS_ARCHIVE.name}.{os.getpid()}")
    job = (
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.master('local[1]').getOrCreate()\n"
        "spark.range(10).rdd.map(lambda x: x).count()\n"
        "spark.stop()\n"
    )
    env = {**os.environ, "SPARK_SUBMIT_OPTS": f"{SPARK_JVM_OPTIONS} -XX:ArchiveClassesAtExit={building} -Xlog:cds=off"}
    try:
        subprocess.run([sys.executable, "-c", job], env=env, capture_output=True, timeout=180)
        if building.exists():
            building.replace(SPARK_CLASS_ARCHIVE)  # whole or not at all: another session may read it
    except subprocess.TimeoutExpired:
        pass
    finally:
        building.unlink(missing_ok=True)


needs_spark = pytest.mark.skipif(spark_missing() is not None, reason=str(spark_missing()))


def cli(*args: str, cwd: Path = ROOT, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m pipeline ARGS` in a subprocess, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )


def run_here(config: Path | str, out: Path, settings=(), inputs: list[str] | None = None) -> dict:
    """The belt as `python -m pipeline run CONFIG [--input ...] --output OUT --set SETTING...` runs it, but in
    this process: on its Ray (conftest's run_here fixture starts the session's first) or, for engine: spark, on
    its one embedded Spark (started by the first such run with its spark settings; later runs share it).
    Returns the manifest; a failed run raises its error. For tests of a run's output, not of its command line:
    it skips starting and stopping an engine, most of a subprocess run's 15 s here."""
    from pipeline import belt
    from pipeline.config.load import load_config

    return belt.run(load_config(str(config), overrides=list(settings), inputs=inputs, output=str(out)))


# The settings of every Spark run of the fixture crawl and of the Ray run it is compared with (conftest's
# fixture_crawl_on_ray). A loaded machine must not turn a slow page into extract:timeout on one engine only.
SPARK_SETTINGS = ["extract.timeout_s=120", "packing.seq_len=64"]


# The output folders whose bytes do not depend on the engine, the machines, or a run interrupted and resumed.
FINAL = ("docs", "rejects", "dedup_index", "tokens")


def output_files(out: Path) -> dict[str, bytes]:
    """Every file under OUT's docs/, rejects/ and tokens/ (tokenizer.json too), by its path in OUT."""
    return {
        str(p.relative_to(out)): p.read_bytes()
        for folder in FINAL
        for p in sorted((out / folder).rglob("*"))
        if p.is_file()
    }


def assert_same_output(reference: Path, out: Path) -> None:
    """OUT holds the same docs/, rejects/ and token files as REFERENCE, byte for byte."""
    expected, found = output_files(reference), output_files(out)
    assert sorted(expected) == sorted(found)
    assert any(name.startswith("docs/") for name in expected) and "tokens/tokenizer.json" in expected
    different = [name for name in expected if expected[name] != found[name]]
    assert not different, f"differ between {reference} and {out}: {different}"


def assert_complete(out: Path) -> dict:
    """OUT's manifest, once checked: the run completed and every invariant it records holds."""
    manifest = json.loads((out / "manifest.json").read_text())
    invariants = manifest["invariants"]
    assert manifest["complete"] and invariants and all(invariants.values()), invariants
    return manifest


def ledger_table(texts, **extra_columns) -> pa.Table:
    """A batch as stages see it: `text`, the ledger columns all null (alive), plus any extra columns."""
    columns = {"text": pa.array(texts, pa.string())}
    for name in LEDGER_COLUMNS:
        columns[name] = pa.nulls(len(texts), pa.string())
    for name, values in extra_columns.items():
        columns[name] = values if isinstance(values, pa.Array) else pa.array(values)
    return pa.table(columns)


# The seven dry-run pages, exact strings (page 4 is one phrase repeated 12 times).
CRAWL_SAMPLE = [
    "The river carries sand and small stones from the mountains to the sea. Over thousands of years that sand settles at the mouth of the river and builds a wide, flat delta. Farmers have grown rice on these deltas for centuries, because the soil is rich and the water is close. When the river floods, it brings new soil with it, which is why the land stays fertile.",
    "Le fleuve transporte le sable et les pierres des montagnes vers la mer. Avec le temps, le sable se dépose à l'embouchure et forme un delta. Les paysans cultivent le riz dans les deltas depuis des siècles, car la terre est riche et l'eau est proche.",
    "Home | About us | Contact | Privacy policy | Log in",
    "the river carries sand and small stones from the mountains to the sea. Over thousands of years that sand settles at the mouth of the river and builds a wide, flat delta. Farmers have grown rice on these deltas for centuries, because the soil is rich and the water is close. When the river floods, it brings new soil with it, which is why the land stays fertile.",
    " ".join(["#deal #sale #win the best price today"] * 12),
    "The river carries sand and small stones from the mountains to the sea. Over thousands of years that sand settles at the mouth of the river and builds a wide, flat delta. Farmers have grown rice on these deltas for hundreds of years, because the soil is rich and the water is close. When the river floods, it brings new soil with it, which is why the land stays fertile. Read more on our site.",
    "Stars are born inside cold clouds of gas and dust. When part of a cloud becomes dense enough, gravity pulls it together faster than the gas can push back. The centre heats up as it shrinks, and once it reaches about ten million degrees, hydrogen begins to fuse into helium. That is the moment a star switches on, and it will shine with that fuel for millions or billions of years.",
]
