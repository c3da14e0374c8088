"""packing.formats (pipeline/passes/export.py): Megatron's indexed dataset, MosaicML Streaming's shards and datatrove's
tokenized file, each read back by its own library, hold exactly the Parquet shards' sequences; the dataset card
lets Hugging Face's `datasets` load the documents and the token shards; the manifest lists the files with size
and checksum; Spark on one worker writes the bytes of Ray on two."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from tokenizers import Tokenizer

from helpers import CONFIGS, FIXTURES, ROOT, SPARK_SETTINGS, assert_complete, assert_same_output, spark_missing
from pipeline.config import ConfigError, PackingConfig
from pipeline.config.load import load_config

MDS_READER = Path(sys.prefix) / "mds-reader"
HF_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
CRAWL = sorted(str(p) for p in (FIXTURES / "warc").iterdir())
# Sequences shorter than the crawl, and a padded last one per source: lengths that differ.
# The mixture drawn 1.4 passes (the fixture crawl has about 5,500 tokens): some documents are drawn twice.
SETTINGS = [
    *SPARK_SETTINGS,
    "packing.formats=[parquet, megatron, mds, nanotron, huggingface]",
    "packing.remainder=pad",
    "mixture.budget_tokens=8000",
]


@pytest.fixture(scope="module")
def exported(tmp_path_factory, ray_session):
    from helpers import run_here

    out = tmp_path_factory.mktemp("export") / "out"
    manifest = run_here(CONFIGS / "local.yaml", out, SETTINGS, CRAWL)
    return out, manifest


def drawn_documents(out: Path, manifest: dict) -> list[list[int]]:
    """The run's drawn documents in draw order (README, Token shards), each with its end token, worked out here
    from docs/: each kept text encoded with tokens/tokenizer.json by `tokenizers` itself (special tokens'
    text as plain text, as the belt encodes it), the one source's draws, permuted as draw order says."""
    from tokenizers import Tokenizer

    from pipeline.passes.tokens import draw_order
    from stages.mixture import draw_source

    tokenizer = Tokenizer.from_file(str(out / "tokens" / "tokenizer.json"))
    tokenizer.encode_special_tokens = True
    texts = [
        t or "" for p in sorted((out / "docs").glob("part-*.parquet")) for t in pq.read_table(p)["text"].to_pylist()
    ]
    eos = manifest["tokens"]["eos_id"]
    documents = [encoding.ids + [eos] for encoding in tokenizer.encode_batch(texts, add_special_tokens=False)]
    packed = np.array([len(d) if len(d) > 1 else 0 for d in documents])  # an empty text is never drawn
    mixture = manifest["mixture"]
    draws = draw_source("web", 1.0, 1.0, packed, mixture["budget_tokens"], mixture["seed"]).draws
    return [documents[i] for i in draw_order([draws], mixture["seed"], shuffle=True)]


def test_megatron_holds_the_drawn_documents_as_megatron_cores_builder_writes_them(exported, tmp_path):
    indexed = pytest.importorskip("megatron.core.datasets.indexed_dataset", reason="the export extra (megatron-core)")
    torch = pytest.importorskip("torch")
    out, manifest = exported
    assert_complete(out)
    (row,) = manifest["mixture"]["table"]
    assert 1 < row["passes"] < 2  # some documents drawn twice
    dataset = indexed.IndexedDataset(str(out / "tokens" / "megatron" / "tokens"))
    documents = [dataset[i].tolist() for i in range(len(dataset))]
    eos = manifest["tokens"]["eos_id"]
    assert len(documents) == row["documents_drawn"] and sum(map(len, documents)) == row["tokens_drawn"]
    assert list(dataset.document_indices) == list(range(len(documents) + 1))  # each sequence one document
    assert dataset.index.dtype == np.uint16  # the vocabulary fits
    assert all(d[-1] == eos and eos not in d[:-1] for d in documents)  # one end token each, at its end
    # Every kept document at least once, the upsampled ones twice, none cut: whole documents, not sequences.
    expected = drawn_documents(out, manifest)
    counts = {tuple(d): documents.count(d) for d in documents}
    assert set(counts) == {tuple(d) for d in expected} and len(counts) == manifest["counts"]["kept"]
    assert sorted(counts.values())[-1] == 2 and sorted(counts.values())[0] == 1
    assert documents == expected  # in draw order
    # Byte for byte what megatron-core's own writer makes of them, as preprocess_data.py calls it.
    builder = indexed.IndexedDatasetBuilder(str(tmp_path / "tokens.bin"), dtype=np.uint16)
    for document in expected:
        builder.add_item(torch.tensor(document))
        builder.end_document()
    builder.finalize(str(tmp_path / "tokens.idx"))
    for name in ("tokens.bin", "tokens.idx"):
        assert (out / "tokens" / "megatron" / name).read_bytes() == (tmp_path / name).read_bytes(), name


