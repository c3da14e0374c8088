"""Small real Hugging Face models for the tests: a two-layer BERT whose WordPiece tokenizer is trained on local
text, bare (an encoder) or with a classification or regression head trained for a few steps on the bundled
good and bad examples (configs/classifier), and a two-layer GPT-2 regression head whose tokenizer has no pad
token. Built in about a second each; nothing comes from a hub."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "configs" / "classifier"


def examples() -> tuple[list[str], list[str]]:
    """The good and the bad example lines."""
    good, bad = ((EXAMPLES / f"{name}.txt").read_text().splitlines() for name in ("good", "bad"))
    return [line for line in good if line.strip()], [line for line in bad if line.strip()]


def bert_encoder(folder: Path, texts: list[str], seed: int = 0) -> Path:
    """An untrained two-layer BERT (no head) with a WordPiece tokenizer trained on `texts`, as save_pretrained
    writes it: the encoder train-classifier puts a head on."""
    import torch
    from transformers import BertModel

    tokenizer, config = bert_parts(texts, {0: "LABEL_0", 1: "LABEL_1"}, "single_label_classification")
    torch.manual_seed(seed)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def bert_scorer(folder: Path, regression: bool = False, seed: int = 0) -> Path:
    """A model folder as save_pretrained writes it: labels low/high (or one regression output, 1 for good and 0
    for bad examples), trained on the bundled examples."""
    import torch
    from transformers import BertForSequenceClassification

    good, bad = examples()
    labels = {0: "score"} if regression else {0: "low", 1: "high"}
    problem = "regression" if regression else "single_label_classification"
    tokenizer, config = bert_parts(good + bad, labels, problem)
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config)
    batch = tokenizer(good + bad, padding=True, return_tensors="pt")
    targets = torch.tensor([1] * len(good) + [0] * len(bad))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(30):
        optimizer.zero_grad()
        model(**batch, labels=targets.float() if regression else targets).loss.backward()
        optimizer.step()
    model.train(False)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def gpt2_scorer(folder: Path, seed: int = 0) -> Path:
    """A two-layer GPT-2 regression head (1 for good examples, 0 for bad) whose byte-level BPE tokenizer has an
    end token and no pad token, and whose config names none, as OpenAI's GPT-2 is saved: the head reads the last
    token (GPT2ForSequenceClassification pools the last token that is not padding). Trained in one right-padded
    batch, padded with the end token, as transformers' recipe for GPT-2 classification does."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2ForSequenceClassification, PreTrainedTokenizerFast

    good, bad = examples()
    words = Tokenizer(models.BPE())
    words.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    words.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"], initial_alphabet=alphabet)
    words.train_from_iterator(good + bad, trainer)
    end = "<|endoftext|>"
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, bos_token=end, eos_token=end, unk_token=end)
    end_id = words.token_to_id(end)
    config = GPT2Config(
        vocab_size=words.get_vocab_size(), n_positions=128, n_embd=32, n_layer=2, n_head=2, id2label={0: "score"},
        label2id={"score": 0}, problem_type="regression", bos_token_id=end_id, eos_token_id=end_id, pad_token_id=end_id,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = GPT2ForSequenceClassification(config)
    rows = tokenizer(good + bad, truncation=True, max_length=128)["input_ids"]
    width = max(map(len, rows))
    ids = torch.tensor([row + [end_id] * (width - len(row)) for row in rows])
    mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows])
    targets = torch.tensor([1.0] * len(good) + [0.0] * len(bad))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(30):
        optimizer.zero_grad()
        model(input_ids=ids, attention_mask=mask, labels=targets).loss.backward()
        optimizer.step()
    model.train(False)
    model.config.pad_token_id = None  # saved as GPT-2 is: no pad token anywhere
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def rescaled_head(folder: Path, out: Path, scale: float, shift: float) -> Path:
    """A copy of a BERT regression folder whose head outputs `scale * score + shift` (its classifier's weights
    scaled, its bias scaled and shifted): a head on FineWeb-Edu's 0 to 5 scale, or, with scale 0, one whose every
    score is exactly `shift` (a float32)."""
    import shutil

    from safetensors.torch import load_file, save_file

    shutil.copytree(folder, out)
    weights = load_file(out / "model.safetensors")
    weights["classifier.weight"] = weights["classifier.weight"] * scale
    weights["classifier.bias"] = weights["classifier.bias"] * scale + shift
    save_file(weights, out / "model.safetensors", metadata={"format": "pt"})
    return out


