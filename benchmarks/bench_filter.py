"""Filter-pass benchmark: crawlbelt's per-document stages against datatrove's equivalent chain, one core each.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_filter.py       # ours with each extractor, then datatrove, the ratios
    PYTHONPATH=. .venv/bin/python benchmarks/bench_filter.py --no-datatrove     # ours only
    PYTHONPATH=. .venv/bin/python benchmarks/bench_filter.py --methods resiliparse   # the fast path only
    PYTHONPATH=. .venv/bin/python benchmarks/bench_filter.py --repeat 10 --no-datatrove   # memory at 10x input
    PYTHONPATH=. .venv/bin/python benchmarks/bench_filter.py --datatrove-language   # and datatrove with language ID
    PYTHONPATH=. .venv/bin/python benchmarks/bench_filter.py --nemo-curator   # and NeMo Curator's CPU stages

Ours runs once per extract.method in --methods (default: trafilatura, the default, and resiliparse, the fast
path), with the config's other settings and --set's; then datatrove once, and each path's ratio to it.

Ours: the stages `pipeline.spec.document_stages` builds from the config (configs/local.yaml unless --config),
called directly, batch by batch, on the Arrow tables `stages.warc_read.read_warc` yields (no Ray), then the
dedup pass's per-batch hashing on the surviving text: its normalization, exact dedup's SHA-1 keys and the MinHash
signatures.
CPU time is this process's and its children's around each stage call (reading: around each batch the reader
yields): extraction runs in a child process (stages/extract.py), whose CPU counts as the extract stage's.
Documents = the HTML records the reader hands to extraction.

Datatrove: a separate virtual environment (made once under .bench/datatrove-venv) with datatrove 0.10.1;
its chain WarcReader -> Trafilatura -> GopherRepetitionFilter -> GopherQualityFilter runs on the same WARCs
in a subprocess pinned to the same core. Its CPU time is the subprocess's own (with any extraction helper
processes it waited for), measured from after its imports and set-up to the end of the chain; documents =
the records its reader yielded (it skips records it cannot decode or does not consider HTML).

The ratios printed are ours (each method) / datatrove's documents per CPU-second, from the same run. With
--datatrove-language, datatrove's chain runs a second time with its LanguageFilter after the extractor (our
lid.176 file, languages and threshold; it reads the whole text, ours a prefix), and a like-for-like ratio leaves
out our stages it has no counterpart for (the classifier and the dedup hashing).

NeMo Curator (--nemo-curator): a separate virtual environment (made once under .bench/nemo-curator-venv) with
NeMo Curator 1.4.0 and its `text-cpu` extra; its stages (benchmarks/nemo_curator_chain.py: WARC iteration
and HTML extraction, fastText language filter with our model file, languages and threshold, its shipped
English heuristic filters) run in a subprocess pinned to the same core, once per extractor it shares with our
methods (trafilatura for ours, resiliparse for our resiliparse methods). Documents = the response records its
iterator hands to extraction. The ratios: ours / its documents per CPU-second, with the same extractor.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import platform
import resource
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_WARCS = str(ROOT.parent / "shared" / "realhtml" / "warc" / "*.warc.gz")
DEFAULT_CONFIG = str(ROOT / "configs" / "local.yaml")
DATATROVE_VENV = ROOT / ".bench" / "datatrove-venv"
NEMO_CURATOR_VENV = ROOT / ".bench" / "nemo-curator-venv"
NEMO_CURATOR_REQUIREMENTS = [
    # text-cpu: its extractors, pycld2 and fasttext; jusText, which its extractor module imports, needs
    # lxml.html.clean, split out of lxml 5.2+ and not among its requirements.
    "nemo-curator[text-cpu]==1.4.0",
    "lxml_html_clean==0.4.6",
]
DATATROVE_REQUIREMENTS = [
    # WarcReader needs warcio, faust-cchardet and python-magic (from the [io] extra, whose other packages,
    # datasets among them, it does not use; python-magic loads the system's libmagic); Trafilatura needs
    # the [processing] extra (which pins trafilatura < 1.12); the Gopher filters split English words with
    # spaCy (`spacy.blank("en")`, no model download), which only the [multilingual] extra would bring, with
    # much else. lxml_html_clean: jusText imports lxml.html.clean, split out of lxml 5.2+.
    "datatrove[processing]==0.10.1",
    "warcio==1.8.1",
    "faust-cchardet==3.2.0",
    "python-magic==0.4.27",
    "spacy==3.8.18",
    "lxml_html_clean==0.4.6",
]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("warcs", nargs="*", help=f"WARC files or globs (default {DEFAULT_WARCS})")
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="crawlbelt config whose stages to run")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="config override, as `crawlbelt run --set` (repeatable), e.g. extract.method=resiliparse",
    )
    parser.add_argument(
        "--methods",
        default="trafilatura,resiliparse",
        help="extract.method values to run ours with, comma-separated, one pass each (default: both paths)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="read the WARC list this many times (memory scaling)")
    parser.add_argument("--cpu", type=int, default=None, help="core to pin to (default: the last allowed one)")
    parser.add_argument("--no-datatrove", action="store_true", help="run crawlbelt's pass only")
    parser.add_argument("--no-hashing", action="store_true", help="leave out the dedup pass's SHA-1 and MinHash")
    parser.add_argument(
        "--datatrove-language",
        action="store_true",
        help="also run datatrove's chain with its LanguageFilter (our lid.176 file, languages and threshold), "
        "as ours does language ID",
    )
    parser.add_argument(
        "--nemo-curator",
        action="store_true",
        help="also run NeMo Curator 1.4.0's CPU stages (its extraction, fastText language filter and English "
        "heuristic filters) on the same files, with the same extractor as each of our methods",
    )
    parser.add_argument(
        "--profile", metavar="FILE", help="write a cProfile of our pass to FILE (slower run; METHOD-FILE with several)"
    )
    parser.add_argument(
        "--dump",
        metavar="FILE",
        help="write every row's verdict and values to a Parquet FILE (to compare two versions); "
        "with several methods, one FILE per method: METHOD-FILE beside it",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    return parser.parse_args(argv)


def warc_files(patterns: list[str]) -> list[str]:
    files = sorted({os.path.abspath(p) for pattern in patterns for p in glob.glob(pattern) if os.path.isfile(p)})
    if not files:
        print(
            f"bench_filter: no WARC files match {' '.join(patterns)}\n"
            f"  (the default is the real-page set in ../shared/realhtml/warc/; give WARC paths as arguments)",
            file=sys.stderr,
        )
        sys.exit(2)
    return files


def pin(cpu: int | None) -> int:
    allowed = sorted(os.sched_getaffinity(0))
    core = allowed[-1] if cpu is None else cpu
    os.sched_setaffinity(0, {core})
    return core


def cpu_with_children() -> float:
    """CPU seconds of this process and of its children, those it reaped and those still running (the extraction
    child lives as long as this process, so its time is read from /proc)."""
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = time.process_time() + reaped.ru_utime + reaped.ru_stime
    for pid in _child_pids():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue  # ended since
        seconds += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    return seconds


def _child_pids() -> list[int]:
    return [int(pid) for task in Path("/proc/self/task").iterdir() for pid in (task / "children").read_text().split()]


def peak_rss_mib(who=resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # KiB on Linux


# ---------------------------------------------------------------------------------------------
# ours


def run_ours(
    files: list[str],
    config_path: str,
    overrides: list[str],
    repeat: int,
    hashing: bool,
    dump: str | None,
    profile: str | None,
) -> dict:
    import pyarrow as pa
    import pyarrow.compute as pc

    from pipeline.spec import document_stages
    from pipeline.config.load import load_config
    from stages.dedup import MinHasher, normalize, sha1_of_normalized
    from stages.warc_read import read_warc

    config = load_config(config_path, overrides=overrides, inputs=files)
    stages = document_stages(config)
    hasher = MinHasher(config.dedup.num_perm, config.dedup.shingle_words, config.dedup.seed)

    # Set-up outside the clock: models load and numba kernels compile (or load from cache) on first use,
    # once per process. A one-page batch through every stage does it.
    started = time.process_time()
    warm = next(read_warc(files[0], 0, "bench", 1, int(config.read.max_payload_mb * 1e6)))
    for stage in stages:
        warm = stage(warm)
    sample = pa.array(["the river carries sand to the sea and builds a delta"] * 2, pa.string())
    sha1_of_normalized(normalize(sample)), hasher.signatures(sample)
    setup_s = time.process_time() - started

    names = (
        ["read"] + [stage.name for stage in stages] + (["dedup_normalize", "exact_keys", "minhash"] if hashing else [])
    )
    seconds = dict.fromkeys(names, 0.0)
    rows_in: Counter[str] = Counter()
    verdicts: Counter[str] = Counter()
    records = documents = survivors = batches = 0
    dump_s = 0.0
    writer = None
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()

    clock = cpu_with_children
    wall = time.perf_counter()
    total_started = clock()
    for rep in range(repeat):
        for index, path in enumerate(files):
            reader = read_warc(
                path, rep * len(files) + index, "bench", config.read.batch_size, int(config.read.max_payload_mb * 1e6)
            )
            while True:
                t = clock()
                batch = next(reader, None)
                seconds["read"] += clock() - t
                if batch is None:
                    break
                batches += 1
                records += batch.num_rows
                documents += int(pc.sum(pc.is_null(batch["stage"])).as_py() or 0)
                for stage in stages:
                    rows_in[stage.name] += int(pc.sum(pc.is_null(batch["stage"])).as_py() or 0)
                    t = clock()
                    out = stage(batch)
                    seconds[stage.name] += clock() - t
                    if out.num_rows != batch.num_rows:
                        raise RuntimeError(f"{stage.name} changed the row count")
                    batch = out
                alive = batch.filter(pc.is_null(batch["stage"]))
                survivors += alive.num_rows
                keys = signatures = None
                if hashing and alive.num_rows:  # as the dedup pass does: the text normalized once for both
                    t = clock()
                    normalized = normalize(alive["text"])
                    seconds["dedup_normalize"] += clock() - t
                    t = clock()
                    keys = sha1_of_normalized(normalized)
                    seconds["exact_keys"] += clock() - t
                    t = clock()
                    signatures = hasher.signatures_of_normalized(normalized)
                    seconds["minhash"] += clock() - t
                verdicts.update(batch["reason"].to_pylist())
                if dump:  # not the pass's work: off the clock
                    t = clock()
                    writer = _dump(writer, dump, batch, alive, keys, signatures)
                    dump_s += clock() - t
    total_s = clock() - total_started - dump_s
    wall_s = time.perf_counter() - wall
    if profiler is not None:
        profiler.disable()
        assert profile is not None  # a profiler is made only for a profile file
        profiler.dump_stats(profile)
    if writer is not None:
        writer.close()

    accounted = sum(seconds.values())
    return {
        "files": len(files),
        "repeat": repeat,
        "records": records,
        "documents": documents,
        "survivors": survivors,
        "batches": batches,
        "cpu_s": total_s,
        "stage_cpu_s": seconds,
        "unaccounted_cpu_s": total_s - accounted,
        "rows_in": dict(rows_in),
        "docs_per_cpu_s": documents / total_s if total_s else float("nan"),
        "setup_cpu_s": setup_s,
        "wall_s": wall_s,
        "peak_rss_mib": peak_rss_mib(),
        "verdicts": {k or "kept": v for k, v in verdicts.most_common()},
        "overrides": overrides,
    }


def _dump(writer, path, batch, alive, keys, signatures):
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    columns = {
        name: batch[name]
        for name in ("order", "id", "stage", "reason", "detail", "lang", "lang_score", "quality_score", "charset")
        if name in batch.column_names
    }
    columns["text_sha1"] = pa.array(
        [hashlib.sha1(t.encode()).hexdigest() if t is not None else None for t in batch["text"].to_pylist()],
        pa.string(),
    )
    table = pa.table(columns)
    extra = {
        "order": alive["order"],
        "exact_key": pa.array(keys if keys is not None else [None] * alive.num_rows, pa.string()),
        "signature_sha1": pa.array(
            [hashlib.sha1(row.tobytes()).hexdigest() for row in signatures]
            if signatures is not None
            else [None] * alive.num_rows,
            pa.string(),
        ),
    }
    table = table.join(pa.table(extra), "order", join_type="left outer").sort_by("order")
    del pc
    if writer is None:
        writer = pq.ParquetWriter(path, table.schema)
    writer.write_table(table)
    return writer


# ---------------------------------------------------------------------------------------------
# datatrove


def bench_python(venv: Path, requirements: list[str]) -> Path:
    """The interpreter of a benchmark venv holding `requirements`, made (once) with the same Python as this one."""
    python = venv / "bin" / "python"
    marker = venv / ".installed"
    wanted = "\n".join(requirements)
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return python
    print(f"making {venv} with {', '.join(requirements)} (once)", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *requirements],
        check=True,
    )
    marker.write_text(wanted)
    return python


def datatrove_python() -> Path:
    return bench_python(DATATROVE_VENV, DATATROVE_REQUIREMENTS)


# Runs inside the datatrove venv. Imports and step construction happen before the clock starts, as our
# models and kernels load before ours; the chain itself is run in-process (no executor, no output files).
DATATROVE_RUNNER = textwrap.dedent(
    r"""
    import json, os, resource, sys, time
    from datatrove.pipeline.readers import WarcReader
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.filters import GopherQualityFilter, GopherRepetitionFilter

    folder, names = sys.argv[1], json.loads(sys.argv[2])
    repeat = int(sys.argv[3])
    language = json.loads(sys.argv[4])  # None, or our language settings: datatrove's LanguageFilter added
    def chain():
        steps = [Trafilatura(), GopherRepetitionFilter(), GopherQualityFilter()]
        if language:
            from datatrove.pipeline.filters import LanguageFilter
            import datatrove.utils.lid as lid
            # its download helper returns our model file (lid.176, offline) instead of fetching it
            lid.cached_asset_path_or_download = lambda *args, **kwargs: language["model_path"]
            steps.insert(1, LanguageFilter(languages=language["languages"],
                                           language_threshold=language["threshold"]))
        return steps
    # Warm-up outside the clock, on a throw-away chain: the filters load spaCy's English tokenizer. Trafilatura
    # extracts in a forked helper process; importing it here first means each helper starts with it loaded.
    import trafilatura
    from datatrove.data import Document
    warm = [Document(text="<html><body><p>" + "the river carries sand to the sea and builds a delta. " * 20
                     + "</p></body></html>", id="warm")]
    for step in chain():
        warm = list(step.run(iter(warm), 0, 1))
    steps = chain()
    readers = [WarcReader(folder, glob_pattern=name) for name in names]

    def documents():
        for _ in range(repeat):
            for reader in readers:
                yield from reader.run(None, 0, 1)

    read = 0
    def counted(docs):
        global read
        for doc in docs:
            read += 1
            yield doc

    cpu = time.process_time
    children = lambda: sum(getattr(resource.getrusage(resource.RUSAGE_CHILDREN), f) for f in ("ru_utime", "ru_stime"))
    started, started_children, wall = cpu(), children(), time.perf_counter()
    data = counted(documents())
    for step in steps:
        data = step.run(data, 0, 1)
    kept = sum(1 for _ in data)
    total = cpu() - started + children() - started_children
    # each step's own timer (wall time around its work on each document; the readers' summed)
    seconds = {readers[0].name: sum(reader.stats.time_stats.total for reader in readers)}
    seconds.update({step.name: step.stats.time_stats.total for step in steps})
    stats = {step.name: step.stats.to_dict() for step in steps}
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over execve, so it would report the parent's peak.
    # (The extraction helper's own memory is not in it.)
    hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    print(json.dumps({"documents": read, "kept": kept, "cpu_s": total, "wall_s": time.perf_counter() - wall,
                      "peak_rss_mib": hwm / 1024,
                      "step_seconds": seconds, "stats": stats}))
    """
)


def run_datatrove(files: list[str], repeat: int, language: dict | None = None) -> dict:
    python = datatrove_python()
    folders = {os.path.dirname(f) for f in files}
    if len(folders) != 1:
        raise SystemExit("bench_filter: datatrove's reader takes one folder; give WARCs from one folder")
    folder = folders.pop()
    names = [os.path.basename(f) for f in files]
    env = {
        **os.environ,
        "PYTHONPATH": "",
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_OFFLINE": "1",
        "DATATROVE_COLORIZE_LOGS": "0",
        "LOGURU_LEVEL": "WARNING",
    }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    process = subprocess.run(
        [str(python), "-c", DATATROVE_RUNNER, folder, json.dumps(names), str(repeat), json.dumps(language)],
        capture_output=True,
        text=True,
        env=env,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if process.returncode != 0:
        sys.stderr.write(process.stderr[-4000:])
        raise SystemExit(f"bench_filter: the datatrove run failed (exit {process.returncode})")
    result = json.loads(process.stdout.strip().splitlines()[-1])
    result["process_cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    result["docs_per_cpu_s"] = result["documents"] / result["cpu_s"]
    result["language_filter"] = language is not None
    result["version"] = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('datatrove'), m.version('trafilatura'))"],
        capture_output=True,
        text=True,
    ).stdout.split()
    return result


# ---------------------------------------------------------------------------------------------
# NeMo Curator


def nemo_algorithm(method: str) -> str:
    """NeMo Curator's extractor for one of our extract.method values: the same library."""
    return "trafilatura" if method.startswith("trafilatura") else "resiliparse"