class RunTokenizer:
    """What GPTDataset asks of Megatron-LM's tokenizer: the vocabulary size, the end token (eod: the masks'
    document ends) and the pad id (its padded samples' fill, masked out of the loss); and what names it in the
    description that GPTDataset's index cache is keyed by."""

    def __init__(self, tokens: dict):
        self.vocab_size, self.eod, self.eos, self.pad = (
            tokens[k] for k in ("vocab_size", "eos_id", "eos_id", "pad_id")
        )
        self.unique_identifiers = {"class": "RunTokenizer", "tokenizer": tokens["tokenizer"]}


def test_megatron_cores_gpt_dataset_packs_the_documents_with_an_end_token_at_every_junction(exported, tmp_path):
    """megatron-core's GPTDataset, built as Megatron-LM's pretrain_gpt.py builds it (BlendedMegatronDatasetBuilder,
    --data-path OUT/tokens/megatron/tokens --split 100,0,0 --seq-length packing.seq_len, one epoch)."""
    pytest.importorskip("megatron.core.datasets.gpt_dataset", reason="the export extra (megatron-core)")
    from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig

    out, manifest = exported
    seq_len, eos = manifest["tokens"]["seq_len"], manifest["tokens"]["eos_id"]
    config = GPTDatasetConfig(
        random_seed=1234,
        sequence_length=seq_len,
        blend=([str(out / "tokens" / "megatron" / "tokens")], None),
        split="100,0,0",
        path_to_cache=str(tmp_path / "cache"),  # else beside the export
        tokenizer=RunTokenizer(manifest["tokens"]),
        reset_position_ids=False,
        reset_attention_mask=False,
        eod_mask_loss=False,
    )
    train, valid, test = BlendedMegatronDatasetBuilder(GPTDataset, [None, None, None], lambda: True, config).build()
    assert valid is None and test is None
    written = [train.dataset[i].tolist() for i in range(len(train.dataset))]  # the Megatron documents
    assert len(train) == (sum(map(len, written)) - 1) // seq_len > 1  # GPTDataset's own count, one epoch
    # GPTDataset's document order (its shuffle), as one stream: sample j is its window [j * seq_len, + seq_len + 1]
    order = train.document_index
    stream = np.concatenate([written[i] for i in order])
    ends = np.cumsum([len(written[i]) for i in order])
    junctions = 0
    for i in range(len(train)):
        j = int(train.shuffle_index[i])
        sample = train[i]
        text = np.concatenate([sample["tokens"].numpy(), sample["labels"].numpy()[-1:]])
        assert text.tolist() == stream[j * seq_len : j * seq_len + seq_len + 1].tolist(), i
        inside = ends[(ends > j * seq_len) & (ends < j * seq_len + seq_len + 1)] - j * seq_len
        assert all(text[e - 1] == eos for e in inside), (i, text.tolist())  # each junction follows an end token
        junctions += len(inside)
    documents = drawn_documents(out, manifest)
    assert written == documents  # so every sample's tokens are the drawn documents'
    assert junctions >= len(documents) - 1  # every document's end is inside some sample


def test_megatrons_hugging_face_tokenizer_loads_the_runs_tokenizer_and_end_id_as_the_readme_points_it(exported):
    """--tokenizer-type HuggingFaceTokenizer --tokenizer-model OUT/tokens: megatron-core's own class over the folder
    (AutoTokenizer reads its tokenizer.json and tokenizer_config.json) has the run's vocabulary, encodes as the run
    did, and its eod (what --reset-position-ids, --reset-attention-mask and --eod-mask-loss take as the end
    token) is the run's end id: megatron-core's HuggingFaceTokenizer.eod is the id of the AutoTokenizer's
    eos_token, Megatron-LM's own _HuggingFaceTokenizer.eod its eos_token_id (megatron/training/tokenizer/
    tokenizer.py at NVIDIA/Megatron-LM 00ee96672c1b, not in the megatron-core wheel: its one line is run here)."""
    transformers = pytest.importorskip("transformers", reason="the classify extra (transformers)")
    libraries = pytest.importorskip("megatron.core.tokenizers.text.libraries", reason="the export extra")
    from tokenizers import Tokenizer

    out, manifest = exported
    tokenizer = libraries.HuggingFaceTokenizer(str(out / "tokens"))
    assert tokenizer.vocab_size == manifest["tokens"]["vocab_size"]
    text = pq.read_table(next((out / "docs").glob("part-*.parquet")))["text"][0].as_py()
    assert tokenizer.text_to_ids(text) == Tokenizer.from_file(str(out / "tokens" / "tokenizer.json")).encode(text).ids
    eos, pad = manifest["tokens"]["eos_id"], manifest["tokens"]["pad_id"]
    assert tokenizer.eod == tokenizer.eos_id == eos and tokenizer.pad_id == pad
    assert transformers.AutoTokenizer.from_pretrained(str(out / "tokens")).eos_token_id == eos  # Megatron-LM's eod


