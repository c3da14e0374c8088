"""Tokenizer and packing pieces without Ray: deterministic BPE training, encoding, cutting documents into
sequences and putting the pieces back together."""

import json
import os
import subprocess
import sys


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from helpers import CRAWL_SAMPLE, SHARED
from stages.tokens import DocumentEncoder, as_tiktoken, assemble, cut, stream_layout, token_dtype, train_bpe

GROUND_TRUTH = SHARED / "realhtml" / "ground_truth.jsonl"

SPECIAL = ["<|endoftext|>", "<|pad|>"]
TEXTS = CRAWL_SAMPLE * 3 + ["Ünïcödé — text, emoji 🌍, and tabs\tand\nnewlines.", "Zahlen 3.14159 und 42!"]


def test_training_twice_gives_the_same_tokenizer_whatever_the_threads():
    first = train_bpe(iter(TEXTS), 500, SPECIAL).to_str()
    assert train_bpe(iter(TEXTS), 500, SPECIAL).to_str() == first
    # and in another process with one thread (tokenizers counts words in parallel)
    script = (
        "import json, sys; from stages.tokens import train_bpe; "
        "print(train_bpe(iter(json.load(sys.stdin)), 500, ['<|endoftext|>', '<|pad|>']).to_str())"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(TEXTS),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RAYON_NUM_THREADS": "1"},
        check=True,
    )
    assert result.stdout.strip() == first
    vocab = json.loads(first)["model"]["vocab"]
    assert len(vocab) == 500 and vocab["<|endoftext|>"] == 0 and vocab["<|pad|>"] == 1


def test_byte_level_tokens_decode_back_to_the_text_and_special_text_stays_text():
    encode = DocumentEncoder(train_bpe(iter(TEXTS), 400, SPECIAL).to_str())
    texts = TEXTS[-2:] + ["a forum post quoting <|endoftext|> and <|pad|> as text", None]
    lengths, values = encode(texts)
    assert values.dtype == np.uint16 and lengths[-1] == 0
    pieces = np.split(values, np.cumsum(lengths)[:-1])
    assert [encode.plain.decode(p.tolist()) for p in pieces] == texts[:3] + [""]
    assert 0 not in pieces[2] and 1 not in pieces[2]  # written special tokens are not the special ids
    # batches without such text are encoded the fast way, with the same ids
    assert np.array_equal(encode(texts[:2])[1], values[: lengths[:2].sum()])


# --- tiktoken, where it gives tokenizers' ids exactly ------------------------------------------------

TRAINED = train_bpe(iter(TEXTS), 600, SPECIAL).to_str()
BOTH = (DocumentEncoder(TRAINED), DocumentEncoder(TRAINED, engine="tokenizers"))


def same_ids(texts):
    fast, reference = BOTH
    assert fast.engine == "tiktoken" and reference.engine.startswith("tokenizers")
    got, expected = fast(texts), reference(texts)
    assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])


def test_a_trained_tokenizer_is_encoded_by_tiktoken_with_the_same_ids():
    assert as_tiktoken(Tokenizer.from_str(TRAINED))[1] == "exact"
    same_ids(TEXTS + ["a forum post quoting <|endoftext|> and <|pad|> as text", None, "", "  \n\n  x"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.characters(codec="utf-8"), max_size=60)
        | st.lists(
            st.sampled_from(
                [
                    "'s",
                    "'ll",
                    " ",
                    "  ",
                    "\n",
                    "\t",
                    "12",
                    "3.5",
                    "¡",
                    "ß",
                    "日本",
                    "🌍",
                    "<|endoftext|>",
                    "--",
                    "ab",
                    "the",
                    " the",
                    "Über",
                ]
            ),
            max_size=20,
        ).map("".join),
        max_size=8,
    )
)
def test_tiktoken_and_tokenizers_agree_on_any_text(texts):
    same_ids(texts)


def test_tiktoken_and_tokenizers_agree_on_real_pages():
    if not GROUND_TRUTH.exists():
        pytest.skip(f"../shared/realhtml not found: {GROUND_TRUTH} is missing")
    texts = [json.loads(line)["main_text"] or "" for line in GROUND_TRUTH.open(encoding="utf-8")]
    tokenizer = train_bpe(iter(texts[::4]), 4096, SPECIAL).to_str()
    fast, reference = DocumentEncoder(tokenizer), DocumentEncoder(tokenizer, engine="tokenizers")
    assert fast.engine == "tiktoken"
    for i in range(0, len(texts), 256):
        got, expected = fast(texts[i : i + 256]), reference(texts[i : i + 256])
        assert np.array_equal(got[1], expected[1]), i


