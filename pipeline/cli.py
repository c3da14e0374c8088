"""Command line: `python -m pipeline run CONFIG.yaml [...]`, `validate`, `submit`, `dry-run`, `status OUT_DIR`,
`report OUT_DIR`, `train CONFIG.yaml` and `plan`."""

from __future__ import annotations

import argparse
import gc
import errno
import json
import logging
import math
import os
import re
import signal
import sys
import time
import traceback
from pathlib import Path

from pipeline import redact
from pipeline.engines import reaper
from pipeline.config import ConfigError
from pipeline.config.load import load_config
from pipeline.engines.engine import EngineStartError
from pipeline.train.plan import parse_count
from stages.file_names import real_path

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def ranged(convert, accept, expected: str):
    """An argparse type: the text converted, refused in one usage line unless it converts and is accepted."""

    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not accept(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return parse


POSITIVE_INT = ranged(int, lambda value: value > 0, "a positive integer")
POSITIVE = ranged(float, lambda value: 0 < value < math.inf, "a number above 0")  # also refuses nan
FRACTION = ranged(float, lambda value: 0 < value <= 1, "a fraction in (0, 1], e.g. 0.4 for 40%")
COUNT = ranged(parse_count, lambda value: True, "a count above 0, e.g. 7.5B or 125M")


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="crawlbelt", description="Web crawls to curated Parquet on Ray Data.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run the belt on the config's inputs")
    run.add_argument("config", help="YAML config file")
    run.add_argument("--input", nargs="+", action="extend", help="WARC/ARC paths or globs (replace the config's)")
    run.add_argument("--output", help="output folder (replaces the config's)")
    run.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY.PATH=VALUE",
        help="override one config value, e.g. --set language.threshold=0.8",
    )
    validate = commands.add_parser(
        "validate",
        help="check a config (every problem at once) and say what a run "
        "would read and write; writes nothing, starts no Ray",
    )
    validate.add_argument("config", help="YAML config file")
    validate.add_argument("--input", nargs="+", action="extend", help="as for run")
    validate.add_argument("--output", help="as for run")
    validate.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE", help="as for run"
    )
    submit = commands.add_parser("submit", help="run a config on a Ray cluster as a Ray job (ray job submit)")
    submit.add_argument("config", help="YAML config file; its folder is the job's working directory")
    submit.add_argument("--address", required=True, help="the cluster's dashboard, e.g. http://HEAD:8265")
    submit.add_argument("--wait", action="store_true", help="stream the job's logs until it ends; exit 1 if it failed")
    submit.add_argument("--output", help="output folder or s3:// URI (replaces the config's; must be absolute)")
    submit.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY.PATH=VALUE",
        help="override one config value in the job",
    )
    submit.add_argument(
        "--working-dir", help="folder the job's files are taken from, the config inside it (default: its folder)"
    )
    submit.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="GLOB",
        help="send these files of the working directory too (besides the config and the files it names)",
    )
    submit.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME",
        help="pass this environment variable to the job (e.g. AWS_ACCESS_KEY_ID)",
    )
    submit.add_argument("--submission-id", help="the job id (default: crawlbelt-DATE-TIME-RANDOM)")
    dry = commands.add_parser("dry-run", help="run CRAWL_SAMPLE through the belt and print its verdict table")
    dry.add_argument("--output", help="output folder (default out/dry-run)")
    train = commands.add_parser("train", help="train the config's transformer on a curation run's token shards")
    train.add_argument("config", help="YAML config file with a train section")
    train.add_argument("--data", help="curation output folder with tokens/ (replaces train.data and output)")
    train.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY.PATH=VALUE",
        help="override one config value, e.g. --set train.steps=500",
    )
    train.add_argument(
        "--stop-after", type=POSITIVE_INT, metavar="STEP", help="stop (with a checkpoint) after this step"
    )
    classifier = commands.add_parser(
        "train-classifier", help="train a quality classifier (fastText or a transformers head) a scorer loads"
    )
    classifier.add_argument("--kind", choices=("fasttext", "transformers"), required=True)
    classifier.add_argument("--out", required=True, help="the model's folder (metrics.json is written beside it)")
    classifier.add_argument("--positive", nargs="+", metavar="FILE", help="reference examples (label hq)")
    classifier.add_argument("--negative", nargs="+", metavar="FILE", help="crawl examples (label cc)")
    classifier.add_argument("--data", nargs="+", metavar="FILE", help="labelled or rated .jsonl/.parquet records")
    classifier.add_argument("--text-field", default="text", help="of JSONL/Parquet records (default text)")
    classifier.add_argument("--label-field", help="--data: a label per record")
    classifier.add_argument("--score-field", help="--data: a numeric score per record (regression)")
    classifier.add_argument("--cut", type=float, help="scores: F1 of score >= CUT; fastText's hq (default 3)")
    classifier.add_argument("--held-out", type=float, default=0.1, help="share kept out of training (default 0.1)")
    classifier.add_argument("--seed", type=int, default=0)
    classifier.add_argument("--epochs", type=int, help="default 5 (fasttext), 3 (transformers)")
    classifier.add_argument("--lr", type=float, help="default 0.1 (fasttext), 5e-5 (transformers)")
    classifier.add_argument("--word-ngrams", type=int, default=2, help="fasttext (default 2)")
    classifier.add_argument("--dim", type=int, default=64, help="fasttext vectors (default 64)")
    classifier.add_argument("--encoder", help="transformers: a local Hugging Face model folder")
    classifier.add_argument("--freeze", action="store_true", help="transformers: train the head only")
    classifier.add_argument("--batch-size", type=int, default=16, help="transformers (default 16)")
    classifier.add_argument("--max-tokens", type=int, default=512, help="transformers (default 512)")
    classifier.add_argument("--max-chars", type=int, default=10_000, help="transformers (default 10000)")
    plan = commands.add_parser("plan", help="memory, ZeRO, tokens, FLOPs, GPU-hours and checkpoint interval")
    plan.add_argument("--params", type=COUNT, required=True, help="parameters, e.g. 7.5B or 125M")
    plan.add_argument("--gpus", type=POSITIVE_INT, required=True)
    plan.add_argument("--tokens", type=COUNT, help="training tokens, e.g. 300B (default: 20 per parameter)")
    plan.add_argument("--peak-tflops", type=POSITIVE, default=989.0, help="per GPU (default: H100/H200 bf16 dense)")
    plan.add_argument(
        "--mfu", type=FRACTION, default=0.4, help="model FLOPs utilization reached, in (0, 1] (default 0.4)"
    )
    plan.add_argument("--save-seconds", type=POSITIVE, help="checkpoint save time C")
    plan.add_argument("--mtbf-hours", type=POSITIVE, help="mean time between failures M of the whole job")
    plan.add_argument("--json", action="store_true", help="print the figures as JSON")
    status = commands.add_parser(
        "status", help="where a run in progress stands (OUT_DIR/_work/progress.json), or a finished one's counts"
    )
    status.add_argument("out_dir", help="a run's output folder")
    status.add_argument("--json", action="store_true", help="print the figures as JSON")
    report = commands.add_parser("report", help="write the HTML report of a finished run (OUT_DIR/report.html)")
    report.add_argument("out_dir", help="a run's output folder")
    report.add_argument("--output", help="where to write the page (default OUT_DIR/report.html)")
    return parser.parse_args(argv)