def test_the_manifest_lists_each_file_with_its_size_and_checksum(exported):
    out, manifest = exported
    files = manifest["tokens"]["exports"]["megatron"]
    assert [f["path"] for f in files] == ["tokens/megatron/tokens.bin", "tokens/megatron/tokens.idx"]
    for f in files:
        data = (out / f["path"]).read_bytes()
        assert f["bytes"] == len(data) and f["sha256"] == hashlib.sha256(data).hexdigest()
    assert manifest["outputs"]["megatron"] == [f["path"] for f in files]
    for shard in manifest["tokens"]["shards"]:  # the Parquet shards too
        data = (out / shard["path"]).read_bytes()
        assert shard["bytes"] == len(data) and shard["sha256"] == hashlib.sha256(data).hexdigest()
    assert manifest["tokens"]["formats"] == ["parquet", "megatron", "mds", "nanotron", "huggingface"]
    assert json.loads((out / "manifest.json").read_text())["tokens"]["exports"] == manifest["tokens"]["exports"]
    assert "megatron (tokens/megatron/tokens.bin, tokens/megatron/tokens.idx)" in (out / "report.html").read_text()
    # tokens/ as a tokenizer folder: tokenizer.json and the two files that make AutoTokenizer read its end token
    tokenizer_files = manifest["tokens"]["tokenizer_files"]
    assert [f["path"] for f in tokenizer_files] == [f"tokens/{name}" for name in HF_TOKENIZER_FILES]
    for f in tokenizer_files:
        data = (out / f["path"]).read_bytes()
        assert f["bytes"] == len(data) and f["sha256"] == hashlib.sha256(data).hexdigest()
    assert manifest["outputs"]["tokens"][:3] == [f["path"] for f in tokenizer_files]


@pytest.fixture(scope="module")
def mds_samples(exported) -> list[list[int]]:
    """The MDS export's samples as streaming.StreamingDataset reads them, in a process of its own
    (tests/mds_reader.py)."""
    if not MDS_READER.exists():
        pytest.skip(f"no MosaicML Streaming in {MDS_READER} (scripts/setup.sh installs it)")
    out, _ = exported
    read = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "mds_reader.py"), str(out / "tokens" / "mds")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert read.returncode == 0, read.stderr[-3000:]
    return [json.loads(line) for line in read.stdout.split("\n") if line]


def test_mosaicml_streamings_reader_reads_the_parquet_shards_sequences(exported, mds_samples):
    out, manifest = exported
    rows = [row for shard in manifest["tokens"]["shards"] for row in pq.read_table(out / shard["path"]).to_pylist()]
    assert len(mds_samples) == len(rows) > 1
    for sample, row in zip(mds_samples, rows):
        assert sample == row["tokens"][: row["length"]]  # without its padding, end tokens included
    assert any(row["length"] < len(row["tokens"]) for row in rows)
    files = manifest["tokens"]["exports"]["mds"]
    assert [f["path"] for f in files] == ["tokens/mds/shard.00000.mds", "tokens/mds/index.json"]
    index = json.loads((out / "tokens" / "mds" / "index.json").read_text())
    assert index["shards"][0]["column_encodings"] == ["ndarray:uint16"]


def llm_foundry_targets(samples: list[list[int]], max_seq_len: int, tokenizer) -> tuple:
    """A batch of LLM Foundry's text dataloader over pre-tokenized samples and the targets its loss takes, as
    llm-foundry 0.22.0 does it (it does not install here: it pins transformers 4 and mosaicml-streaming 0.12):
    llmfoundry/data/text_data.py StreamingTextDataset._read_binary_tokenized_sample (the sample's first
    max_seq_len ids, as int64); llmfoundry/data/utils.py get_text_collator, transformers'
    DataCollatorForLanguageModeling(mlm=False), which is run here; llmfoundry/models/mpt/modeling_mpt.py
    get_targets (labels rolled left one place, the last -100), which the Hugging Face models' own shift equals."""
    import torch
    from transformers import DataCollatorForLanguageModeling

    examples = [torch.from_numpy(np.array(sample)[:max_seq_len].copy()).to(torch.int64) for sample in samples]
    batch = DataCollatorForLanguageModeling(tokenizer=tokenizer, mlm=False, mlm_probability=0)(examples)
    targets = torch.roll(batch["labels"], shifts=-1)
    targets[:, -1] = -100
    return batch["input_ids"], targets


