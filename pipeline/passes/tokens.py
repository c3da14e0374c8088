"""The mixture and tokens pass: curated documents to a weighted mixture of sources, packed into shuffled,
fixed-length token sequences.

    tokenizer   train a byte-level BPE on the curated documents in the fixed order (driver), or load one;
                tokens/ is then the tokenizer's folder, as transformers' AutoTokenizer loads it
    encode      every curated document once, encode_batch per batch on the workers, to _work/encoded
    mixture     token counts per document -> passes per source -> the documents drawn (driver)
    pack        each drawn document cut into pieces of its sequences (workers), grouped by shard,
                put together and written as tokens/part-NNNNN.parquet
    export      packing.formats besides parquet (pipeline/passes/export.py, driver): Megatron's from the drawn
                documents in draw order (draw_order) and _work/encoded, the others from the shards

Documents are numbered in one fixed order: this run's docs/ parts in input-file order, then each curated
Parquet source's files (sorted) in config order. The tokenizer, the draws, the sequences and their
shuffled positions are all decided from that order and the seed on the driver, and each shard is put
together from pieces sorted by position, so the shard bytes do not depend on workers or blocks.
"""

from __future__ import annotations

import json
import math
import logging
import os
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import tokenizers

from pipeline.engines import engine
from pipeline.passes import export
from pipeline.config import Config, ConfigError
from pipeline.passes.finalize import write_table
from pipeline.storage import parquet_file, part_index, part_name, write_atomic
from stages.mixture import plan_mixture, repetition_warnings
from stages.tokens import DocumentEncoder, assemble, cut, id_limit, stream_layout, token_dtype, train_bpe

log = logging.getLogger("crawlbelt")
# tokens/ as a tokenizer folder: what the manifest lists of it (write_tokenizer_config).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
SHARD_SCHEMA = pa.schema(
    [("shard", pa.int64()), ("sequences", pa.int64()), ("counts", pa.string()), ("write_error", pa.string())]
)


@dataclass
class CuratedFile:
    path: str
    source: str
    first_doc: int  # number of its first document in the fixed order
    documents: int
    stored_bytes: int  # its column chunks' compressed size, to group files into encode tasks


def curated_files(config: Config, out: Path, files: list[tuple[str, str]]) -> list[CuratedFile]:
    """Every file of curated documents, in the fixed order: this run's docs/ parts (part NNNNN holds the
    kept documents of input file NNNNN), then the curated-Parquet sources' files in config order."""
    found = [(str(p), files[part_index(p.name)][1]) for p in sorted((out / "docs").glob("part-*.parquet"))]
    for source in config.sources:
        if source.curated:
            found += [(path, source.name) for path in source.files]
    result, first = [], 0
    for path, owner in found:
        metadata = parquet_file(path, config.storage).metadata
        stored = sum(
            metadata.row_group(i).column(j).total_compressed_size
            for i in range(metadata.num_row_groups)
            for j in range(metadata.num_columns)
        )
        result.append(CuratedFile(path, owner, first, metadata.num_rows, stored))
        first += metadata.num_rows
    return result


def _texts(curated: list[CuratedFile], storage):
    for f in curated:
        for batch in parquet_file(f.path, storage).iter_batches(batch_size=1024, columns=["text"]):
            yield [t or "" for t in batch.column(0).to_pylist()]


def prepare_tokenizer(config: Config, curated: list[CuratedFile], tokens_dir: Path) -> str:
    """Train (or copy the configured) tokenizer.json into tokens/; returns its JSON text."""
    tokens_dir.mkdir(parents=True, exist_ok=True)
    target = tokens_dir / "tokenizer.json"
    # Written whole or not at all: a killed run never leaves half a tokenizer.
    if config.tokenizer.path:
        write_atomic(target, partial(shutil.copyfile, config.tokenizer.path))  # honoured byte for byte
    else:
        special = [config.tokenizer.eos_token, config.tokenizer.pad_token]
        trained = train_bpe(_texts(curated, config.storage), config.tokenizer.vocab_size, special)
        # Written by Python, not Tokenizer.save (same bytes): a full disk is then an OSError with its errno.
        write_atomic(target, trained.to_str(pretty=True))
    return target.read_text()


