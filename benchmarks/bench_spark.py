"""crawlbelt on Spark against crawlbelt on Ray (issue 14), same data, same 2 cores, in one run each:

    .venv/bin/pip install -e ".[bench]"
    .venv/bin/python benchmarks/bench_spark.py filter               # the filter pass over ../shared/realhtml's WARCs
    .venv/bin/python benchmarks/bench_spark.py near --docs 100000   # near dedup on a smaller corpus
    .venv/bin/python benchmarks/bench_spark.py near                 # the 1M-document corpus, all four engines
    .venv/bin/python benchmarks/bench_spark.py near --engines text-dedup-16 --driver-memory 8g

filter: crawlbelt's filter pass (configs/local.yaml's stages) on each engine, documents (HTML records handed to
extraction) per CPU-second of the whole process tree, the engine's start-up included.

near: the dedup pass on benchmarks/bench_dedup.py's synthetic corpus with planted near duplicates: wall,
CPU-seconds, peak memory, recall and precision, for crawlbelt-ray and crawlbelt-spark (its DedupConfig
defaults) and text-dedup's Spark MinHash. The corpus is bench_dedup's (`corpus`, written by `write_corpus` as
the filter pass leaves it: Parquet files of order, id, text, stage); every engine reads those same files.

text-dedup: ChenghaoMou/text-dedup 0.4.0 from PyPI, its `text_dedup/minhash_spark.py` run unchanged by
spark-submit on local[2], in its own venv (.bench/textdedup-venv, made once with this Python; see
TEXTDEDUP_REQUIREMENTS). Its connected components step imports GraphFrames, whose JVM jar comes only from
Maven repositories, out of reach here: benchmarks/textdedup_graphframes.py, installed in that venv as
`graphframes`, does the same algorithm GraphFrames does (large-star / small-star) in DataFrame operations.
Settings: crawlbelt's DedupConfig defaults (threshold 0.7, num_perm 128, 5-word shingles); bands x rows are
text-dedup's own choice for them (datasketch's balanced optimum, 14 x 9), as LSH without a verification step
needs (crawlbelt verifies its candidates, so it uses more bands of fewer rows); min_length 5 (drops none of
these 300-word documents). `--index order` makes its document ids our orders, and `--debug` makes it write
its component assignment, read for each removed document's dup_of: the smallest order in its component,
the document it keeps (crawlbelt's dup_of is likewise its cluster's first document). Spark settings are the
ones the script sets in code (8192 shuffle partitions, edges repartitioned to 4096, output in >= 256 files),
plus local[2], --driver-memory (4g) and log level WARN on the spark-submit line.

text-dedup-16: the same, with 16 wherever the script fixes a partition count (TEXTDEDUP_16_PARTITIONS), the
size of partitioning a 2-core machine wants; it finds exactly the same duplicates.

Measures, for an engine run as a subprocess (`measure`): wall seconds from start to exit; CPU-seconds: user +
system time of the whole process tree (spark-submit's JVM, the Python driver and workers), each process's
own times sampled every 0.1 s (`TreeCpu`: pyspark's workers are never waited for, so getrusage cannot see
them; this process is made a child subreaper, so processes orphaned on the way are still below it); peak
memory: bench_dedup.PeakMemory on the subprocess (summed PSS of its tree, twice a second); recall and
precision: bench_dedup.quality on the removed documents.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_dedup import PeakMemory, corpus, quality, vocabulary, write_corpus  # noqa: E402

REALHTML_WARCS = str(ROOT.parent / "shared" / "realhtml" / "warc" / "*.warc.gz")
TEXTDEDUP_VENV = ROOT / ".bench" / "textdedup-venv"
TEXTDEDUP_REQUIREMENTS = [
    # the imports of text_dedup/minhash_spark.py (numpy, scipy, xxhash, pyspark); pyspark as crawlbelt's
    "pyspark==4.3.0",
    "py4j==0.10.9.9",
    "numpy==2.4.6",
    "scipy==1.17.1",
    "xxhash==4.1.0",
    # datasets, a declared dependency, brings these two; with them pyspark runs the script's length-check UDF
    # through Arrow, as `spark.sql.execution.arrow.pyspark.enabled`, which it sets, asks
    "pyarrow==26.0.1",
    "pandas==3.1.1",
]
# without its declared dependencies, which its Spark script does not import (datasets, unisim, ...)
TEXTDEDUP = "text-dedup==0.4.0"
GRAPHFRAMES_STAND_IN = ROOT / "benchmarks" / "textdedup_graphframes.py"
DEDUP = {"threshold": 0.7, "num_perm": 128, "shingle_words": 5}  # crawlbelt's DedupConfig defaults


# ---------------------------------------------------------------------------------------------
# measuring a subprocess


def measure(command: list[str], env: dict, log: Path) -> dict:
    """Wall seconds, CPU-seconds and peak PSS of `command` and every process it starts."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of the tree stay below us, sampled and reaped
    cpu = TreeCpu()
    started = time.perf_counter()
    with log.open("w") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        memory = PeakMemory(process.pid)
        returncode = process.wait()
    wall = time.perf_counter() - started
    peak_gb = memory.stop()
    _reap_orphans()
    cpu_seconds = cpu.stop()
    if returncode != 0:
        sys.exit(f"bench_spark: {command[0]} exited {returncode}; its output is in {log}")
    return {"wall_seconds": round(wall, 1), "cpu_seconds": round(cpu_seconds, 1), "peak_pss_gb": round(peak_gb, 2)}