def trained_pairs(inputs, targets) -> list[list[tuple[int, int]]]:
    """Per sample, each (input, next token) pair the loss trains on: the target is not the ignore index."""
    return [[(int(i), int(t)) for i, t in zip(row_in, row_t) if t != -100] for row_in, row_t in zip(inputs, targets)]


def test_llm_foundry_with_the_readmes_settings_trains_on_every_token_of_every_sample(exported, mds_samples):
    transformers = pytest.importorskip("transformers", reason="the classify extra (transformers)")
    out, manifest = exported
    settings = readme_yaml("LLM Foundry's train config")
    dataset = settings["train_loader"]["dataset"]
    assert dataset["local"] == "OUT/tokens/mds" and "split" not in dataset  # index.json is in tokens/mds itself
    seq_len = manifest["tokens"]["seq_len"]
    # the README's settings are for the default packing.seq_len: max_seq_len is one more, the model's too
    assert dataset["max_seq_len"] == settings["model"]["max_seq_len"] == PackingConfig.seq_len + 1
    assert settings["tokenizer"]["name"] == "OUT/tokens"  # the run's tokenizer folder, whatever the formats
    tokenizer = transformers.AutoTokenizer.from_pretrained(out / "tokens")
    assert tokenizer.pad_token_id == manifest["tokens"]["pad_id"] != manifest["tokens"]["eos_id"]
    expected = [list(zip(sample[:-1], sample[1:])) for sample in mds_samples]  # every next token of each sample
    assert any(len(sample) < seq_len + 1 for sample in mds_samples)  # a padded one too: the collator pads it
    assert trained_pairs(*llm_foundry_targets(mds_samples, seq_len + 1, tokenizer)) == expected
    # max_seq_len equal to packing.seq_len cuts each whole sample's last token: never a target
    short = trained_pairs(*llm_foundry_targets(mds_samples, seq_len, tokenizer))
    assert [len(e) - len(s) for e, s in zip(expected, short)] == [int(len(x) == seq_len + 1) for x in mds_samples]
    # a tokenizer that pads with the end token (pad_token = eos_token, as for GPT-2) loses every end token's target
    tokenizer.pad_token = tokenizer.eos_token
    eos_pairs = sum(t == manifest["tokens"]["eos_id"] for pairs in expected for _, t in pairs)
    masked = trained_pairs(*llm_foundry_targets(mds_samples, seq_len + 1, tokenizer))
    assert sum(map(len, expected)) - sum(map(len, masked)) == eos_pairs > 0


def test_datatroves_reader_as_nanotron_uses_it_reads_the_parquet_shards_sequences(exported):
    dataset_module = pytest.importorskip("datatrove.utils.dataset", reason="the export extra (datatrove)")
    out, manifest = exported
    rows = [row for shard in manifest["tokens"]["shards"] for row in pq.read_table(out / shard["path"]).to_pylist()]
    path = str(out / "tokens" / "nanotron" / "tokens.ds")
    seq_len, eos = manifest["tokens"]["seq_len"], manifest["tokens"]["eos_id"]
    dataset = dataset_module.DatatroveFileDataset(path, seq_len=seq_len, token_size=2, return_positions=True)
    assert len(dataset) == len(rows) > 1
    for i, row in enumerate(rows):
        window = dataset[i]  # the reader checks that each window's positions start at 0
        assert window["input_ids"].tolist() == row["tokens"]
        # a position counts from the start of its document: 0 right after each end token of the window
        ends = [p + 1 for p, token in enumerate(row["tokens"][: row["length"]]) if token == eos and p + 1 <= seq_len]
        assert all(int(window["positions"][p]) == 0 for p in ends), (i, ends)
    index = np.frombuffer((out / "tokens" / "nanotron" / "tokens.ds.index").read_bytes(), np.uint64)
    assert len(index) >= manifest["counts"]["kept"] and (np.diff(index.astype(np.int64)) > 0).all()


def readme_yaml(heading: str) -> dict:
    """The README's YAML block under `heading`: the settings it tells a trainer's users to write."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```yaml\n(.*?)```", text[text.index(heading) :], re.S)
    assert block, f"README: no yaml block after {heading!r}"
    return yaml.safe_load(block.group(1))


def nanoset_dataset_args(folder: str) -> dict:
    """nanotron's NanosetDatasetsArgs.__post_init__ reading a dataset folder (src/nanotron/config/config.py at
    huggingface/nanotron 2411b022a75f; nanotron's config module imports its CUDA kernels, flash-attn and triton,
    so it cannot be imported here): the first *.metadata file's first line, "tokenizer|token size", and the
    vocabulary size of AutoTokenizer.from_pretrained(tokenizer), which the model's vocab_size must equal."""
    from transformers import AutoTokenizer

    with open(glob.glob(os.path.join(folder, "*.metadata"))[0]) as f:
        tokenizer_name, token_size_in_bytes = f.readline().strip().split("|")
    vocab_size = len(AutoTokenizer.from_pretrained(tokenizer_name).get_vocab())
    return {"tokenizer_name": tokenizer_name, "token_size_in_bytes": int(token_size_in_bytes), "vocab_size": vocab_size}