def run_nemo_curator(files: list[str], repeat: int, algorithm: str, language: dict) -> dict:
    python = bench_python(NEMO_CURATOR_VENV, NEMO_CURATOR_REQUIREMENTS)
    if len(language["languages"]) != 1:
        raise SystemExit("bench_filter: NeMo Curator's FastTextLangId keeps one language; give one in the config")
    env = {**os.environ, "PYTHONPATH": "", "OMP_NUM_THREADS": "1", "LOGURU_LEVEL": "WARNING"}
    command = [
        str(python),
        str(ROOT / "benchmarks" / "nemo_curator_chain.py"),
        algorithm,
        language["model_path"],
        language["languages"][0],
        str(language["threshold"]),
        str(repeat),
        *files,
    ]
    process = subprocess.run(command, capture_output=True, text=True, env=env)
    if process.returncode != 0:
        sys.stderr.write(process.stderr[-4000:])
        raise SystemExit(f"bench_filter: the NeMo Curator run failed (exit {process.returncode})")
    result = json.loads(process.stdout.strip().splitlines()[-1])
    result["algorithm"] = algorithm
    result["docs_per_cpu_s"] = result["documents"] / result["cpu_s"]
    return result


def report_nemo_curator(runs: list[dict], theirs: dict) -> str:
    version, extractor_version = theirs["version"]
    lines = [
        f"NeMo Curator {version}, {theirs['algorithm']} {extractor_version}, fastText language filter and "
        f"{theirs['heuristic_filters']} heuristic filters: {theirs['documents']} documents, {theirs['extracted']} "
        f"extracted, {theirs['kept']} kept, {theirs['cpu_s']:.2f} CPU-s ({theirs['wall_s']:.2f} s wall), "
        f"{theirs['docs_per_cpu_s']:.1f} documents per CPU-second, peak RSS {theirs['peak_rss_mib']:.0f} MiB"
    ]
    for ours in runs:
        if nemo_algorithm(ours["method"]) == theirs["algorithm"]:
            lines.append(
                f"ratio, ours ({ours['method']}) / NeMo Curator's ({theirs['algorithm']}) documents per CPU-second: "
                f"{ours['docs_per_cpu_s'] / theirs['docs_per_cpu_s']:.2f}x"
            )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# report