class TreeCpu:
    """CPU-seconds (user + system) of all processes below this one over their lifetimes: each process's own
    times read every 0.1 s while it runs, its last reading kept. Not getrusage(RUSAGE_CHILDREN): pyspark's
    daemon ignores SIGCHLD, so its Python workers are never waited for and their time never reaches it.
    A process's last 0.1 s, and a process shorter than that, go uncounted."""

    def __init__(self):
        import psutil

        self.psutil, self.last, self.running = psutil, {}, True
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()

    def sample(self):
        me = self.psutil.Process()
        while self.running:
            for proc in me.children(recursive=True):
                try:
                    times = proc.cpu_times()
                    self.last[(proc.pid, proc.create_time())] = times.user + times.system
                except self.psutil.NoSuchProcess:
                    pass
            time.sleep(0.1)

    def stop(self) -> float:
        self.running = False
        self.thread.join()
        return sum(self.last.values())


def _reap_orphans(grace_seconds: float = 30.0) -> None:
    """Waits for processes of the measured tree that outlived it (reparented to us), then ends any left."""
    import psutil

    started = time.monotonic()
    while (children := psutil.Process().children()) and time.monotonic() < started + grace_seconds:
        time.sleep(0.2)
        for child in children:
            try:
                if child.status() == psutil.STATUS_ZOMBIE:
                    os.waitpid(child.pid, 0)
            except psutil.NoSuchProcess:
                pass
    if time.monotonic() - started > 1:
        print(f"bench_spark: the tree's orphans took {time.monotonic() - started:.0f} s to end", file=sys.stderr)
    for child in psutil.Process().children():
        print(f"bench_spark: ending leftover process {child.pid} ({child.name()})", file=sys.stderr)
        child.kill()
        os.waitpid(child.pid, 0)


# ---------------------------------------------------------------------------------------------
# text-dedup


def textdedup_python() -> Path:
    """The text-dedup venv's interpreter, made (once) with the same Python as this one."""
    python = TEXTDEDUP_VENV / "bin" / "python"
    marker = TEXTDEDUP_VENV / ".installed"
    wanted = "\n".join([*TEXTDEDUP_REQUIREMENTS, TEXTDEDUP, GRAPHFRAMES_STAND_IN.read_text()])
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return python
    print(f"making {TEXTDEDUP_VENV} with {TEXTDEDUP} (once)", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(TEXTDEDUP_VENV)], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, *TEXTDEDUP_REQUIREMENTS], check=True)
    subprocess.run([*pip, "--no-deps", TEXTDEDUP], check=True)
    package = _site_packages(python) / "graphframes"
    package.mkdir()
    shutil.copy(GRAPHFRAMES_STAND_IN, package / "__init__.py")
    marker.write_text(wanted)
    return python


