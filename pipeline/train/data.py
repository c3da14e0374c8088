"""The token shards of a curation run, read as one stream of packed sequences from a saved position.

OUT/tokens/part-NNNNN.parquet holds `tokens` (fixed-size lists of seq_len + 1 ids: inputs are tokens[:-1],
targets tokens[1:]), `source` and `length` (real tokens; the rest of a short final sequence is padding).
OUT/manifest.json's `tokens` section lists the shards in order; without it, tokens/*.parquet sorted.

The position in the stream is one number, `consumed`: the sequences used so far by every worker together.
The stream walks the shards in order and starts again at the first after the last (the next epoch), so
(epoch, shard, sequence) follows from `consumed` and the shard sizes.
"""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_right
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import torch

IGNORE = -100  # the target of a padding position: cross_entropy skips it


class TokenShards:
    def __init__(self, folder: str | Path):
        folder = Path(folder)
        manifest = folder / "manifest.json"
        section = json.loads(manifest.read_text()).get("tokens") if manifest.exists() else None
        if section and section.get("shards"):
            self.paths = [folder / s["path"] for s in section["shards"]]
            self.sizes = [int(s["sequences"]) for s in section["shards"]]
        else:
            self.paths = sorted((folder / "tokens").glob("*.parquet"))
            self.sizes = [pq.ParquetFile(p).metadata.num_rows for p in self.paths]
        if not self.paths or not sum(self.sizes):
            raise ValueError(f"no token sequences in {folder / 'tokens'}")
        tokens_type = pq.read_schema(self.paths[0]).field("tokens").type
        self.seq_len = tokens_type.list_size - 1
        if section and section.get("vocab_size"):
            self.vocab_size = int(section["vocab_size"])
        else:
            from tokenizers import Tokenizer

            self.vocab_size = Tokenizer.from_file(str(folder / "tokens" / "tokenizer.json")).get_vocab_size()
        self.starts = np.cumsum([0] + self.sizes)  # stream index of each shard's first sequence
        self.total = int(self.starts[-1])
        self._open: tuple[int, np.ndarray, np.ndarray] | None = None  # the shard last read

    def fingerprint(self) -> str:
        """What a data position means: the shards' names and sizes, the sequence length, the vocabulary."""
        shape = [[p.name for p in self.paths], self.sizes, self.seq_len, self.vocab_size]
        return hashlib.sha1(json.dumps(shape).encode()).hexdigest()[:16]

    def position(self, consumed: int) -> dict:
        """Where sequence number `consumed` of the stream is: epoch, shard and sequence within the shard."""
        epoch, index = divmod(consumed, self.total)
        shard = bisect_right(self.starts, index) - 1
        return {"consumed": consumed, "epoch": epoch, "shard": shard, "sequence": index - int(self.starts[shard])}

    def _shard(self, shard: int) -> tuple[np.ndarray, np.ndarray]:
        if self._open is None or self._open[0] != shard:
            table = pq.read_table(self.paths[shard], columns=["tokens", "length"], memory_map=True)
            column = table["tokens"].combine_chunks()
            tokens = column.flatten().to_numpy().reshape(len(column), self.seq_len + 1)
            self._open = (shard, tokens, table["length"].to_numpy())
        return self._open[1], self._open[2]

    def read(self, start: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Sequences start .. start + count - 1 of the stream: tokens (count, seq_len + 1) and lengths."""
        tokens: list[np.ndarray] = []
        lengths: list[int] = []
        while len(tokens) < count:
            where = self.position(start + len(tokens))
            shard_tokens, shard_lengths = self._shard(where["shard"])
            take = min(count - len(tokens), len(shard_tokens) - where["sequence"])
            rows = slice(where["sequence"], where["sequence"] + take)
            tokens.extend(shard_tokens[rows])
            lengths.extend(shard_lengths[rows])
        return np.stack(tokens).astype(np.int64), np.asarray(lengths, dtype=np.int64)

    def batch(self, consumed: int, batch_size: int, rank: int, world: int) -> tuple[torch.Tensor, torch.Tensor]:
        """This worker's share of the global batch that starts at `consumed`: inputs and targets.

        Worker r takes the r-th contiguous slice of batch_size / world sequences. Targets at padding
        positions are IGNORE.
        """
        per_worker = batch_size // world
        tokens, lengths = self.read(consumed + rank * per_worker, per_worker)
        if tokens.max() >= self.vocab_size:
            raise ValueError(f"token id {tokens.max()} is outside the vocabulary of {self.vocab_size}")
        sequences = torch.from_numpy(tokens)
        inputs, targets = sequences[:, :-1], sequences[:, 1:].clone()
        # Target j is token j + 1, real only when j + 1 < length.
        targets[torch.arange(self.seq_len)[None, :] >= torch.from_numpy(lengths)[:, None] - 1] = IGNORE
        return inputs.contiguous(), targets