def test_nanotron_loads_the_export_folder_and_its_tokenizer_as_they_are_after_a_move(exported, tmp_path, monkeypatch):
    transformers = pytest.importorskip("transformers", reason="the classify extra (transformers)")
    dataset_module = pytest.importorskip("datatrove.utils.dataset", reason="the export extra (datatrove)")
    out, manifest = exported
    moved = tmp_path / "moved"  # the output elsewhere: nanotron is run in it, as the README says
    shutil.copytree(out / "tokens", moved / "tokens", ignore=shutil.ignore_patterns("part-*", "megatron", "mds"))
    monkeypatch.chdir(moved)
    settings = readme_yaml("nanotron's config")
    folder = settings["data_stages"][0]["data"]["dataset"]["dataset_folder"]
    assert settings["tokens"]["sequence_length"] == PackingConfig.seq_len  # its windows: seq_len + 1 ids
    args = nanoset_dataset_args(folder)
    # Config.__post_init__: the tokenizer given in the config must be the name the metadata holds
    assert args["tokenizer_name"] == settings["tokenizer"]["tokenizer_name_or_path"] == "tokens"
    tokenizer = transformers.AutoTokenizer.from_pretrained(args["tokenizer_name"])  # run_train.py, as nanotron
    assert len(tokenizer) == args["vocab_size"] == manifest["tokens"]["vocab_size"]  # run_train.py's check
    assert (
        tokenizer.eos_token_id == manifest["tokens"]["eos_id"]
        and tokenizer.pad_token_id == manifest["tokens"]["pad_id"]
    )
    plain, eos = Tokenizer.from_file(str(out / "tokens" / "tokenizer.json")), manifest["tokens"]["eos_id"]
    for text in pq.read_table(out / "docs").column("text").to_pylist()[:30]:
        ids = plain.encode(text).ids
        assert tokenizer(text)["input_ids"] == ids
        assert tokenizer.decode(ids + [eos]) == plain.decode(ids + [eos], skip_special_tokens=False)
    # the windows nanotron's get_tb_datasets reads (tokenized_bytes.build_dataset): *.ds in the folder, not below
    rows = [row for shard in manifest["tokens"]["shards"] for row in pq.read_table(out / shard["path"]).to_pylist()]
    dataset = dataset_module.DatatroveFolderDataset(
        folder,
        manifest["tokens"]["seq_len"],
        filename_pattern="*.ds",
        recursive=False,
        token_size=args["token_size_in_bytes"],
        return_positions=True,
    )
    assert [dataset[i]["input_ids"].tolist() for i in range(len(dataset))] == [row["tokens"] for row in rows]
    files = manifest["tokens"]["exports"]["nanotron"]
    assert [f["path"] for f in files] == [f"tokens/nanotron/tokens.ds{end}" for end in ("", ".index", ".metadata")]
    assert not (out / "tokens" / "nanotron" / "tokenizer").exists()  # the one tokenizer folder is tokens/