def report(ours: dict, core: int) -> str:
    lines = []
    load = os.getloadavg()
    lines.append(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, pinned to core {core}, "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, Python {platform.python_version()}"
    )
    lines.append(
        f"crawlbelt, extract.method {ours['method']}: {ours['files']} files x{ours['repeat']}, {ours['records']} records, "
        f"{ours['documents']} HTML documents, {ours['survivors']} survive the filter pass"
    )
    lines.append(
        f"  {ours['cpu_s']:.2f} CPU-s ({ours['wall_s']:.2f} s wall), "
        f"{ours['docs_per_cpu_s']:.1f} documents per CPU-second; set-up {ours['setup_cpu_s']:.2f} CPU-s "
        f"(not counted); peak RSS {ours['peak_rss_mib']:.0f} MiB"
    )
    lines.append("")
    lines.append("| stage | rows in | CPU-s | share | documents per CPU-s |")
    lines.append("|---|---|---|---|---|")
    total = ours["cpu_s"]
    for name, s in ours["stage_cpu_s"].items():
        rows = ours["rows_in"].get(name, ours["documents"] if name == "read" else ours["survivors"])
        rate = f"{ours['documents'] / s:,.0f}" if s else "-"
        lines.append(f"| {name} | {rows:,} | {s:.2f} | {100 * s / total:.1f}% | {rate} |")
    lines.append(
        f"| (between stages) | | {ours['unaccounted_cpu_s']:.2f} | {100 * ours['unaccounted_cpu_s'] / total:.1f}% | |"
    )
    not_extract = total - ours["stage_cpu_s"].get("extract", 0.0)
    lines.append(f"| **total** | | {total:.2f} | 100% | {ours['docs_per_cpu_s']:.1f} |")
    lines.append("")
    lines.append(f"everything but extraction: {not_extract:.2f} CPU-s, {100 * not_extract / total:.1f}% of the pass")
    lines.append("verdicts: " + ", ".join(f"{k} {v}" for k, v in ours["verdicts"].items()))
    return "\n".join(lines)