def bert_parts(
    texts: list[str], labels: dict[int, str], problem, vocab_size=400, hidden=32, layers=2, heads=2, positions=128
):
    """A BERT's WordPiece tokenizer trained on `texts` (lower-cased, [CLS] ... [SEP]) and its config with these
    labels and shape (benchmarks/bench_scorer.py builds its larger ones with it too)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, PreTrainedTokenizerFast

    words = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    words.normalizer = normalizers.BertNormalizer(lowercase=True)
    words.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    words.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials))
    words.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[(name, words.token_to_id(name)) for name in ("[CLS]", "[SEP]")]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=words, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]"
    )
    config = BertConfig(
        vocab_size=words.get_vocab_size(),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * hidden,
        max_position_embeddings=positions,
        id2label=labels,
        label2id={name: i for i, name in labels.items()},
        problem_type=problem,
    )
    return tokenizer, config


def fasttext_bytes(
    words=("</s>", "river", "sea"),
    labels=("__label__hq", "__label__lq"),
    dim=4,
    bucket=0,
    word_ngrams=1,
    maxn=0,
    quantized=False,
    qout=False,
    qnorm=False,
    pruned=None,
) -> bytes:
    """A supervised fastText model written byte by byte as fastText 0.9 saves it (src/fasttext.cc saveModel):
    softmax loss, small random weights; `quantized`: its input matrix product-quantized (2 numbers a code),
    with `qout` its output matrix too, `qnorm` with norms; `pruned`: (bucket, row) pairs of a pruned n-gram
    index (a quantized model's). The tests cut and edit it into hostile files."""
    import struct

    import numpy as np

    rng = np.random.default_rng(0)
    settings = struct.pack("<12id", dim, 5, 5, 1, 5, word_ngrams, 3, 3, bucket, 0 if maxn == 0 else 2, maxn, 100, 1e-4)
    entries = [(w, 0) for w in words] + [(label, 1) for label in labels]
    prune_size = -1 if pruned is None else len(pruned)
    out = struct.pack("<ii", 793712314, 12) + settings
    out += struct.pack("<iiiqq", len(entries), len(words), len(labels), 100, prune_size)
    out += b"".join(w.encode("utf-8", "surrogateescape") + b"\0" + struct.pack("<qb", 10, kind) for w, kind in entries)
    out += b"".join(struct.pack("<ii", *pair) for pair in pruned or ())
    rows = len(words) + (bucket if pruned is None else len({row for _, row in pruned}))

    def matrix(m: int, quantize: bool) -> bytes:
        if not quantize:
            return struct.pack("<qq", m, dim) + (rng.standard_normal((m, dim)) * 0.1).astype("<f4").tobytes()
        nsubq = -(-dim // 2)
        codes = rng.integers(0, 256, m * nsubq, dtype=np.uint8).tobytes()
        data = struct.pack("<?qqi", qnorm, m, dim, m * nsubq) + codes + quantizer(dim, 2)
        if qnorm:
            data += rng.integers(0, 256, m, dtype=np.uint8).tobytes() + quantizer(1, 1)
        return data

    def quantizer(pq_dim: int, dsub: int) -> bytes:
        nsubq = -(-pq_dim // dsub)
        centroids = (rng.standard_normal(pq_dim * 256) * 0.1).astype("<f4").tobytes()
        return struct.pack("<iiii", pq_dim, nsubq, dsub, pq_dim - (nsubq - 1) * dsub) + centroids

    out += struct.pack("<?", quantized) + matrix(rows, quantized)
    out += struct.pack("<?", qout) + matrix(len(labels), quantized and qout)
    return out
