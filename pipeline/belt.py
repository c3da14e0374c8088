"""The whole belt, in order, as built from the config.

    filter pass   read -> extract -> language -> quality -> repetition -> classifier   (per document)
    dedup pass    exact dedup -> near dedup                                          (global, on survivors)
    finalize      docs/ and rejects/, one part per input file, then manifest.json
    tokens pass   tokenizer -> encode -> mixture -> pack        (curated documents, plus curated Parquet sources)
    report        report.html
    commit        the new output, built in _work/output, replaces the earlier one, manifest.json last

The per-document stages are plain objects from `stages/`; this file only decides their order and how
Ray Data runs them. Every row keeps moving until finalize: a stage marks a row rejected, it never
drops it, so the final counts can prove that every record left the belt exactly once.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import pyarrow.parquet as pq
import ray

from pipeline import dedup, finalize, report, storage, tokens
from pipeline.config import Config, expand_inputs
from pipeline.engine import (FilterFiles, NodeWatch, check_resources, files_dataset, filtered_part_name,
                             start_clock, start_ray, task_options)
from pipeline.runlog import RUN_LOG, RunLog
from stages.classifier import ClassifierScore, FastTextClassifier, NaiveBayes
from stages.extract import Extract
from stages.langid import LanguageId
from stages.quality import GopherQuality, GopherRepetition

log = logging.getLogger("crawlbelt")


def document_stages(config: Config) -> list:
    """The per-document stages after reading, in belt order."""
    stages = [
        Extract(
            timeout_s=config.extract.timeout_s,
            favor=config.extract.favor,
            include_tables=config.extract.include_tables,
            include_comments=config.extract.include_comments,
            max_html_bytes=int(config.extract.max_html_mb * 1e6),
            method=config.extract.method,
            fast=config.extract.fast,
        ),
        LanguageId(
            method=config.language.method,
            languages=tuple(config.language.languages),
            threshold=config.language.threshold,
            short_text_chars=config.language.short_text_chars,
            model_path=config.language.model_path,
        ),
    ]
    if config.quality.enabled:
        rules = {k: v for k, v in vars(config.quality).items() if k != "enabled"}
        stages.append(GopherQuality(**rules))
    if config.repetition.enabled:
        rules = {k: v for k, v in vars(config.repetition).items() if k != "enabled"}
        stages.append(GopherRepetition(**rules))
    classifier = config.classifier
    if classifier.kind == "naive_bayes":
        stages.append(ClassifierScore(NaiveBayes.from_files(classifier.good_examples, classifier.bad_examples),
                                      threshold=classifier.threshold))
    elif classifier.kind == "fasttext":
        stages.append(ClassifierScore(FastTextClassifier(classifier.model_path, classifier.label),
                                      threshold=classifier.threshold))
    return stages


def input_files(config: Config) -> list[tuple[str, str]]:
    """(path, source) of every crawl file, sorted by path: the fixed order documents are numbered in.
    Sources of curated Parquet skip the curation passes and join at the tokens pass."""
    files = {path: source.name for source in config.sources if not source.curated()
             for path in expand_inputs(source.input, config.storage)}
    return sorted(files.items())


def run(config: Config, kind: str = "run") -> dict:
    """Run the belt; returns the manifest (also written to OUTPUT/manifest.json). `kind` ('run' or 'dry-run')
    is written in the output's marker. An s3:// output is built in a local staging folder and uploaded once
    everything succeeded. The run's log goes to OUTPUT/run.log (pipeline.runlog)."""
    with RunLog(config) as run_log:
        if not storage.is_s3(config.output):
            return run_into(config, Path(config.output), kind, run_log)
        start_ray(config.ray)
        if config.storage.staging is None and sum(node["Alive"] for node in ray.nodes()) > 1:
            # A temporary folder would be on the driver's disk only, while tasks on other nodes write there too.
            raise OutputError(f"output {config.output!r}: on a cluster of several nodes an s3:// output needs "
                              "storage.staging, a folder every node sees, to build it in before the upload")
        staging = Path(config.storage.staging or tempfile.mkdtemp(prefix="crawlbelt-staging-"))
        manifest = run_into(config, staging, kind, run_log)
        storage.commit_output(staging, config.output, config.storage)
        log.info("output: uploaded to %s", config.output)
        if config.storage.staging is None:
            shutil.rmtree(staging, ignore_errors=True)
        return manifest