# Our stages that datatrove's chain has no counterpart for: the like-for-like figure leaves them out.
NOT_IN_DATATROVE = ("classifier", "dedup_normalize", "exact_keys", "minhash")


def report_datatrove(runs: list[dict], theirs: dict) -> str:
    lines = []
    chain = "with LanguageFilter" if theirs.get("language_filter") else "without language ID"
    lines.append(
        f"datatrove {' / trafilatura '.join(theirs['version'])}, {chain}: {theirs['documents']} documents read "
        f"(its reader's count), {theirs['kept']} kept, {theirs['cpu_s']:.2f} CPU-s "
        f"({theirs['wall_s']:.2f} s wall; whole subprocess with start-up {theirs['process_cpu_s']:.2f} CPU-s), "
        f"{theirs['docs_per_cpu_s']:.1f} documents per CPU-second, peak RSS {theirs['peak_rss_mib']:.0f} MiB"
    )
    shares = _datatrove_shares(theirs["step_seconds"])
    if shares:
        lines.append("  its own step timers (wall): " + ", ".join(f"{k} {v:.0f}%" for k, v in shares.items()))
    for ours in runs:
        lines.append(
            f"ratio, ours ({ours['method']}) / datatrove's documents per CPU-second: "
            f"{ours['docs_per_cpu_s'] / theirs['docs_per_cpu_s']:.2f}x"
        )
        if theirs.get("language_filter"):
            same_work = ours["cpu_s"] - sum(ours["stage_cpu_s"].get(name, 0.0) for name in NOT_IN_DATATROVE)
            lines.append(
                f"  like for like (ours without {', '.join(NOT_IN_DATATROVE)}: {same_work:.2f} CPU-s): "
                f"{ours['documents'] / same_work / theirs['docs_per_cpu_s']:.2f}x"
            )
    return "\n".join(lines)