def test_a_tokenizer_tiktoken_would_encode_differently_stays_with_tokenizers():
    # "abc" is made from ab + c, but b + c merges first: tokenizers gives [a, bc], tiktoken would give [abc]
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {c: i for i, c in enumerate(alphabet)} | {"bc": 256, "ab": 257, "abc": 258}
    bpe = Tokenizer(models.BPE(vocab, [("b", "c"), ("a", "b"), ("ab", "c")]))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    encoder = DocumentEncoder(bpe.to_str())
    assert encoder.engine == "tokenizers (the token 'abc' does not encode to itself)"
    assert encoder(["abc"])[1].tolist() == [vocab["a"], vocab["bc"]]

    lowercased = Tokenizer.from_str(TRAINED)
    lowercased.normalizer = normalizers.Lowercase()
    encoder = DocumentEncoder(lowercased.to_str())
    assert encoder.engine == "tokenizers (it has a normalizer)"
    assert encoder(["ABC"])[1].tolist() == lowercased.encode("abc", add_special_tokens=False).ids


def with_settings(tokenizer_json: str, setting: str) -> str:
    """The tokenizer saved with truncation, padding, or a lowercasing normalizer whose special tokens are
    `normalized` (so that "<|ENDOFTEXT|>" in a page normalizes to the end token's text)."""
    tokenizer = Tokenizer.from_str(tokenizer_json)
    if setting == "truncation":
        tokenizer.enable_truncation(8)
    elif setting == "padding":
        tokenizer.enable_padding(length=300, pad_id=1, pad_token="<|pad|>")
    elif setting == "normalized specials":
        tokenizer.normalizer = normalizers.Lowercase()
        spec = json.loads(tokenizer.to_str())
        for added in spec["added_tokens"]:
            added["normalized"] = True
        return json.dumps(spec)
    return tokenizer.to_str()


@pytest.mark.parametrize("setting", ["truncation", "padding"])
@pytest.mark.parametrize("engine", ["auto", "tokenizers"])
def test_a_given_tokenizers_truncation_and_padding_are_cleared_so_both_engines_agree(setting, engine):
    encoder = DocumentEncoder(with_settings(TRAINED, setting), engine)
    texts = TEXTS[:3] + ["short", ""]
    lengths, values = encoder(texts)
    expected = [Tokenizer.from_str(TRAINED).encode(t, add_special_tokens=False).ids for t in texts]
    assert lengths.tolist() == list(map(len, expected)) and values.tolist() == sum(expected, [])
    assert encoder.cleared == [setting] and DocumentEncoder(TRAINED).cleared == []
    assert encoder.engine == "tiktoken" if engine == "auto" else encoder.engine.startswith("tokenizers")


@pytest.mark.parametrize(
    "setting,engine", [("plain", "auto"), ("plain", "tokenizers"), ("normalized specials", "auto")]
)
@pytest.mark.parametrize(
    "text",
    ["quoting <|endoftext|> here", "quoting <|ENDOFTEXT|> here", "<|Pad|><|endoftext|>", "no special text at all"],
)
def test_a_documents_text_never_gives_a_special_tokens_id(setting, engine, text):
    encoder = DocumentEncoder(with_settings(TRAINED, setting), engine)
    assert encoder.engine == ("tiktoken" if (setting, engine) == ("plain", "auto") else encoder.engine)
    lengths, values = encoder([TEXTS[0], text])
    assert set(values.tolist()).isdisjoint({0, 1}) and len(values) == lengths.sum()
    assert encoder.plain.decode(values[lengths[0] :].tolist()) == (text.lower() if encoder.plain.normalizer else text)
    alone = encoder([TEXTS[0]])  # the batch with a special text costs nothing to the others' ids
    assert np.array_equal(alone[1], values[: lengths[0]])


def test_smallest_dtype_for_the_vocabulary():
    assert token_dtype(258) == np.uint16 and token_dtype(65536) == np.uint16 and token_dtype(65537) == np.uint32