def _site_packages(python: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True).stdout.strip())


# text-dedup's script fixes its partition counts in code, sized for a cluster: on local[2] its 4096- and
# 8192-task stages (about 100,000 tasks whatever the corpus size) take most of the time on small corpora (15
# of 16 minutes for 20,000 documents here). The `text-dedup-16` engine runs a copy of the script with these
# exact strings replaced, all else unchanged.
TEXTDEDUP_16_PARTITIONS = {
    '.set("spark.default.parallelism", "100")': '.set("spark.default.parallelism", "16")',
    '.set("spark.sql.shuffle.partitions", "8192")': '.set("spark.sql.shuffle.partitions", "16")',
    ".repartition(4096)": ".repartition(16)",  # the edges and the vertices
    "partitions = max(256, min(": "partitions = max(16, min(",  # output files
}


def run_textdedup(filtered: Path, work: Path, args: argparse.Namespace) -> tuple[dict, dict[int, int]]:
    """text_dedup/minhash_spark.py as PyPI ships it."""
    python = textdedup_python()
    return _run_textdedup(python, _site_packages(python) / "text_dedup" / "minhash_spark.py", filtered, work, args)


def run_textdedup_16(filtered: Path, work: Path, args: argparse.Namespace) -> tuple[dict, dict[int, int]]:
    """text_dedup/minhash_spark.py with 16 partitions wherever it fixes a count (TEXTDEDUP_16_PARTITIONS)."""
    python = textdedup_python()
    code = (_site_packages(python) / "text_dedup" / "minhash_spark.py").read_text()
    for shipped, replacement in TEXTDEDUP_16_PARTITIONS.items():
        if shipped not in code:
            sys.exit(f"bench_spark: text-dedup's minhash_spark.py has no {shipped!r} to replace")
        code = code.replace(shipped, replacement)
    script = work / "minhash_spark_16.py"
    script.write_text(code)
    return _run_textdedup(python, script, filtered, work, args)


def _run_textdedup(
    python: Path, script: Path, filtered: Path, work: Path, args: argparse.Namespace
) -> tuple[dict, dict[int, int]]:
    output = work / "textdedup-out"
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": str(python),
        "PYSPARK_DRIVER_PYTHON": str(python),
    }
    env.pop("SPARK_HOME", None)  # the venv's own pyspark
    command = [
        str(python.parent / "spark-submit"),
        "--master",
        "local[2]",
        "--driver-memory",
        args.driver_memory,
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.ui.showConsoleProgress=false",
        "--conf",
        "spark.log.level=WARN",  # spark-submit's default, INFO, logs every one of its ~100,000 tasks
        "--conf",
        f"spark.local.dir={work / 'spark-local'}",
        str(script),
        "--input",
        str(filtered),
        "--output",
        str(output),
        "--checkpoint_dir",
        str(work / "textdedup-checkpoints"),
        "--column",
        "text",
        "--index",
        "order",
        "--threshold",
        str(DEDUP["threshold"]),
        "--num_perm",
        str(DEDUP["num_perm"]),
        "--ngram_size",
        str(DEDUP["shingle_words"]),
        "--min_length",
        "5",
        "--debug",  # writes the component assignment, for dup_of
    ]
    figures = measure(command, env, work / "textdedup.log")
    shutil.rmtree(work / "spark-local", ignore_errors=True)  # its shuffle and DISK_ONLY files: gigabytes at 1M

    kept = _read_column(output, "order")
    flagged: dict[int, int] = {}
    assignment_folder = Path(f"{output}-assignment") / "assignment.parquet"
    if assignment_folder.exists():  # it writes none when it finds no candidate pair
        assignment = _read_parquet(assignment_folder, ["id", "component"])
        ids, components = assignment["id"].to_numpy(), assignment["component"].to_numpy()
        removed = ids != components
        flagged = dict(zip(ids[removed].tolist(), components[removed].tolist()))
    total = pq.ParquetDataset(filtered).read(columns=["order"]).num_rows
    if total - len(kept) != len(flagged):  # the assignment and the written output must tell the same story
        sys.exit(f"bench_spark: text-dedup kept {len(kept)} of {total} but its assignment removes {len(flagged)}")
    return figures, flagged