def write_tokenizer_config(tokens_dir: Path, special: dict[str, str]) -> None:
    """tokenizer_config.json and special_tokens_map.json beside tokenizer.json, so that tokens/ is the folder
    transformers' AutoTokenizer.from_pretrained loads as a PreTrainedTokenizerFast (4.x reads the special tokens
    from special_tokens_map.json, 5.x from tokenizer_config.json), whose eos_token is the run's end token: a
    tokenizer.json alone names none, and Megatron-LM's HuggingFaceTokenizer takes its eod from it. The pad token
    where the tokenizer has one (LLM Foundry's collator masks it). No decoding clean-up, which would change
    spaces before punctuation: it decodes as tokenizer.json does."""
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "clean_up_tokenization_spaces": False} | special
    write_atomic(tokens_dir / "tokenizer_config.json", json.dumps(config, indent=2, sort_keys=True) + "\n")
    write_atomic(tokens_dir / "special_tokens_map.json", json.dumps(special, indent=2, sort_keys=True) + "\n")


_encoders: dict[tuple[str, str], DocumentEncoder] = {}


def _encoder(tokenizer_json: str, engine: str) -> DocumentEncoder:
    """One encoder per worker process: building one takes tens of milliseconds, and the engine runs many
    short tasks on the same few worker processes."""
    if (tokenizer_json, engine) not in _encoders:
        _encoders.clear()
        _encoders[tokenizer_json, engine] = DocumentEncoder(tokenizer_json, engine)
    return _encoders[tokenizer_json, engine]


class EncodeFiles:
    """Generator over one task's items: rows (path, first_doc) in; per batch of documents out: doc_index, n_tokens
    and the tokens (no end token yet)."""

    def __init__(self, tokenizer_json: str, engine: str, batch_size: int, storage):
        self.tokenizer_json = tokenizer_json
        self.engine = engine
        self.batch_size = batch_size
        self.storage = storage  # the config's `storage` settings, for s3:// sources

    def __call__(self, files: pa.Table):
        # A task holds one CPU and the engine runs one per CPU: encode_batch's own thread pool would only
        # oversubscribe the cores (its idle threads spin). tokenizers reads this at every call.
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
        encode = _encoder(self.tokenizer_json, self.engine)
        for path, first_doc in zip(files["path"].to_pylist(), files["first_doc"].to_pylist()):
            doc = first_doc
            for batch in parquet_file(path, self.storage).iter_batches(batch_size=self.batch_size, columns=["text"]):
                lengths, values = encode(batch.column(0).to_pylist())
                offsets = np.zeros(len(lengths) + 1, np.int64)
                np.cumsum(lengths, out=offsets[1:])
                yield pa.table(
                    {
                        "doc_index": pa.array(np.arange(doc, doc + len(lengths), dtype=np.int64)),
                        "n_tokens": pa.array(lengths),
                        "tokens": pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(values)),
                    }
                )
                doc += len(lengths)


