"""A run, pass by pass:

    filter pass   read -> the per-document stages (pipeline/spec.py)   pipeline/passes/filtering.py, per input file
    dedup pass    exact dedup -> near dedup (global, on survivors)      pipeline/passes/dedup.py
    finalize      docs/ and rejects/, one part per input file, then manifest.json   pipeline/passes/finalize.py
    tokens pass   tokenizer -> encode -> mixture -> pack                pipeline/passes/tokens.py
    report        report.html                                           pipeline/report.py
    commit        the new output, built in _work/output, replaces the earlier one, manifest.json last

Every row keeps moving until finalize: a stage marks a row rejected, it never drops it, so the final
counts can prove that every record left the belt exactly once. This module starts the engine the config
names (pipeline/engines/engine.py: Ray or Spark), runs the passes in order, and starts a run over on the nodes left
when a node is lost.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import tempfile
import time
from pathlib import Path


from pipeline import progress, report, storage
from pipeline.passes import dedup
from pipeline.passes import dedup_index
from pipeline.engines import engine
from pipeline.passes import export
from pipeline.passes import filtering
from pipeline.passes import finalize
from pipeline.passes import paragraphs
from pipeline.passes import scores
from pipeline.passes import tokens
from pipeline.config import Config
from pipeline.spec import stage_names
from pipeline.runlog import RUN_LOG, RunLog

log = logging.getLogger("crawlbelt")


def run(config: Config, kind: str = "run") -> dict:
    """Run the belt; returns the manifest (also written to OUTPUT/manifest.json). `kind` ('run' or 'dry-run')
    is written in the output's marker. An s3:// output is built in a local staging folder and uploaded once
    everything succeeded. The run's log goes to OUTPUT/run.log (pipeline.runlog)."""
    with RunLog(config) as run_log:
        if not storage.is_s3(config.output):
            return run_into(config, Path(config.output), kind, run_log)
        engine.start(config)
        if config.storage.staging is None and engine.nodes_alive() > 1:
            # A temporary folder would be on the driver's disk only, while tasks on other nodes write there too.
            raise OutputError(
                f"output {config.output!r}: on a cluster of several nodes an s3:// output needs "
                "storage.staging, a folder every node sees, to build it in before the upload"
            )
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

    On Ray, while it runs, a NodeWatch notices a node of the cluster going away. Ray reruns that node's tasks on the
    nodes left; if the run fails anyway (some of Ray Data's helpers, such as the actors that read Parquet
    footers, are not rerun), it starts over on the nodes left, up to `ray.node_lost_retries` times, and then
    fails with one line naming the node (NodeLostError). A run that stops making progress after a loss is
    ended by the NodeWatch itself (engine_ray.NodeWatch). On Spark, Spark reruns a lost executor's tasks
    itself, and a run that fails fails at once."""
    files = filtering.input_files(config)
    fingerprint = filtering.fingerprint(config, files)
    tracker = progress.Tracker(stage_names(config))
    with progress.Reporter(config, tracker, out / "_work"):  # the console's progress line, metrics.port
        return _run_attempts(config, files, fingerprint, out, kind, run_log, tracker)


def _run_attempts(
    config: Config,
    files: list[tuple[str, str]],
    fingerprint: str,
    out: Path,
    kind: str,
    run_log: RunLog,
    tracker: progress.Tracker,
) -> dict:
    engine.start(config)  # before anything is written: on Ray, a task no node fits would wait for ever
    prepare_output(out, fingerprint, kind)
    run_log.open(out / "_work" / RUN_LOG)
    started = time.time()
    with engine.watch(config) as watch:
        for attempt in range(config.ray.node_lost_retries + 1):
            if attempt:  # the filter pass's finished files are kept
                prepare_output(out, fingerprint, kind)
                started = time.time()
            lost_before = set(watch.lost)
            try:
                return _belt(config, files, out, watch, started, kind, run_log, tracker)
            except OutputError:
                raise
            except Exception as error:
                watch.settle(error)
                if not watch.lost:
                    raise
                failure = _one_line(error)
                if set(watch.lost) - lost_before and attempt < config.ray.node_lost_retries:
                    log.warning(
                        "%s mid-run, and the run failed (%s): starting it over on the nodes left "
                        "(ray.node_lost_retries: %d of %d)",
                        watch.lost_line(),
                        failure,
                        attempt + 1,
                        config.ray.node_lost_retries,
                    )
                    watch.progress()
                    continue
                raise NodeLostError(
                    f"{watch.lost_line()} mid-run, and the run failed: {failure}; rerun it "
                    "(the filter pass's finished files are kept)"
                ) from error
    raise AssertionError("unreachable")


def _belt(
    config: Config,
    files: list[tuple[str, str]],
    out: Path,
    watch,
    started: float,
    kind: str,
    run_log: RunLog,
    tracker: progress.Tracker,
) -> dict:
    work = out / "_work"
    build = work / "output"  # the new output, moved into `out` once complete
    build.mkdir()
    storage.write_marker(build, kind)
    timings = {}
    filter_seconds: dict[str, dict[str, float]] = {"stages": {}, "nodes": {}}

    if files:
        # Filter pass: every record of every file, through the per-document stages, one Parquet part per file.
        t = time.perf_counter()
        sizes = progress.file_sizes([path for path, _ in files], config.storage)
        parts = progress.FinishedParts(work / "filtered", sizes)
        tracker.begin_pass("filter", None, sum(sizes), parts)  # documents: estimated from bytes as files finish
        filter_seconds = filtering.run(config, files, work / "filtered")
        timings["filter_pass"] = time.perf_counter() - t
        watch.progress()
        filtered = work / "filtered"
        tracker.poll()
        tracker.add_cpu_seconds(filter_seconds["stages"])
        survivors = progress.parquet_size(filtered)  # every later pass's documents and bytes
        log.info(
            "filter pass: %d records from %d files, %.1f s",
            filtering.rows_in(filtered),
            len(files),
            timings["filter_pass"],
        )

        # Dedup pass: global comparisons over the documents every per-document stage kept.
        t = time.perf_counter()
        tracker.begin_pass("dedup", *survivors)
        # Earlier outputs (dedup.against) take part through their index; this output's is written into `build`.
        deduped = dedup.run_pass(filtered, config.dedup, work, build / dedup_index.INDEX)
        verdicts, dedup_seconds = deduped.verdicts, deduped.seconds
        timings["dedup_pass"] = time.perf_counter() - t
        watch.progress()
        log.info("dedup pass: %d duplicates, %.1f s", verdicts.num_rows, timings["dedup_pass"])
        paragraph_dedup, paragraph_filter = None, None
        if config.dedup.paragraphs.enabled:  # paragraphs seen before leave the documents left
            t = time.perf_counter()
            tracker.begin_pass("paragraphs", *survivors)
            settings = config.dedup.paragraphs
            paragraph_filter = paragraphs.run(filtered, verdicts, settings, config.dedup.shards, work)
            paragraph_dedup = {
                "folder": str(work / "paragraphs"),
                "ngram": settings.ngram,
                "threshold": settings.threshold,
                "min_words": settings.min_words,
            }
            dedup_seconds["paragraph_dedup"] = time.perf_counter() - t
            log.info(
                "paragraph dedup: %d of %d units seen before, %.1f s",
                paragraph_filter["units_seen"],
                paragraph_filter["units"],
                dedup_seconds["paragraph_dedup"],
            )

        # Finalize: apply the dedup verdicts, write docs/ and rejects/ per input file, count everything.
        tracker.add_cpu_seconds(dedup_seconds)
        t = time.perf_counter()
        tracker.begin_pass("finalize", *survivors)
        part_counts = finalize.write_parts(
            filtered,
            verdicts,
            build,
            partitions=min(len(files), config.dedup.shards),
            reject_text=config.rejects.text,
            doc_columns=finalize.doc_columns(config),
            paragraph_dedup=paragraph_dedup,
            dup_counts=deduped.dup_counts,
        )
        scorers = scores.summarize(filtered, config)  # what each scorer dropped, for the report
        timings["finalize"] = time.perf_counter() - t
        watch.progress()
    else:
        part_counts, dedup_seconds, scorers = finalize.COUNT_SCHEMA.empty_table(), {}, {}
        paragraph_filter = None

    manifest = finalize.manifest(
        config=config,
        out=build,
        files=files,
        records_read=filtering.rows_in(work / "filtered"),
        part_counts=part_counts,
        stage_seconds={**filter_seconds["stages"], **dedup_seconds},
        pass_seconds=timings,
        wall_seconds=time.time() - started,
        node_seconds=filter_seconds["nodes"],
        scorers=scorers,
        paragraph_filter=paragraph_filter,
    )
    tracker.counted(manifest)
    if files:
        for name, row in manifest["stages"].items():
            if "rows_in" in row:
                log.info("%s", stage_line(name, row))
        log.info(
            "finalize: %d kept, %d rejected, %.1f s",
            manifest["counts"]["kept"],
            sum(manifest["counts"]["rejected"].values()),
            timings["finalize"],
        )

    # Tokens pass: tokenizer, token counts, the weighted mixture, packed and shuffled token shards.
    t = time.perf_counter()
    tracker.begin_pass("tokens", *progress.parquet_size(build / "docs"))
    result = tokens.run(config, build, tokens.curated_files(config, build, files))
    timings["tokens_pass"] = time.perf_counter() - t
    watch.progress()
    tracker.end_pass()
    manifest = finalize.add_tokens(build, manifest, result, timings["tokens_pass"], wall_seconds=time.time() - started)
    if "huggingface" in config.packing.formats:  # the dataset card, from the complete manifest
        manifest["tokens"]["exports"]["huggingface"] = export.card(build, manifest)
        manifest["outputs"]["huggingface"] = ["README.md"]
        finalize.write_manifest(build, manifest)

    # Report: one self-contained page of plots.
    report.write(build)

    # Commit: the complete new output, its log too, replaces the earlier one.
    run_log.move(build / RUN_LOG)
    progress.stop_writing()  # _work is removed next: progress.json goes with it
    storage.commit_local(build, out, work / "replaced")
    shutil.rmtree(work, ignore_errors=True)
    log.info("report: %s", out / "report.html")
    return manifest


def stage_line(name: str, row: dict) -> str:
    """A stage's log line from its manifest row; a stage that is off, or got no document, has no time."""
    took = "did not run" if row["seconds"] is None else f"{row['seconds']} s"
    return f"{name}: {row['rows_in']} in, {row['rejected']} rejected, {took}"


def _one_line(error: BaseException) -> str:
    """An error in one line: the innermost `SomeError: message` line of its text (Ray nests the original
    error's text inside its own), and the actor it concerns, if any."""
    text = str(error)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if re.match(r"^[\w.]+(Error|Exception): ", line)]
    line = errors[-1] if errors else f"{type(error).__name__}: {lines[0] if lines else ''}"
    actor = re.search(r"class_name: (\w+)", text)
    return f"{line} (actor {actor.group(1)})" if actor else line


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
        return (
            json.loads((build / "manifest.json").read_text()).get("complete") is True
            and (build / "report.html").is_file()
        )
    except (OSError, ValueError):
        return False