def test_hugging_face_datasets_loads_the_docs_and_tokens_by_the_card(exported, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    datasets = pytest.importorskip("datasets", reason="the export extra (datasets)")
    out, manifest = exported
    docs = datasets.load_dataset(str(out), "docs", split="train", cache_dir=str(tmp_path / "cache"))
    assert docs.num_rows == manifest["counts"]["kept"] and "text" in docs.column_names
    expected = pq.read_table(out / "docs").column("text").to_pylist()
    assert sorted(docs["text"]) == sorted(expected)
    tokens = datasets.load_dataset(str(out), "tokens", split="train", cache_dir=str(tmp_path / "cache"))
    rows = [row for shard in manifest["tokens"]["shards"] for row in pq.read_table(out / shard["path"]).to_pylist()]
    assert tokens.num_rows == len(rows) and tokens[0]["tokens"] == rows[0]["tokens"]
    card = (out / "README.md").read_text()
    assert card.startswith("---\nconfigs:\n- config_name: docs\n")
    kept = manifest["counts"]["kept"]
    assert f"| web | 1 | 3 | {manifest['counts']['records_read']:,} | {kept:,} |" in card  # the source
    assert f"| language | {manifest['stages']['language']['rows_in']:,} |" in card  # the filters
    assert f"{manifest['tokens']['vocab_size']:,} ids" in card  # the tokenizer
    (described,) = manifest["tokens"]["exports"]["huggingface"]
    assert described["sha256"] == hashlib.sha256((out / "README.md").read_bytes()).hexdigest()


def card_configs(out: Path) -> list[tuple[str, str, bool]]:
    """The configs the card in `out` names: (name, data_files, default)."""
    card = (out / "README.md").read_text()
    header = yaml.safe_load(card[4 : card.index("\n---\n", 4)])
    return [(c["config_name"], c["data_files"], c.get("default", False)) for c in header.get("configs", [])]


def load_each_config(out: Path, cache: Path) -> dict[str, list[dict]]:
    """Each config the card names, and the default, loaded by datasets.load_dataset as a Hub user would."""
    datasets = pytest.importorskip("datasets", reason="the export extra (datasets)")
    loaded = {
        name: datasets.load_dataset(str(out), name, split="train", cache_dir=str(cache)).to_list()
        for name, _, _ in card_configs(out)
    }
    if loaded:
        loaded[""] = datasets.load_dataset(str(out), split="train", cache_dir=str(cache)).to_list()
    return loaded


# What an output holds: a crawl run (docs/ and token shards), a run of curated sources alone (no docs/), a run
# whose text is shorter than one sequence (no shard), and both at once.
LAYOUTS = {"crawl": ("docs", "tokens"), "curated only": ("tokens",), "no sequence": ("docs",), "neither": ()}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_card_names_only_what_the_output_holds_and_load_dataset_loads_each(exported, tmp_path, layout, monkeypatch):
    from pipeline.passes import export

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    pytest.importorskip("datasets", reason="the export extra (datasets)")
    out, full = exported
    held = LAYOUTS[layout]
    manifest = json.loads(json.dumps(full))
    manifest["outputs"]["docs"] = full["outputs"]["docs"] if "docs" in held else []
    manifest["tokens"]["shards"] = full["tokens"]["shards"] if "tokens" in held else []
    copy = tmp_path / "out"
    copy.mkdir()
    for path in manifest["outputs"]["docs"] + [shard["path"] for shard in manifest["tokens"]["shards"]]:
        (copy / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out / path, copy / path)
    export.card(copy, manifest)
    files = {"docs": "docs/*.parquet", "tokens": "tokens/part-*.parquet"}
    assert card_configs(copy) == [(name, files[name], i == 0) for i, name in enumerate(held)]
    loaded = load_each_config(copy, tmp_path / "cache")
    if "docs" in held:
        assert sorted(row["text"] for row in loaded["docs"]) == sorted(pq.read_table(out / "docs")["text"].to_pylist())
    if "tokens" in held:
        rows = [r for shard in full["tokens"]["shards"] for r in pq.read_table(out / shard["path"]).to_pylist()]
        assert loaded["tokens"] == rows
    assert loaded.get("") == (loaded[held[0]] if held else None)  # the default: the first named


def test_a_run_of_curated_sources_alone_writes_no_docs_and_its_card_loads(exported, tmp_path, run_here, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    pytest.importorskip("datasets", reason="the export extra (datasets)")
    out, _ = exported
    config = tmp_path / "curated.yaml"
    config.write_text(
        f"sources: [{{name: again, input: ['{out}/docs/*.parquet'], curated: true}}]\n"
        f"ray: {{num_cpus: 2}}\ntokenizer: {{path: '{out}/tokens/tokenizer.json'}}\n"  # no classifier: none runs
        "packing: {seq_len: 64, formats: [parquet, huggingface]}\n"
    )
    curated = tmp_path / "curated"
    manifest = run_here(config, curated)
    assert not (curated / "docs").exists() and manifest["tokens"]["sequences"] > 1
    assert card_configs(curated) == [("tokens", "tokens/part-*.parquet", True)]
    loaded = load_each_config(curated, tmp_path / "cache")
    assert len(loaded["tokens"]) == len(loaded[""]) == manifest["tokens"]["sequences"]
    card = (curated / "README.md").read_text()
    assert "(this output holds no `docs/`)" in card
    documents = manifest["mixture"]["table"][0]["documents"]
    assert documents > 1 and f"| again (curated: joins at the tokens) | 1 | – | – | {documents:,} |" in card
    assert "None ran: every source is curated" in card and "| stage | documents in |" not in card


@pytest.mark.slow
def test_spark_on_one_worker_writes_the_same_export_bytes_as_ray_on_two(exported, tmp_path, run_here):
    if reason := spark_missing():
        pytest.skip(reason)
    out, _ = exported  # Ray, on the tests' two CPUs
    run_here(CONFIGS / "local.yaml", tmp_path / "spark", [*SETTINGS, "engine=spark", "spark.master=local[1]"], CRAWL)
    assert_same_output(out, tmp_path / "spark")  # tokens/ holds tokens/megatron/, mds/ and nanotron/ too
    assert (tmp_path / "spark" / "tokens" / "megatron" / "tokens.bin").read_bytes() == (
        out / "tokens" / "megatron" / "tokens.bin"
    ).read_bytes()


def test_formats_without_parquet_write_the_same_sequences_and_no_parquet_shards(exported, tmp_path, run_here):
    out, full = exported
    only = tmp_path / "only"
    manifest = run_here(CONFIGS / "local.yaml", only, [*SETTINGS, "packing.formats=[megatron, mds]"], CRAWL)
    assert_complete(only)
    assert sorted(p.name for p in (only / "tokens").iterdir()) == sorted(["mds", "megatron", *HF_TOKENIZER_FILES])
    assert manifest["tokens"]["shards"] == []
    assert manifest["outputs"]["tokens"] == [f"tokens/{name}" for name in HF_TOKENIZER_FILES]
    assert manifest["tokens"]["sequences"] == full["tokens"]["sequences"]
    for name in ("megatron", "mds"):  # the same sequences as beside the Parquet shards
        assert manifest["tokens"]["exports"][name] == full["tokens"]["exports"][name]
    assert "parquet (" not in (only / "report.html").read_text()


@pytest.mark.parametrize(
    "formats, message",
    [
        ("[huggingface]", "packing.formats: no format for the token shards"),
        ("[megatron, huggingface]", "packing.formats: huggingface needs parquet too"),
        (
            "[parquet, mosaic]",
            "packing.formats: expected a list of distinct formats among parquet, megatron, mds, nanotron, huggingface",
        ),
        ("[parquet, parquet]", "packing.formats: expected a list of distinct formats"),
    ],
)
def test_a_wrong_formats_list_is_one_line(formats, message, tmp_path):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        load_config(str(CONFIGS / "local.yaml"), overrides=[f"packing.formats={formats}"], output=str(tmp_path / "o"))


HOSTILE_NAMES = ["web\n---\nconfigs: []", "---", "<script>alert(1)</script>", "a | b", "`tick`"]


def card_manifest(names: list[str]) -> dict:
    """A complete run's manifest, by hand, whose source, stage, reason and output names are hostile."""
    return {
        "outputs": {"docs": ["docs/part-00000.parquet"]},
        "config": {
            "output": "/tmp/out\n---\n<b>x</b>",
            "sources": [{"name": name, "weight": 1.0} for name in names],
        },
        "inputs": [{"source": name, "records": 3, "kept": 2} for name in names],
        "stages": {name: {"rows_in": 3, "rejected": 1} for name in names},
        "counts": {
            "records_read": 3,
            "documents": 3,
            "kept": 2,
            "rejected_by_reason": {name: 1 for name in names},
        },
        "tokens": {
            "vocab_size": 300,
            "eos_id": 0,
            "sequences": 1,
            "seq_len": 8,
            "dtype": "uint16",
            "tokens_per_source": {name: 4 for name in names},
            "formats": ["parquet", "huggingface"],
            "shards": [{"path": "tokens/part-00000.parquet"}],
        },
    }


def test_hostile_names_stay_in_their_cells_of_the_dataset_card(tmp_path):
    from pipeline.passes import export

    export.card(tmp_path, card_manifest(HOSTILE_NAMES))
    card = (tmp_path / "README.md").read_text()
    lines = card.splitlines()
    assert lines[: lines.index("---", 1) + 1] == [  # the YAML header, as written for any run
        "---",
        "configs:",
        "- config_name: docs",
        "  data_files: docs/*.parquet",
        "  default: true",
        "- config_name: tokens",
        "  data_files: tokens/part-*.parquet",
        "tags:",
        "- crawlbelt",
        "---",
    ]
    assert card.count("\n---\n") == 1 and "<script" not in card and "<b>" not in card
    rows = [line for line in lines if line.startswith("|")]
    sources = rows[2 : 2 + len(HOSTILE_NAMES)]
    stages = rows[4 + len(HOSTILE_NAMES) :]
    assert len(rows) == 4 + 2 * len(HOSTILE_NAMES)
    cells = [line.replace("\\|", "").count("|") for line in sources + stages]
    assert cells == [6] * len(HOSTILE_NAMES) + [4] * len(HOSTILE_NAMES)  # no name splits or ends a row


def sparse_tokenizer(path: Path, top_id: int, entries: int = 2000) -> Path:
    """A word-level tokenizer.json of `entries` words whose ids are not contiguous: they run up to `top_id`."""
    step = top_id // (entries - 1)
    ids = [i * step for i in range(entries - 1)] + [top_id]
    vocab = {"<|endoftext|>": ids[0], "[UNK]": ids[1], **{f"w{i}": ids[i] for i in range(2, entries)}}
    special = {"id": ids[0], "content": "<|endoftext|>", "single_word": False, "lstrip": False, "rstrip": False}
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [special | {"normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"},
    }
    path.write_text(json.dumps(tokenizer))
    return path


def test_the_id_width_holds_a_given_tokenizers_largest_id_not_its_vocabulary_size(tmp_path):
    from pipeline.passes import export
    from pipeline.passes import tokens
    from stages.tokens import DocumentEncoder

    path = sparse_tokenizer(tmp_path / "tokenizer.json", 71_999)  # 2,000 entries up to id 71,999
    lengths, ids = DocumentEncoder(path.read_text(), "tokenizers")(["w1999 w2 w1999"])
    assert ids.tolist() == [71_999, 72, 71_999]
    config = load_config(str(CONFIGS / "local.yaml"), overrides=[f"tokenizer.path={path}"], output=str(tmp_path / "o"))
    given = tokens._tokenizer(config, [], tmp_path / "tokens", pad=False)
    assert given.dtype == np.uint32 and export.ids_dtype(given.id_limit) == np.int32  # the exports' width too
    assert given.vocab_size == 72_000  # the manifest's and card's vocabulary: what a model's embeddings need


@pytest.mark.parametrize("top_id", [2**24, 4_000_000_000])
def test_a_tokenizer_whose_ids_pass_the_bound_is_one_line_at_validation(tmp_path, top_id):
    path = sparse_tokenizer(tmp_path / "tokenizer.json", top_id, entries=10)
    with pytest.raises(ConfigError, match=r"tokenizer.path: .* ids up to [\d,]+; at most 16,777,215") as error:
        load_config(str(CONFIGS / "local.yaml"), overrides=[f"tokenizer.path={path}"], output=str(tmp_path / "o"))
    assert "\n" not in str(error.value)


def test_a_tokenizer_file_past_the_size_bound_is_one_line_before_it_is_parsed(tmp_path):
    path = tmp_path / "tokenizer.json"
    with open(path, "wb") as f:
        f.truncate((128 << 20) + 1)  # sparse: nothing is written, and a parse would fail on its zero bytes
    with pytest.raises(ConfigError, match=r"tokenizer.path: .* is 134,217,729 bytes; at most 134,217,728"):
        load_config(str(CONFIGS / "local.yaml"), overrides=[f"tokenizer.path={path}"], output=str(tmp_path / "o"))


def encoded_files(folder: Path, documents: list[list[int]], files: int) -> tuple[np.ndarray, list[str]]:
    """The documents as the encode step writes them, spread over `files` files (as encode tasks spread
    them, interleaved): each document's file, and the files."""
    folder.mkdir(parents=True)
    file_of = np.arange(len(documents)) % files
    paths = []
    for i in range(files):
        rows = np.flatnonzero(file_of == i)[::-1]  # not in doc_index order within a file either
        table = pa.table(
            {
                "doc_index": pa.array(rows, pa.int64()),
                "n_tokens": pa.array([len(documents[r]) for r in rows], pa.int64()),
                "tokens": pa.array([documents[r] for r in rows], pa.large_list(pa.uint32())),
            }
        )
        paths.append(str(folder / f"part-{i:05d}.parquet"))
        pq.write_table(table, paths[-1])
    return file_of, paths


@pytest.mark.parametrize("id_limit, dtype", [(50_000, np.uint16), (72_000, np.int32)])
def test_the_megatron_writer_gives_megatron_cores_bytes_however_the_documents_were_encoded(tmp_path, id_limit, dtype):
    indexed = pytest.importorskip("megatron.core.datasets.indexed_dataset", reason="the export extra (megatron-core)")
    torch = pytest.importorskip("torch")
    from pipeline.passes import export

    rng = np.random.default_rng(5)
    documents = [rng.integers(1, id_limit, size=n).tolist() for n in rng.integers(1, 40, size=30)]
    order = rng.permutation(np.concatenate([np.arange(30), [3, 3, 17]]))  # drawn three times, twice, once
    builder = indexed.IndexedDatasetBuilder(str(tmp_path / "tokens.bin"), dtype=dtype)
    for doc in order:
        builder.add_item(torch.tensor(documents[doc] + [0]))
        builder.end_document()
    builder.finalize(str(tmp_path / "tokens.idx"))
    n_tokens = np.array([len(d) for d in documents])
    for files in (1, 4):  # the encode step on one worker or several
        out = tmp_path / f"files-{files}"
        file_of, paths = encoded_files(out / "encoded", documents, files)
        export.megatron(out, export.DrawnDocuments(order, n_tokens, file_of, paths), id_limit, eos_id=0)
        for name in ("tokens.bin", "tokens.idx"):
            assert (out / "tokens" / "megatron" / name).read_bytes() == (tmp_path / name).read_bytes(), (files, name)