class PackFile:
    """Generator over one task's items: rows (path of an encoded file, its occurrences) in, the pieces of sequences
    those occurrences fill out: shard, position (in the shuffled order), offset, source_id, tokens.

    An occurrence is one drawn document: (doc_index, source_id, start in its source's stream).
    """

    def __init__(self, positions, bases, sequences, seq_tokens, per_shard, eos_id, dtype):
        self.positions = positions  # engine.Shared: written position of each sequence, by global id
        self.bases = bases  # first global sequence id of each source
        self.sequences = sequences  # sequences of each source
        self.seq_tokens = seq_tokens
        self.per_shard = per_shard
        self.eos = np.array([eos_id], dtype)

    def __call__(self, rows: pa.Table):
        position_of = self.positions.value
        for path, occurrences in zip(rows["path"].to_pylist(), rows["occurrences"].to_pylist()):
            occurrences = np.frombuffer(occurrences, np.int64).reshape(-1, 3)
            encoded = pq.read_table(path, columns=["doc_index", "tokens"])
            doc_index = encoded["doc_index"].to_numpy()
            tokens = encoded["tokens"].combine_chunks()
            offsets, values = tokens.offsets.to_numpy(), tokens.values.to_numpy()
            by_doc = np.argsort(doc_index)
            rows_of = by_doc[np.searchsorted(doc_index, occurrences[:, 0], sorter=by_doc)]
            positions, starts, sources, pieces = [], [], [], []
            for row, (_, source_id, start) in zip(rows_of, occurrences):
                document = np.concatenate([values[offsets[row] : offsets[row + 1]], self.eos])
                for k, offset, piece in cut(document, int(start), self.seq_tokens, int(self.sequences[source_id])):
                    positions.append(position_of[self.bases[source_id] + k])
                    starts.append(offset)
                    sources.append(source_id)
                    pieces.append(piece)
            lengths = np.fromiter(map(len, pieces), np.int64, count=len(pieces))
            piece_offsets = np.zeros(len(pieces) + 1, np.int64)
            np.cumsum(lengths, out=piece_offsets[1:])
            position_array = np.array(positions, np.int64)
            yield pa.table(
                {
                    "shard": pa.array(position_array // self.per_shard),
                    "position": pa.array(position_array),
                    "offset": pa.array(np.array(starts, np.int64)),
                    "source_id": pa.array(np.array(sources, np.int64)),
                    "tokens": pa.LargeListArray.from_arrays(
                        pa.array(piece_offsets), pa.array(np.concatenate(pieces) if pieces else self.eos[:0])
                    ),
                }
            )


def write_shard(
    pieces: pa.Table, *, out: str, names: list[str], seq_tokens: int, fill: int, per_shard: int, total: int
) -> pa.Table:
    """Per group: all pieces of one shard in; its sequences put together, written, counted."""
    pieces = pieces.sort_by([("position", "ascending"), ("offset", "ascending")])
    shard = pieces["shard"][0].as_py()
    positions = pieces["position"].to_numpy()
    tokens = pieces["tokens"].combine_chunks()
    firsts, matrix, lengths = assemble(
        positions,
        pieces["offset"].to_numpy(),
        pc.list_value_length(tokens).to_numpy(),
        tokens.flatten().to_numpy(),
        seq_tokens,
        fill,
    )
    expected = np.arange(shard * per_shard, min((shard + 1) * per_shard, total))
    if not np.array_equal(positions[firsts], expected):
        raise RuntimeError(f"token shard {shard}: sequences missing or doubled")
    sources = pieces["source_id"].to_numpy()[firsts]
    try:
        write_table(
            pa.table(
                {
                    "tokens": pa.FixedSizeListArray.from_arrays(pa.array(matrix.ravel()), seq_tokens),
                    "source": pa.array([names[s] for s in sources], pa.string()),
                    "length": pa.array(lengths, pa.int32()),
                }
            ),
            Path(out) / "tokens" / part_name(shard),
        )
    except OSError as error:
        # Returned, not raised: the engine (Ray Data) would log a task's exception with its traceback (about 150 lines
        # for a full disk) before the driver could say it in one line (raise_write_error).
        failed = json.dumps([error.errno, error.strerror or str(error), str(Path(out) / "tokens")])
        return pa.table({"shard": [shard], "sequences": [0], "counts": ["{}"], "write_error": [failed]})
    per_source = np.bincount(sources, weights=lengths, minlength=len(names)).astype(np.int64)
    counts = {
        "tokens": {names[i]: int(n) for i, n in enumerate(per_source) if n},
        "padding": int((seq_tokens - lengths).sum()),
    }
    return pa.table(
        {
            "shard": [shard],
            "sequences": [len(firsts)],
            "counts": [json.dumps(counts)],
            "write_error": pa.array([None], pa.string()),
        }
    )


def raise_write_error(shard_counts: pa.Table) -> None:
    """Raise, on the driver, the first OSError a shard's write returned."""
    for failed in shard_counts["write_error"].drop_null().to_pylist()[:1]:
        code, message, folder = json.loads(failed)
        raise OSError(code, message, folder)


def run(config: Config, out: Path, curated: list[CuratedFile]) -> dict:
    """Tokenizer, mixture and shards; returns the manifest's `mixture` and `tokens` sections, the seconds
    of each step, and the checks that the shards hold what was drawn."""
    seconds: dict[str, float] = {}
    warnings: list[str] = []
    names = [s.name for s in config.sources]
    seq_tokens = config.packing.seq_len + 1
    pad = config.packing.remainder == "pad"

    # Tokenizer: trained on every curated document in the fixed order (deterministic), or the given one.
    with _timed(seconds, "tokenizer"):
        tokenizer = _tokenizer(config, curated, out / "tokens", pad)
        write_tokenizer_config(out / "tokens", special_tokens(config, tokenizer))
    log.info(
        "tokenizer: %s, %d ids (%s), encoded with %s, %.1f s",
        "given" if config.tokenizer.path else "trained byte-level BPE",
        tokenizer.vocab_size,
        tokenizer.dtype.name,
        tokenizer.engine,
        seconds["tokenizer"],
    )
    if tokenizer.cleared:
        _warn(
            warnings,
            f"tokenizer: the {' and '.join(tokenizer.cleared)} settings of {config.tokenizer.path} are "
            "ignored: each document is encoded whole, and packing places the pads (packing.remainder)",
        )

    # Encode: every curated document once; the tokens wait in _work/encoded for packing.
    with _timed(seconds, "encode"):
        documents = sum(f.documents for f in curated)
        n_tokens, file_of, encoded_files = _encode(
            curated, tokenizer.json, config.tokenizer, out / "_work", documents, config.resources.encode, config.storage
        )
    log.info("encode: %d documents, %d tokens, %.1f s", documents, int(n_tokens.sum()), seconds["encode"])

    # Mixture: each source's documents (with their end token), its passes, the documents drawn.
    with _timed(seconds, "mixture"):
        mixture = _mixture(config, curated, n_tokens, seq_tokens, pad)
    for d in mixture.draws:
        log.info(
            "mixture: %s (weight %g): %s passes, %d tokens drawn of %d",
            d.name,
            d.weight,
            "-" if d.passes is None else f"{d.passes:.2f}",
            d.tokens_drawn,
            d.tokens_available,
        )

    # Pack: sequences numbered source by source, shuffled to their written positions, written by shard.
    with _timed(seconds, "pack"):
        total, shard_counts = _pack(config, out, mixture, tokenizer, file_of, encoded_files, seq_tokens)
    tokens_written, padding = _written(shard_counts, names)
    shard_rows = [  # each with its size and SHA-256, as the other formats' files
        export.described(out, out / "tokens" / part_name(s)) | {"sequences": n}
        for s, n in zip(shard_counts["shard"].to_pylist(), shard_counts["sequences"].to_pylist())
    ]
    dropped = {name: lay.dropped for name, lay in zip(names, mixture.layouts)}
    log.info(
        "pack: %d sequences of %d tokens in %d shards, %d tokens dropped, %d padded, %.1f s",
        total,
        seq_tokens,
        len(shard_rows),
        sum(dropped.values()),
        padding,
        seconds["pack"],
    )
    if not total:
        drawn = sum(d.tokens_drawn for d in mixture.draws)
        _warn(
            warnings,
            f"pack: no sequence written: {drawn} tokens drawn, fewer than one sequence of {seq_tokens} "
            f"(packing.seq_len + 1)" + ("; lower packing.seq_len or set packing.remainder: pad" if drawn else ""),
        )
    # Exports: the same sequences in the formats other trainers read (packing.formats).
    # Megatron's holds the drawn documents themselves, from the encoded files: GPTDataset packs them itself.
    with _timed(seconds, "export"):
        shards = [r["path"] for r in shard_rows]
        drawn = export.DrawnDocuments(
            draw_order(mixture.occurrences, config.mixture.seed, config.packing.shuffle),
            n_tokens,
            file_of,
            encoded_files,
        )
        exports = export.write(out, config.packing.formats, shards, drawn, tokenizer.id_limit, tokenizer.eos_id)
        shutil.rmtree(out / "_work" / "encoded", ignore_errors=True)
    for name, files in exports.items():
        log.info("export: %s, %s", name, ", ".join(f"{f['path']} ({f['bytes']:,} bytes)" for f in files))
    held = sum(r["sequences"] for r in shard_rows)
    if "parquet" not in config.packing.formats:  # the Parquet shards were only the exports' source
        for row in shard_rows:
            (out / row["path"]).unlink()
        shard_rows = []
    checks = {
        "token shards hold every sequence planned": held == total,
        "tokens in shards == tokens drawn - dropped": all(
            tokens_written[n] == d.tokens_drawn - dropped[n] for n, d in zip(names, mixture.draws)
        ),
    }
    return {
        "mixture": {
            "budget_tokens": mixture.budget,
            "seed": config.mixture.seed,
            "max_passes": config.mixture.max_passes,
            "table": [d.row() for d in mixture.draws],
            "warnings": mixture.warnings,
        },
        "tokens": {
            "seq_len": config.packing.seq_len,
            "vocab_size": tokenizer.vocab_size,
            "eos_id": tokenizer.eos_id,
            "pad_id": tokenizer.pad_id,
            "dtype": tokenizer.dtype.name,
            "tokenizer": "tokens/tokenizer.json",
            "tokenizer_files": [export.described(out, out / "tokens" / name) for name in TOKENIZER_FILES],
            "encoded_with": tokenizer.engine,
            "remainder": config.packing.remainder,
            "shuffled": config.packing.shuffle,
            "shards": shard_rows,
            "formats": config.packing.formats,
            "exports": exports,  # per format besides parquet: its files, with size and SHA-256
            "sequences": total,
            "tokens_per_source": tokens_written,
            "dropped_tokens_per_source": dropped,
            "padding_tokens": padding,
            "warnings": warnings,
        },
        "seconds": seconds,
        "checks": checks,
    }


@contextmanager
def _timed(seconds: dict[str, float], step: str):
    start = time.perf_counter()
    yield
    seconds[step] = time.perf_counter() - start


@dataclass
class Tokenizer:
    json: str  # tokenizer.json's text
    engine: str  # what encodes with it (DocumentEncoder.engine)
    cleared: list[str]  # settings of a given tokenizer that encoding ignores (DocumentEncoder.cleared)
    vocab_size: int
    id_limit: int  # the largest id + 1, which the id width of the shards and exports holds (stages.tokens.id_limit)
    dtype: np.dtype  # of the token ids in the shards
    eos_id: int
    pad_id: int | None  # None unless packing.remainder is pad


def _tokenizer(config: Config, curated: list[CuratedFile], tokens_dir: Path, pad: bool) -> Tokenizer:
    tokenizer_json = prepare_tokenizer(config, curated, tokens_dir)
    encoder = DocumentEncoder(tokenizer_json, config.tokenizer.engine)
    eos_id = encoder.plain.token_to_id(config.tokenizer.eos_token)
    assert eos_id is not None  # config validation checks a given tokenizer; a trained one has it as a special
    pad_id = encoder.plain.token_to_id(config.tokenizer.pad_token) if pad else None
    pad_id = eos_id if pad and pad_id is None else pad_id
    limit = id_limit(encoder.plain)
    # the vocabulary a model sizes its embeddings by: the largest id + 1, more than the entries of a given
    # tokenizer whose ids have gaps (a model of its entries' count would index past its table)
    vocab_size = max(encoder.plain.get_vocab_size(), limit)
    return Tokenizer(
        tokenizer_json, encoder.engine, encoder.cleared, vocab_size, limit, token_dtype(limit), eos_id, pad_id
    )


def special_tokens(config: Config, tokenizer: Tokenizer) -> dict[str, str]:
    """The tokenizer's special tokens as transformers names them, for its tokenizer_config.json: the end
    token, and the pad token where the tokenizer holds it (a given one may not: its users then pick one)."""
    special = {"eos_token": config.tokenizer.eos_token}
    if tokenizers.Tokenizer.from_str(tokenizer.json).token_to_id(config.tokenizer.pad_token) is not None:
        special["pad_token"] = config.tokenizer.pad_token
    return special


@dataclass
class Mixture:
    budget: int  # tokens
    draws: list  # stages.mixture's per-source draws
    warnings: list[str]
    occurrences: list[np.ndarray]  # per source: the doc_index of each document drawn, in stream order
    layouts: list  # per source: where each occurrence starts in its stream (stages.tokens.stream_layout)


def _mixture(config: Config, curated: list[CuratedFile], n_tokens: np.ndarray, seq_tokens: int, pad: bool) -> Mixture:
    names = [s.name for s in config.sources]
    doc_source = np.zeros(len(n_tokens), np.int64)
    for f in curated:
        doc_source[f.first_doc : f.first_doc + f.documents] = names.index(f.source)
    packed_len = np.where(n_tokens > 0, n_tokens + 1, 0)
    members = [np.flatnonzero(doc_source == i) for i in range(len(names))]
    selected = [select_documents(source, m, curated, config.storage) for source, m in zip(config.sources, members)]
    members = [m for m, _ in selected]
    unmatched = {config.sources[i].name: f"sources[{i}].{why}" for i, (_, why) in enumerate(selected) if why}
    if unmatched and not any(packed_len[m].sum() for m in members):
        # an output without token shards is not what the user asked for; the filter pass is kept for the rerun
        raise ConfigError(f"{next(iter(unmatched.values()))}; no other source has a document to draw")
    budget, draws = plan_mixture(
        [(s.name, s.weight, packed_len[m]) for s, m in zip(config.sources, members)],
        config.mixture.budget_tokens,
        config.mixture.seed,
    )
    warnings = [
        *unmatched.values(),
        *repetition_warnings([d for d in draws if d.name not in unmatched], config.mixture.max_passes),
    ]
    for line in warnings:
        log.warning("mixture: %s", line)
    occurrences = [m[d.draws] for m, d in zip(members, draws)]
    layouts = [stream_layout(packed_len[o], seq_tokens, pad) for o in occurrences]
    return Mixture(budget, draws, warnings, occurrences, layouts)


def draw_order(occurrences: list[np.ndarray], seed: int, shuffle: bool) -> np.ndarray:
    """The drawn documents (doc_index; a document drawn twice is there twice) in draw order: the sources in
    config order, each source's draws in its stream order (whole passes, then the sampled rest, each in
    document order); with packing.shuffle, then permuted from mixture.seed, so that sources and passes mix
    along the order and any contiguous range of it (a Megatron split) samples the whole mixture."""
    drawn = np.concatenate(occurrences) if occurrences else np.empty(0, np.int64)
    if shuffle:
        drawn = drawn[np.random.default_rng([seed, 2]).permutation(len(drawn))]
    return drawn.astype(np.int64)


def _pack(
    config: Config,
    out: Path,
    mixture: Mixture,
    tokenizer: Tokenizer,
    file_of: np.ndarray,
    encoded_files: list[str],
    seq_tokens: int,
) -> tuple[int, pa.Table]:
    """The drawn documents cut into sequences, shuffled and written as shards; the number of sequences and
    each shard's counts (SHARD_SCHEMA)."""
    sequences = np.array([lay.sequences for lay in mixture.layouts], np.int64)
    bases = np.concatenate([[0], np.cumsum(sequences)[:-1]]).astype(np.int64)
    total = int(sequences.sum())
    if not total:
        return total, SHARD_SCHEMA.empty_table()
    written_order = (
        np.random.default_rng([config.mixture.seed, 1]).permutation(total)
        if config.packing.shuffle
        else np.arange(total)
    )
    position_of = np.empty(total, np.int64)
    position_of[written_order] = np.arange(total)
    per_shard = config.packing.sequences_per_shard
    jobs = _pack_jobs(mixture.occurrences, mixture.layouts, file_of, encoded_files)
    pack = PackFile(
        engine.Shared(position_of), bases, sequences, seq_tokens, per_shard, tokenizer.eos_id, tokenizer.dtype
    )
    write = partial(
        write_shard,
        out=str(out),
        names=[s.name for s in config.sources],
        seq_tokens=seq_tokens,
        fill=tokenizer.eos_id if tokenizer.pad_id is None else tokenizer.pad_id,
        per_shard=per_shard,
        total=total,
    )
    shards = -(-total // per_shard)
    shard_counts = engine.group_to_table(jobs, "shard", min(shards, 16), write, SHARD_SCHEMA, before=pack).sort_by(
        "shard"
    )
    raise_write_error(shard_counts)
    return total, shard_counts


def _written(shard_counts: pa.Table, names: list[str]) -> tuple[dict[str, int], int]:
    """Tokens written per source, and padding tokens, summed over the shards' counts."""
    tokens_written = {name: 0 for name in names}
    padding = 0
    for text in shard_counts["counts"].to_pylist():
        counts = json.loads(text)
        padding += counts["padding"]
        for name, n in counts["tokens"].items():
            tokens_written[name] += n
    return tokens_written, padding


def select_documents(source, members: np.ndarray, curated: list[CuratedFile], storage) -> tuple[np.ndarray, str | None]:
    """The documents of a source the mixture may draw: all of them, or with `select` those with the best
    score (the top fraction, ties to the earlier document, and/or at least min_score; a null score never
    qualifies); and, when `select` matched none of the source's documents, why."""
    select = source.select
    if select is None:
        return members, None
    scores = np.concatenate(
        [_scores(f, select.score, storage) for f in curated if f.source == source.name] or [np.empty(0)]
    )
    keep = ~np.isnan(scores)
    if select.min_score is not None:
        keep &= scores >= select.min_score
    if select.top_fraction is not None:
        best = np.argsort(-np.where(keep, scores, -np.inf), kind="stable")[
            : math.ceil(select.top_fraction * len(scores))
        ]
        keep &= np.isin(np.arange(len(scores)), best)
    log.info("mixture: %s: %d of %d documents selected by %s", source.name, int(keep.sum()), len(scores), select.score)
    return members[keep], _none_selected(source, scores) if len(scores) and not keep.any() else None


def _none_selected(source, scores: np.ndarray) -> str:
    select = source.select
    scored = scores[~np.isnan(scores)]
    why = (
        f"the best {select.score} of its {len(scores)} documents is {scored.max():g}, below min_score {select.min_score:g}"
        if len(scored)
        else f"none of its {len(scores)} documents has a {select.score}"
    )
    return f"select matched no document of source {source.name!r}: {why}"


def _scores(f: CuratedFile, column: str, storage) -> np.ndarray:
    """One score per document of a curated file, NaN where it has none."""
    table = parquet_file(f.path, storage).read(columns=[column])
    return table[column].cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False)


def _warn(warnings: list[str], line: str) -> None:
    log.warning(line)
    warnings.append(line)


def _encode(curated, tokenizer_json, tokenizer, work, documents, resources, storage):
    """Encode every curated document on the workers into work/encoded; returns each document's token count,
    the encoded file it is in, and those files."""
    n_tokens = np.full(documents, -1, np.int64)
    file_of = np.full(documents, -1, np.int64)
    if not documents:
        return n_tokens, file_of, []
    rows = [{"path": f.path, "first_doc": f.first_doc} for f in curated if f.documents]
    engine.map_to_parquet(
        rows,
        EncodeFiles(tokenizer_json, tokenizer.engine, tokenizer.batch_size, storage),
        work / "encoded",
        tasks=_tasks_for(curated),
        resources=resources,
    )
    encoded_files = sorted(str(p) for p in (work / "encoded").glob("*.parquet"))
    seen = 0
    for i, path in enumerate(encoded_files):
        table = pq.read_table(path, columns=["doc_index", "n_tokens"])
        index = table["doc_index"].to_numpy()
        n_tokens[index] = table["n_tokens"].to_numpy()
        file_of[index] = i
        seen += len(index)
    if seen != documents or (n_tokens < 0).any():
        raise RuntimeError(f"encode: {documents} curated documents, {seen} encoded")
    return n_tokens, file_of, encoded_files


def _tasks_for(curated: list[CuratedFile], task_bytes: int = 64 << 20) -> int:
    """Encode tasks: each task costs tens of milliseconds around its work, so files are grouped,
    but into at least two tasks per CPU so the cluster stays busy."""
    files = [f for f in curated if f.documents]
    size = sum(f.stored_bytes for f in files)
    return max(1, min(len(files), max(2 * engine.cpu_count(), size // task_bytes)))


def _pack_jobs(occurrences, layouts, file_of, encoded_files) -> list[dict]:
    """One job per encoded file: the occurrences (doc_index, source_id, stream start) of its documents."""
    table = np.concatenate(
        [np.stack([o, np.full(len(o), i), lay.starts], axis=1) for i, (o, lay) in enumerate(zip(occurrences, layouts))]
    ).astype(np.int64)
    by_file = np.argsort(file_of[table[:, 0]], kind="stable")
    table = table[by_file]
    files = file_of[table[:, 0]]
    jobs = []
    for i, path in enumerate(encoded_files):
        rows = table[np.searchsorted(files, i, "left") : np.searchsorted(files, i, "right")]
        if len(rows):
            jobs.append({"path": path, "occurrences": rows.tobytes()})
    return jobs