def run_into(config: Config, out: Path, kind: str, run_log: RunLog) -> dict:
    """The whole belt, writing to the local (or shared) folder `out`. The new output is built in
    `out/_work/output` and replaces the earlier one only once it is complete: a run that fails or is killed
    leaves the earlier output whole.

    While it runs, a NodeWatch notices a node of the cluster going away. Ray reruns that node's tasks on the
    nodes left; if the run fails anyway (some of Ray Data's helpers, such as the actors that read Parquet
    footers, are not rerun), it starts over on the nodes left, up to `ray.node_lost_retries` times, and then
    fails with one line naming the node (NodeLostError). A run that stops making progress after a loss is
    ended by the NodeWatch itself (engine.NodeWatch)."""
    files = input_files(config)
    fingerprint = filter_fingerprint(config, files)
    start_ray(config.ray)
    check_resources(config.resources, config.ray)  # before anything is written: a task no node fits waits for ever
    prepare_output(out, fingerprint, kind)
    run_log.open(out / "_work" / RUN_LOG)
    started = time.time()
    with NodeWatch(config.ray.node_lost_timeout_s) as watch:
        for attempt in range(config.ray.node_lost_retries + 1):
            if attempt:  # the filter pass's finished files are kept
                prepare_output(out, fingerprint, kind)
                started = time.time()
            lost_before = set(watch.lost)
            try:
                return _belt(config, files, out, watch, started, kind, run_log)
            except OutputError:
                raise
            except Exception as error:
                watch.settle(error)
                if not watch.lost:
                    raise
                failure = _one_line(error)
                if set(watch.lost) - lost_before and attempt < config.ray.node_lost_retries:
                    log.warning("%s mid-run, and the run failed (%s): starting it over on the nodes left "
                                "(ray.node_lost_retries: %d of %d)", watch.lost_line(), failure, attempt + 1,
                                config.ray.node_lost_retries)
                    watch.progress()
                    continue
                raise NodeLostError(f"{watch.lost_line()} mid-run, and the run failed: {failure}; rerun it "
                                    "(the filter pass's finished files are kept)") from error
    raise AssertionError("unreachable")


def _belt(config: Config, files: list[tuple[str, str]], out: Path, watch: NodeWatch, started: float,
          kind: str, run_log: RunLog) -> dict:
    work = out / "_work"
    build = work / "output"  # the new output, moved into `out` once complete
    build.mkdir()
    storage.write_marker(build, kind)
    clock = start_clock()
    timings = {}

    if files:
        # Filter pass: every record of every file, through the per-document stages, one Parquet part per file.
        t = time.perf_counter()
        filter_pass(config, files, work / "filtered", clock)
        timings["filter_pass"] = time.perf_counter() - t
        watch.progress()
        filtered = work / "filtered"
        log.info("filter pass: %d records from %d files, %.1f s", _rows_in(work / "filtered"), len(files),
                 timings["filter_pass"])

        # Dedup pass: global comparisons over the documents every per-document stage kept.
        t = time.perf_counter()
        verdicts, dedup_seconds = dedup.run(filtered, config.dedup, work)
        timings["dedup_pass"] = time.perf_counter() - t
        watch.progress()
        log.info("dedup pass: %d duplicates, %.1f s", verdicts.num_rows, timings["dedup_pass"])

        # Finalize: apply the dedup verdicts, write docs/ and rejects/ per input file, count everything.
        t = time.perf_counter()
        part_counts = finalize.write_parts(filtered, verdicts, build, partitions=min(len(files), config.dedup.shards),
                                           reject_text=config.rejects.text)
        timings["finalize"] = time.perf_counter() - t
        watch.progress()
    else:
        part_counts, dedup_seconds = finalize.COUNT_SCHEMA.empty_table(), {}

    manifest = finalize.manifest(
        config=config, out=build, files=files, records_read=_rows_in(work / "filtered"), part_counts=part_counts,
        stage_seconds={**ray.get(clock.report.remote()), **dedup_seconds},
        pass_seconds=timings, wall_seconds=time.time() - started, node_seconds=ray.get(clock.nodes.remote()))
    if files:
        for name, row in manifest["stages"].items():
            if "rows_in" in row:
                log.info("%s", stage_line(name, row))
        log.info("finalize: %d kept, %d rejected, %.1f s", manifest["counts"]["kept"],
                 sum(manifest["counts"]["rejected"].values()), timings["finalize"])

    # Tokens pass: tokenizer, token counts, the weighted mixture, packed and shuffled token shards.
    t = time.perf_counter()
    result = tokens.run(config, build, tokens.curated_files(config, build, files))
    timings["tokens_pass"] = time.perf_counter() - t
    watch.progress()
    manifest = finalize.add_tokens(build, manifest, result, timings["tokens_pass"], wall_seconds=time.time() - started)

    # Report: one self-contained page of plots.
    report.write(build)

    # Commit: the complete new output, its log too, replaces the earlier one.
    run_log.move(build / RUN_LOG)
    storage.commit_local(build, out, work / "replaced")
    shutil.rmtree(work, ignore_errors=True)
    log.info("report: %s", out / "report.html")
    return manifest


