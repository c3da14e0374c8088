"""Token shards in the curation run's format, for the train tests: a byte-level BPE trained with Hugging
Face `tokenizers` on the fixture crawl's clean articles, documents joined by EOS, packed into sequences of
seq_len + 1 tokens, the last one padded."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers


@lru_cache(maxsize=1)
def fixture_articles() -> list[str]:
    """The clean English articles planted in the fixture crawl (testdata/fixture_pages.yaml)."""
    from testdata.fixture_plan import ARTICLES

    return ["\n\n".join([title, *paragraphs]) for _, _, title, paragraphs in ARTICLES.values()]


def train_tokenizer(texts: list[str], vocab_size: int) -> Tokenizer:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|endoftext|>", "<|pad|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer)
    return tokenizer


def write_token_shards(
    out: Path,
    texts: list[str] | None = None,
    *,
    seq_len: int = 64,
    vocab_size: int = 512,
    sequences_per_shard: int = 40,
    dtype: str = "uint16",
    manifest: bool = True,
) -> dict:
    """Write OUT/tokens/tokenizer.json, OUT/tokens/part-NNNNN.parquet and (optionally) the manifest's
    tokens section; returns that section."""
    texts = texts or fixture_articles()
    tokenizer = train_tokenizer(texts, vocab_size)
    eos_id, pad_id = tokenizer.token_to_id("<|endoftext|>"), tokenizer.token_to_id("<|pad|>")
    stream = []
    for encoding in tokenizer.encode_batch(texts):
        stream.extend(encoding.ids + [eos_id])
    width = seq_len + 1
    rows, lengths = [], []
    for start in range(0, len(stream), width):
        chunk = stream[start : start + width]
        lengths.append(len(chunk))
        rows.append(chunk + [pad_id] * (width - len(chunk)))
    tokens = np.asarray(rows, dtype=dtype)
    folder = Path(out) / "tokens"
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    shards = []
    for i, start in enumerate(range(0, len(rows), sequences_per_shard)):
        part = tokens[start : start + sequences_per_shard]
        column = pa.FixedSizeListArray.from_arrays(pa.array(part.ravel()), width)
        table = pa.table(
            {
                "tokens": column,
                "source": pa.array(["web"] * len(part)),
                "length": pa.array(lengths[start : start + sequences_per_shard], pa.int32()),
            }
        )
        path = f"tokens/part-{i:05d}.parquet"
        pq.write_table(table, Path(out) / path)
        shards.append({"path": path, "sequences": len(part)})
    section = {
        "seq_len": seq_len,
        "vocab_size": tokenizer.get_vocab_size(),
        "eos_id": eos_id,
        "pad_id": pad_id,
        "dtype": dtype,
        "shards": shards,
        "sequences": len(rows),
        "tokens_per_source": {"web": int(sum(lengths))},
    }
    if manifest:
        (Path(out) / "manifest.json").write_text(json.dumps({"tokens": section}, indent=1))
    return section