def _read_parquet(folder: Path, columns: list[str]):
    """All Parquet files under `folder` (Spark's, whose partition folders start with `_`, which pyarrow's
    dataset discovery skips)."""
    import pyarrow as pa

    files = sorted(folder.rglob("*.parquet"))
    return pa.concat_tables([pq.read_table(f, columns=columns) for f in files])


def _read_column(folder: Path, column: str) -> np.ndarray:
    return _read_parquet(folder, [column])[column].to_numpy()


# ---------------------------------------------------------------------------------------------
# the benchmark

# name -> function(corpus folder, work folder, args) -> (figures: wall_seconds, cpu_seconds, peak_pss_gb;
# flagged: {removed document's order: order of the document it duplicates})
# ---------------------------------------------------------------------------------------------
# crawlbelt on either engine: each run a fresh subprocess of this script (`_dedup`, `_filter`), measured alike


def crawlbelt_config(engine_name: str, args: argparse.Namespace):
    """Settings that start `engine_name` on this machine's 2 cores (Ray: bench_dedup's object store)."""
    from pipeline.config import RayConfig, SparkConfig

    return (
        engine_name,
        RayConfig(num_cpus=2),
        SparkConfig(master="local[2]", conf={"spark.driver.memory": args.driver_memory}),
    )


def run_crawlbelt(
    engine_name: str, filtered: Path, work: Path, args: argparse.Namespace
) -> tuple[dict, dict[int, int]]:
    """crawlbelt's dedup pass (exact, then near with exact verification, its defaults) on `engine_name`."""
    command = [
        sys.executable,
        __file__,
        "_dedup",
        "--engine",
        engine_name,
        "--folder",
        str(filtered),
        "--work",
        str(work),
    ]
    figures = measure(command + ["--driver-memory", args.driver_memory], os.environ.copy(), work / "run.log")
    verdicts = pq.read_table(work / "verdicts.parquet")  # exact and near, as bench_dedup scores them
    dup_of = [int(d.split("-")[1]) for d in verdicts["dup_of"].to_pylist()]  # bench_dedup's ids: doc-ORDER
    return figures, dict(zip(verdicts["order"].to_pylist(), dup_of))


def _dedup(args: argparse.Namespace) -> None:
    from pipeline.passes import dedup
    from pipeline.engines import engine
    from pipeline.config import Config, DedupConfig

    name, ray, spark = crawlbelt_config(args.engine, args)
    engine.start(Config(engine=name, ray=ray, spark=spark))
    verdicts, _ = dedup.run(Path(args.folder), DedupConfig(), Path(args.work))
    pq.write_table(verdicts, Path(args.work) / "verdicts.parquet")
    engine.stop()


ENGINES: dict[str, Callable[[Path, Path, argparse.Namespace], tuple[dict, dict[int, int]]]] = {
    "crawlbelt-ray": partial(run_crawlbelt, "ray"),
    "crawlbelt-spark": partial(run_crawlbelt, "spark"),
    "text-dedup": run_textdedup,
    "text-dedup-16": run_textdedup_16,
}