def stage_line(name: str, row: dict) -> str:
    """A stage's log line from its manifest row; a stage that is off, or got no document, has no time."""
    took = "did not run" if row["seconds"] is None else f"{row['seconds']} s"
    return f"{name}: {row['rows_in']} in, {row['rejected']} rejected, {took}"


def filter_pass(config: Config, files: list[tuple[str, str]], folder: Path, clock) -> None:
    """Write `folder/file-NNNNNN.parquet` for every input file that has none yet (a killed run's rerun
    redoes only the files it had not finished; `prepare_output` kept the parts only if nothing that shapes
    them changed)."""
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob(".*.tmp"):  # a file being written when the run was killed
        stale.unlink()
    pending = [(i, path, source) for i, (path, source) in enumerate(files)
               if not (folder / filtered_part_name(i)).exists()]
    if len(pending) < len(files):
        log.info("resume: %d of %d files already through the filter pass", len(files) - len(pending), len(files))
    if pending:
        filter_files = FilterFiles(document_stages(config), str(folder), config.read.batch_size,
                                   int(config.read.max_payload_mb * 1e6), clock, config.storage)
        ray.get(files_dataset(pending).map_batches(filter_files, batch_size=1, batch_format="pyarrow",
                                                   **task_options(config.resources.filter)).to_arrow_refs())


def filter_fingerprint(config: Config, files: list[tuple[str, str]]) -> str:
    """What the filter pass's parts depend on: the input files (with size and time of local ones) and the
    settings of the reader and the per-document stages. Parts of a run with another fingerprint are redone."""

    def stamp(path: str, source: str) -> list:
        stat = os.stat(path) if os.path.exists(path) else None  # s3:// inputs: the URI alone
        return [path, source, stat and stat.st_size, stat and stat.st_mtime_ns]

    inputs = [stamp(path, source) for path, source in files]
    sections = {name: asdict(getattr(config, name))
                for name in ("read", "extract", "language", "quality", "repetition", "classifier")}
    for name in ("good_examples", "bad_examples", "model_path"):  # files whose content shapes the classifier
        paths = sections["classifier"].get(name) or []
        inputs += [stamp(path, "classifier") for path in ([paths] if isinstance(paths, str) else paths)]
    text = json.dumps({"inputs": inputs, "settings": sections}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _one_line(error: BaseException) -> str:
    """An error in one line: the innermost `SomeError: message` line of its text (Ray nests the original
    error's text inside its own), and the actor it concerns, if any."""
    text = str(error)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if re.match(r"^[\w.]+(Error|Exception): ", line)]
    line = errors[-1] if errors else f"{type(error).__name__}: {lines[0] if lines else ''}"
    actor = re.search(r"class_name: (\w+)", text)
    return f"{line} (actor {actor.group(1)})" if actor else line


def _rows_in(folder: Path) -> int:
    return 0 if not folder.is_dir() else sum(pq.ParquetFile(p).metadata.num_rows for p in folder.glob("*.parquet"))


class OutputError(RuntimeError):
    """The output folder cannot be written (read-only, not a folder, no space): one line for the user."""


class NodeLostError(RuntimeError):
    """The run failed after a node of the cluster was lost: one line naming the node and the error."""


def prepare_output(out: Path, fingerprint: str | None = None, kind: str = "run") -> None:
    """Clear what an earlier run killed mid-way left in `_work`, and make sure the folder can be written
    before any work starts. An earlier complete output stays as it is until this run's replaces it. The
    filter pass's parts of a killed run are kept when its fingerprint is this run's: the rerun goes on from
    there. Config validation made sure the folder is empty or a crawlbelt output; the marker is written
    first, so that a run killed at any moment leaves a folder the next run still recognises as one."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        if not (out / storage.MARKER).is_file():
            storage.write_marker(out, kind)
        work = out / "_work"
        work.mkdir(exist_ok=True)
        build = work / "output"
        if _complete(build):  # killed while moving its complete output in: finish the move
            storage.commit_local(build, out, work / "replaced")
        stamp = work / "filter-fingerprint"
        resumable = fingerprint is not None and stamp.is_file() and stamp.read_text() == fingerprint
        for path in [*out.glob(".*.tmp"), *work.iterdir()]:
            if (resumable and path in (stamp, work / "filtered")) or path == work / RUN_LOG:
                continue  # this run's log (a start-over after a lost node), or a failed run's, which it replaces
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
        if fingerprint is not None and not resumable:
            storage.write_atomic(stamp, fingerprint)
        probe = work / ".write-probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise OutputError(f"output {str(out)!r} cannot be written: {error.strerror or error}") from None


def _complete(build: Path) -> bool:
    """Whether a built output is whole: its manifest says the run completed, and its report is written."""
    try:
        return json.loads((build / "manifest.json").read_text()).get("complete") is True and \
            (build / "report.html").is_file()
    except (OSError, ValueError):
        return False