def _datatrove_shares(seconds: dict) -> dict[str, float]:
    whole = sum(seconds.values())
    return {name: 100 * s / whole for name, s in seconds.items()} if whole else {}


def language_settings(config_path: str, overrides: list[str]) -> dict:
    """Our language stage's model file, languages and threshold, for datatrove's LanguageFilter."""
    from pipeline.config.load import load_config
    from stages.langid import default_lid_model_path

    language = load_config(config_path, overrides=overrides).language
    return {
        "model_path": language.model_path or default_lid_model_path(),
        "languages": list(language.languages),
        "threshold": language.threshold,
    }


def main(argv=None) -> None:
    args = parse_args(argv)
    files = warc_files(args.warcs or [DEFAULT_WARCS])
    core = pin(args.cpu)
    for name in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    from pipeline.config import ConfigError

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    runs = []
    for method in methods:
        dump, profile = (
            str(Path(name).with_name(f"{method}-{Path(name).name}")) if name and len(methods) > 1 else name
            for name in (args.dump, args.profile)
        )
        try:
            ours = run_ours(
                files,
                args.config,
                [*args.overrides, f"extract.method={method}"],
                args.repeat,
                not args.no_hashing,
                dump,
                profile,
            )
        except ConfigError as error:  # e.g. a method that does not exist
            print(f"bench_filter: config: {error}", file=sys.stderr)
            sys.exit(2)
        ours["method"] = method
        runs.append(ours)
        print(report(ours, core), "\n", flush=True)
    theirs = []  # datatrove's chain, then with its language filter
    if not args.no_datatrove:
        theirs.append(run_datatrove(files, args.repeat))
        if args.datatrove_language:
            theirs.append(run_datatrove(files, args.repeat, language_settings(args.config, args.overrides)))
        for chain in theirs:
            print(report_datatrove(runs, chain))
    nemo = []
    if args.nemo_curator:
        language = language_settings(args.config, args.overrides)
        for algorithm in dict.fromkeys(nemo_algorithm(method) for method in methods):
            nemo.append(run_nemo_curator(files, args.repeat, algorithm, language))
            print(report_nemo_curator(runs, nemo[-1]))
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "ours": runs,
                    "datatrove": theirs,
                    "nemo_curator": nemo,
                    "core": core,
                    "load_average": os.getloadavg(),
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