def write_report(out_dir: str, output: str | None) -> int:
    from pipeline import report

    try:
        print(f"report: {report.write(Path(out_dir), Path(output) if output else None)}")
    except report.ManifestError as exc:
        print(f"report: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"report: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
    return 0


def train_classifier_command(args) -> int:
    from pipeline.train_classifier import Terminated, TrainingError, stop_on_sigterm, train_classifier

    try:
        with stop_on_sigterm():
            metrics = train_classifier(args)
    except TrainingError as exc:
        print(f"train-classifier: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # --out cannot be written
        print(f"train-classifier: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # the model is built beside --out, which a stopped training leaves untouched
        print(
            "train-classifier: interrupted; --out is as it was (run the same command again to train)", file=sys.stderr
        )
        return 130
    except Terminated:  # SIGTERM (timeout, a scheduler): the same clean-up as Ctrl-C
        print(
            "train-classifier: stopped by SIGTERM; --out is as it was (run the same command again to train)",
            file=sys.stderr,
        )
        return 128 + signal.SIGTERM
    held = ", ".join(
        f"{key} {value:.4g}" if isinstance(value, float) else f"{key} {value}"
        for key, value in metrics["held_out"].items()
    )
    print(
        f"train-classifier: {args.kind} model in {args.out}, trained on {metrics['trained_on']} examples; held out: {held}"
    )
    return 0


def main(argv=None) -> int:
    """The command line, its console masked: no credential reaches it (pipeline/redact.py). A reader of its
    output that goes away (`validate | head -1`) ends it quietly, as it does a Unix tool, with 128 + SIGPIPE."""
    with redact.masked_console():
        try:
            code = command(argv)
            sys.stdout.flush()  # a last write the reader missed fails here, not in Python's flush at exit
            return code
        except BrokenPipeError:
            os.dup2(
                os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno()
            )  # so that the flush at exit has nowhere to fail
            return 128 + signal.SIGPIPE
        except Exception:  # a bug: its traceback through the mask (Python would print it after the mask is gone)
            traceback.print_exc()
            return 1


def command(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "plan":
        return plan_command(args)
    if args.command == "train":
        return train_command(args, sys.argv[2:] if argv is None else argv[1:])
    if args.command == "report":
        return write_report(args.out_dir, args.output)
    if args.command == "status":
        from pipeline.status import status_command

        return status_command(args.out_dir, args.json)
    if args.command == "train-classifier":
        return train_classifier_command(args)
    if args.command == "validate":
        return validate_command(args)
    if args.command == "submit":
        from pipeline.submit import submit_command

        return submit_command(args)
    try:
        if args.command == "run":
            config = load_config(args.config, overrides=args.overrides, inputs=args.input, output=args.output)
        else:
            config = load_config(str(CONFIGS / "crawl_sample.yaml"), output=args.output)
            _check_dry_run_output(config)
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2

    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    logging.getLogger("crawlbelt").setLevel(logging.INFO)  # one line per stage and step, with counts
    logging.captureWarnings(True)  # Python's warnings as log lines: on the console and in run.log
    from pipeline import belt  # imports Ray: only once the config is known to be good
    from pipeline.metrics import MetricsPortError

    reaper.start()  # before the engine: every process the run starts ends with it (pipeline/engines/reaper.py)
    started = time.perf_counter()
    try:
        try:
            manifest = belt.run(config, kind=args.command)
        except Exception as exc:
            if not interrupted(exc):  # Ctrl-C: stopped_by_interrupt says it, the engine already going down
                _quiet_engine()
            raise
    except ConfigError as exc:  # found once Ray is up: a task that no node of the cluster can run
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return stopped_by_interrupt(config)
    except belt.OutputError as exc:
        print(with_log(f"output error: {exc}", exc), file=sys.stderr)
        return 2
    except MetricsPortError as exc:  # taken between validation and the run's start, before any work
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    except belt.NodeLostError as exc:
        print(with_log(f"crawlbelt: error: {exc}", exc), file=sys.stderr)
        return 1
    except EngineStartError as exc:
        if interrupted(exc):  # a Ctrl-C while the engine started
            return stopped_by_interrupt(config)
        print(with_log(f"engine error: {exc}", exc), file=sys.stderr)
        return 1
    except belt.filtering.StageCrashError as exc:  # a stage that kills its worker on an input file
        print(with_log(f"stage error: {exc}", exc), file=sys.stderr)
        return 2
    except Exception as exc:
        if interrupted(exc):  # py4j, cleaning up after Ctrl-C, raises its own error over the interrupt
            return stopped_by_interrupt(config)
        broken = stage_error(exc)
        if broken is not None:
            print(with_log(f"stage error: {broken}", exc), file=sys.stderr)
            return 2
        failed = storage_error(exc)
        if failed is None:
            raise  # the traceback ends with the note of where the log is
        print(
            with_log(
                f"output error: {failed.filename or config.output}: {failed.strerror}; free space (or fix "
                "the folder) and run again: files of the filter pass already done are kept",
                exc,
            ),
            file=sys.stderr,
        )
        return 2
    seconds = time.perf_counter() - started
    counts = manifest["counts"]
    if args.command == "dry-run":
        from pipeline.crawl_sample import EXPECTED, verdict_table, verdicts

        found = verdicts(Path(config.output))
        print(verdict_table(found))
        print(f"dry run: {seconds:.1f} s, output in {config.output}")
        if found != EXPECTED:
            print("dry run: the verdicts differ from CRAWL_SAMPLE's expected table", file=sys.stderr)
            return 1
        return 0
    tokens = manifest["tokens"]
    print(f"output: {config.output}")
    print(json.dumps(counts, indent=2))
    print(json.dumps(manifest["mixture"]["table"], indent=2))
    print(
        f"{counts['documents']} documents in {seconds:.1f} s ({counts['documents'] / seconds:.1f} documents/s); "
        f"{tokens['sequences']} sequences of {tokens['seq_len'] + 1} tokens in {len(tokens['shards'])} shards; "
        f"report: {config.output.rstrip('/')}/report.html"
    )
    return 0


def _quiet_engine() -> None:
    """Stop the engine before a failed run says its one line, so that the line is the console's last: Ray's
    driver relays the raylet's messages (a worker died, a task will be retried) from a thread of its own, some
    only as it shuts down at exit, after our line; and stdout, buffered, would be flushed after it too."""
    from pipeline.engines import engine

    try:
        engine.stop()
    except Exception as error:  # noqa: BLE001 (the run's own error is the one to say)
        logging.getLogger("crawlbelt").debug("stopping the engine: %s", error)
    sys.stdout.flush()


def with_log(line: str, error: BaseException) -> str:
    """A failed run's line, and where its log is, if it has one (belt.run notes it on the error)."""
    return "; ".join([line, *getattr(error, "__notes__", [])])


def _check_dry_run_output(config) -> None:
    """A dry run replaces only an earlier dry run's output, never a real run's."""
    from pipeline.storage import output_kind

    if output_kind(config.output, config.storage) == "run":
        raise ConfigError(
            f"output {config.output!r} holds a real run's output, which a dry run would replace with "
            "the 7-page sample; give the dry run another --output"
        )


def validate_command(args) -> int:
    """Every problem of the config, one line each (exit 2); or what a run would read and write (exit 0)."""
    try:
        config = load_config(args.config, overrides=args.overrides, inputs=args.input, output=args.output)
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"config error: {problem}", file=sys.stderr)
        return 2
    from pipeline.config import input_format

    print(f"config {args.config}: no problems found")
    for note in config.notes:
        print(f"note: {note}")
    for source in config.sources:
        files = source.files
        kinds = {"warc": "crawl", "jsonl": "JSONL", "parquet": "Parquet text"}
        kind = (
            "curated Parquet" if source.curated else "/".join(sorted({kinds[input_format(f, source)] for f in files}))
        )
        print(
            f"read: source {source.name!r} (weight {source.weight:g}): {len(files)} {kind} files, "
            f"{input_bytes(files, config.storage):,} bytes"
        )
    print(f"write: {config.output} ({output_plan(config)})")
    return 0


def input_bytes(files: list[str], storage_settings) -> int:
    s3 = [f.removeprefix("s3://") for f in files if f.startswith("s3://")]
    local = sum(os.path.getsize(real_path(f)) for f in files if not f.startswith("s3://"))
    if not s3:
        return local
    from pipeline.storage import s3_filesystem

    return local + sum(info.size for info in s3_filesystem(storage_settings).get_file_info(s3))


def output_plan(config) -> str:
    """Whether the run would make the output or replace an earlier one (validation refused anything else)."""
    from pipeline.storage import output_kind

    kind = output_kind(config.output, config.storage)
    return "a new output" if kind == "empty" else f"replaces the earlier crawlbelt output there (a {kind})"


def stopped_by_interrupt(config) -> int:
    """The one line of a run stopped by Ctrl-C. The interrupt can land inside the engine's constructors (Ray
    Data's Dataset), and those half-built objects complain from __del__ as they are collected at exit: after the
    line, such complaints are dropped so that it stays the last line."""
    print(interrupted_line(config), file=sys.stderr)
    sys.unraisablehook = lambda unraisable: None
    return 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C


def interrupted_line(config) -> str:
    if config.output.startswith("s3://") and config.storage.staging is None:
        return "crawlbelt: interrupted; a rerun starts over (an s3:// output is resumable only with storage.staging)"
    return "crawlbelt: interrupted; run the same command again to resume (the filter pass's finished files are kept)"


STORAGE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


def interrupted(exc: BaseException) -> bool:
    """Whether a Ctrl-C is behind an exception: one raised while the interrupt was being handled, or while the
    engine still owed one that Python swallowed (PySpark's handler cancels the running jobs as it raises)."""
    from pipeline.engines import engine

    return engine.interrupted() or any(isinstance(error, KeyboardInterrupt) for error in engine.error_chain(exc))


def stage_error(exc: BaseException) -> str | None:
    """The line of a user stage that broke its contract in a worker (stages.user.StageError), which Ray
    passes on inside its own error's text."""
    found = re.findall(r"StageError: (.+)", str(exc))
    return found[-1].strip() if found else None


def storage_error(exc: BaseException) -> OSError | None:
    """The full disk, quota or read-only folder behind an exception. Ray passes a worker's exception on
    as text (its chain is not kept), so the text is searched too."""
    from pipeline.engines.engine import error_chain

    for error in error_chain(exc):
        if isinstance(error, OSError) and error.errno in STORAGE_ERRNOS:
            return error
    for code in map(int, re.findall(r"\[Errno (\d+)\]", str(exc))):
        if code in STORAGE_ERRNOS:
            return OSError(code, os.strerror(code))
    return None


def plan_command(args) -> int:
    from pipeline.train.plan import format_plan, plan

    if (args.save_seconds is None) != (args.mtbf_hours is None):
        print("plan: give both --save-seconds and --mtbf-hours, or neither", file=sys.stderr)
        return 2
    figures = plan(args.params, args.gpus, args.tokens, args.peak_tflops, args.mfu, args.save_seconds, args.mtbf_hours)
    print(json.dumps(figures, indent=2) if args.json else format_plan(figures))
    return 0


def torch_installed() -> bool:
    try:
        import torch  # noqa: F401
    except ModuleNotFoundError as exc:
        if exc.name != "torch":  # torch is there but broken: let its own error say why
            raise
        return False
    return True


def train_command(args, worker_args: list[str]) -> int:
    """Check the config, then start the workers (torchrun or Ray Train), or be one under torchrun."""
    if not torch_installed():  # torch is the train extra; the belt runs without it
        print("the train command needs the train extra: pip install 'crawlbelt[train]'", file=sys.stderr)
        return 2
    overrides = list(args.overrides) + ([f"train.data={args.data}"] if args.data else [])
    try:
        config = load_config(args.config, overrides=overrides, for_train=True)
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    from pipeline.train import launch  # imports torch: only once the config is known to be good

    if launch.inside_torchrun():
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # interrupted by torchrun: end at once, without a traceback
        import torch.distributed as dist

        from pipeline.train.loop import train

        train(config, stop_after=args.stop_after)
        gc.collect()  # the sharded model holds the process group in reference cycles: free it while Python is whole
        dist.destroy_process_group()
        return 0
    train_data = config.train.data
    assert train_data is not None  # validation sets it (pipeline/train/checks.py)
    started = time.perf_counter()
    try:
        if config.train.launcher == "ray":
            code = launch.run_ray(config, args.stop_after)
        else:
            code = launch.run_torchrun(config, worker_args)
    except ConfigError as exc:  # the cluster cannot hold the workers
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            f"train: interrupted; run the same command again to resume from the last checkpoint in "
            f"{Path(train_data) / 'train' / 'checkpoints'}",
            file=sys.stderr,
        )
        return 130
    summary = Path(train_data) / "train" / "summary.json"
    if code == 0 and summary.exists():
        figures = json.loads(summary.read_text())
        print(
            f"train: {figures['steps']} steps, final loss {figures['final_loss']:.4f}, "
            f"{len(figures['rollbacks'])} rollbacks, {time.perf_counter() - started:.1f} s; "
            f"run folder {summary.parent}"
        )
    return code
