"""Small real Hugging Face models for the tests: a two-layer BERT whose WordPiece tokenizer is trained on local
text, bare (an encoder) or with a classification or regression head trained for a few steps on the bundled
good and bad examples (configs/classifier). Built in about a second; nothing comes from a hub."""

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