def near(args: argparse.Namespace) -> list[dict]:
    work = ROOT / "out" / f"bench-spark-{args.docs}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    started = time.perf_counter()
    vocab = vocabulary(np.random.default_rng(1))  # as bench_dedup.run_corpus: the same texts
    words, copy_of = corpus(args.docs)
    write_corpus(words, vocab, work / "filtered")
    print(f"corpus: {args.docs} documents in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)

    results = []
    for name in args.engines:
        engine_work = work / name
        engine_work.mkdir()
        load_before = os.getloadavg()[0]
        figures, flagged = ENGINES[name](work / "filtered", engine_work, args)
        result = {"engine": name, "docs": args.docs, **figures, **quality(flagged, words, copy_of)}
        # the machine's 1-minute load average before and after: wall time is only comparable on a quiet machine
        result["load_average"] = [round(load_before, 1), round(os.getloadavg()[0], 1)]
        print(json.dumps(result), flush=True)
        results.append(result)
    return results


def filter_pass(args: argparse.Namespace) -> list[dict]:
    """crawlbelt's filter pass over the same WARCs on Ray and on Spark, 2 cores each: documents (the HTML
    records handed to extraction) per CPU-second of the whole process tree, start-up included."""
    results = []
    for name in ("ray", "spark"):
        work = ROOT / "out" / "bench-spark-filter" / name
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        command = [sys.executable, __file__, "_filter", "--engine", name, "--work", str(work), "--warcs", *args.warcs]
        load_before = os.getloadavg()[0]
        figures = measure(command + ["--driver-memory", args.driver_memory], os.environ.copy(), work / "run.log")
        parts = pq.read_table(work / "filtered", columns=["stage"])["stage"].to_pylist()
        documents = sum(stage != "read" for stage in parts)
        result = {"engine": f"crawlbelt-{name} filter pass", "docs": documents, **figures}
        result["docs_per_cpu_second"] = round(documents / figures["cpu_seconds"], 2)
        result["load_average"] = [round(load_before, 1), round(os.getloadavg()[0], 1)]
        print(json.dumps(result), flush=True)
        results.append(result)
    ray, spark = results
    print(f"Spark / Ray CPU-seconds: {spark['cpu_seconds'] / ray['cpu_seconds']:.2f}", flush=True)
    return results


def _filter(args: argparse.Namespace) -> None:
    from pipeline.engines import engine
    from pipeline.passes import filtering
    from pipeline.config.load import load_config

    config = load_config(str(ROOT / "configs" / "local.yaml"), inputs=args.warcs, output=str(Path(args.work) / "out"))
    config.engine, config.ray, config.spark = crawlbelt_config(args.engine, args)
    engine.start(config)
    filtering.run(config, filtering.input_files(config), Path(args.work) / "filtered")
    engine.stop()


def table(results: list[dict]) -> str:
    columns = [
        ("engine", "engine", "{}"),
        ("docs", "docs", "{:,}"),
        ("wall s", "wall_seconds", "{:.1f}"),
        ("CPU s", "cpu_seconds", "{:.1f}"),
        ("peak PSS GiB", "peak_pss_gb", "{:.2f}"),
        ("recall J>=0.8", "recall_j_ge_0.8", "{:.4f}"),
        ("precision J>=0.7", "precision_j_ge_0.7", "{:.4f}"),
        ("flagged", "flagged", "{:,}"),
        ("docs / CPU s", "docs_per_cpu_second", "{:.2f}"),
    ]
    columns = [column for column in columns if column[1] in results[0]]  # near's or filter's
    rows = [[title for title, _, _ in columns]]
    rows += [[form.format(result[key]) for _, key, form in columns] for result in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    return "\n".join("  ".join(cell.rjust(width) for cell, width in zip(row, widths)) for row in rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["near", "filter", "_dedup", "_filter"])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--engines", nargs="+", choices=list(ENGINES), default=list(ENGINES))
    parser.add_argument("--driver-memory", default="4g", help="Spark driver (local mode: all executors) memory")
    parser.add_argument("--warcs", nargs="+", default=sorted(glob.glob(REALHTML_WARCS)), help="filter: the input")
    parser.add_argument("--engine", help=argparse.SUPPRESS)  # _dedup, _filter: one engine's run
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.what.startswith("_"):
        return {"_dedup": _dedup, "_filter": _filter}[args.what](args)
    results = near(args) if args.what == "near" else filter_pass(args)
    print(table(results))


if __name__ == "__main__":
    main()