@pytest.mark.parametrize("pad", [False, True])
def test_cut_pieces_reassemble_into_the_stream(pad):
    seq = 17
    rng = np.random.default_rng(0)
    docs = [rng.integers(2, 300, n).astype(np.uint16) for n in rng.integers(0, 60, 25)]
    docs = [np.append(d, np.uint16(0)) for d in docs]  # end token
    layout = stream_layout(np.array([len(d) for d in docs]), seq, pad)
    stream = np.concatenate(docs)
    assert layout.tokens == len(stream) and layout.sequences == len(stream) // seq + (pad and len(stream) % seq > 0)
    assert layout.dropped == (0 if pad else len(stream) % seq)
    pieces = [
        (k, off, p) for d, start in zip(docs, layout.starts) for k, off, p in cut(d, int(start), seq, layout.sequences)
    ]
    rng.shuffle(pieces)  # pieces arrive in any order; assemble sorts nothing itself
    pieces.sort(key=lambda p: (p[0], p[1]))
    positions = np.array([p[0] for p in pieces])
    offsets, sizes = np.array([p[1] for p in pieces]), np.array([len(p[2]) for p in pieces])
    firsts, matrix, lengths = assemble(positions, offsets, sizes, np.concatenate([p[2] for p in pieces]), seq, fill=1)
    assert list(positions[firsts]) == list(range(layout.sequences))
    real = np.concatenate([row[:n] for row, n in zip(matrix, lengths)])
    assert np.array_equal(real, stream[: len(real)]) and len(stream) - len(real) == layout.dropped
    if pad:
        assert lengths[-1] == seq - layout.padding and np.all(matrix[-1, lengths[-1] :] == 1)
    assert np.all(lengths[:-1] == seq)


def test_assemble_refuses_a_sequence_with_a_piece_missing():
    values = np.arange(10, dtype=np.uint16)
    with pytest.raises(ValueError, match="do not fit"):
        assemble(np.array([0, 0]), np.array([0, 6]), np.array([4, 4]), values[:8], 10, fill=0)  # gap 4..6
    with pytest.raises(ValueError, match="do not fit"):
        assemble(np.array([0, 0, 0]), np.array([0, 4, 8]), np.array([4, 4, 4]), np.arange(12, dtype=np.uint16), 10, 0)


def test_a_tokenizer_json_loads_back():
    tokenizer = train_bpe(iter(TEXTS), 300, SPECIAL)
    assert Tokenizer.from_str(tokenizer.to_str()).encode("The river").ids == tokenizer.encode("The river").ids


def _odd_text(rng, chars: int) -> str:
    """Text of the shapes that cost memory (one-word lines, runs of blank lines and spaces, one long line)
    and of the boundaries where GPT-2's pre-tokenizer is subtle (contractions, Unicode and control spaces)."""
    parts = ["a", "word", "\n", "\n\n\n", " ", "   ", "\t", "'s", "42", "!!", "\u00a0", "\x1c", "é", "\r\n", "x\n"]
    out: list[str] = []
    while sum(map(len, out)) < chars:
        out.append(parts[rng.integers(len(parts))])
    return "".join(out)


@pytest.mark.parametrize("engine", ["auto", "tokenizers"])
def test_a_long_document_encoded_in_pieces_gives_the_ids_of_the_whole(engine, monkeypatch):
    import stages.tokens

    rng = np.random.default_rng(4)
    texts = [_odd_text(rng, 5_000) for _ in range(3)] + ["", "one line with no break " * 300, "b\n" * 3_000]
    tokenizer = train_bpe(iter(texts), 300, SPECIAL)
    whole = DocumentEncoder(tokenizer.to_str(), engine)(texts)
    monkeypatch.setattr(stages.tokens, "PIECE_CHARS", 64)  # cut often: every 64 characters where it can
    assert train_bpe(iter(texts), 300, SPECIAL).to_str() == tokenizer.to_str()
    assert train_bpe(iter([texts[:2], texts[2:]]), 300, SPECIAL).to_str() == tokenizer.to_str()  # in lists
    pieces = DocumentEncoder(tokenizer.to_str(), engine)(texts)
    assert np.array_equal(whole[0], pieces[0]) and np.array_equal(whole[1], pieces[1])


@pytest.mark.slow
def test_training_and_encoding_a_document_of_one_word_lines_keeps_a_bounded_memory():
    # a 9.6 MB document of one-word lines: tokenizers trained and encoded it whole (2.1 GB peak; 0.4 GB in pieces)
    script = (
        "from stages.tokens import DocumentEncoder, train_bpe\n"
        "text = 'alpha\\nbeta\\ngamma\\n' * 600_000\n"
        "tokenizer = train_bpe([[text]], 300, ['<|endoftext|>'])\n"  # in lists, as the tokens pass gives them
        "lengths, ids = DocumentEncoder(tokenizer.to_str(), 'tokenizers')([text])\n"
        "assert lengths.tolist() == [len(ids)] and len(ids) >= 3_600_000\n"
        "print([r for r in open('/proc/self/status') if r.startswith('VmHWM')][0].split()[1])\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert int(result.stdout.split()[-1]) / 1024 < 700
