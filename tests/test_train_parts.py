"""The train stage's parts in one process: the median rule, the schedule, the shard reader, the model,
clipping with a loss scale, checkpoint discovery and the train config."""

import os
import pickle
import warnings

import numpy as np
import pytest
import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.api import CheckpointException

from helpers import ROOT
from pipeline.config import ConfigError
from pipeline.config.load import load_config
from pipeline.train.checkpoint import MetadataCheckedReader
from pipeline.train.resume import UnsafeCheckpointError, check_metadata, complete_checkpoints, load_metadata
from pipeline.train.data import IGNORE, TokenShards
from pipeline.train.distributed import clip_grad_norm_
from pipeline.train.loop import lr_factor, spike_median
from pipeline.train.model import SIZES, ModelArgs, Transformer, count_parameters
from token_shards import write_token_shards


def test_median_rule_flags_crawl_samples_step_5_only():
    losses = [3.0, 2.9, 2.8, 2.8, 2.7, 8.5, 4.0, 2.7]
    medians = {t: spike_median(losses[t], losses[:t], window=4, factor=2) for t in range(len(losses))}
    assert {t: median for t, median in medians.items() if median is not None} == {5: 2.8}  # of 2.9, 2.8, 2.8, 2.7


def test_warmup_then_cosine():
    factors = [lr_factor(s, warmup=10, total=110, min_ratio=0.1) for s in range(111)]
    assert factors[0] == pytest.approx(0.1) and factors[9] == 1.0 and factors[10] == 1.0
    assert factors[60] == pytest.approx(0.55) and factors[110] == pytest.approx(0.1)
    assert factors[10:] == sorted(factors[10:], reverse=True)


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shards")
    section = write_token_shards(folder, seq_len=32, sequences_per_shard=50)
    return folder, section


def test_reader_follows_the_manifest_and_masks_padding(shards):
    folder, section = shards
    data = TokenShards(folder)
    assert (data.seq_len, data.vocab_size, data.total) == (32, section["vocab_size"], section["sequences"])
    assert data.position(0) == {"consumed": 0, "epoch": 0, "shard": 0, "sequence": 0}
    assert data.position(123) == {"consumed": 123, "epoch": 0, "shard": 2, "sequence": 23}
    assert data.position(data.total + 51) == {"consumed": data.total + 51, "epoch": 1, "shard": 1, "sequence": 1}

    # The two workers' slices of a batch that crosses the end of the data are the stream's next sequences.
    start = data.total - 3
    inputs0, targets0 = data.batch(start, 8, rank=0, world=2)
    inputs1, targets1 = data.batch(start, 8, rank=1, world=2)
    tokens, lengths = data.read(start, 8)
    assert torch.equal(torch.cat([inputs0, inputs1]), torch.from_numpy(tokens[:, :-1]))
    assert torch.equal(inputs1[0], torch.from_numpy(data.read(1, 1)[0][0, :-1]))  # wrapped to the start
    # The last sequence of the data is padded: its targets past the real tokens are ignored.
    last_length = int(lengths[2])
    assert last_length < 33 and (targets0[2, last_length - 1 :] == IGNORE).all()
    assert (targets0[2, : last_length - 1] != IGNORE).all() and (targets0[[0, 1, 3]] != IGNORE).all()
    assert torch.equal(targets0[0], torch.from_numpy(tokens[0, 1:]))


def test_reader_without_manifest_lists_shards_and_reads_uint32(tmp_path):
    write_token_shards(tmp_path, seq_len=16, dtype="uint32", manifest=False, sequences_per_shard=100)
    data = TokenShards(tmp_path)
    assert data.seq_len == 16 and data.vocab_size == 512 and len(data.paths) >= 2
    assert data.paths == sorted(data.paths) and data.total == sum(data.sizes)
    tokens, _ = data.read(99, 2)  # across the first two shards
    assert tokens.dtype == np.int64 and tokens.shape == (2, 17)


def test_model_sizes_tied_embeddings_and_causality():
    with torch.device("meta"):
        small = count_parameters(Transformer(ModelArgs(vocab_size=50304, seq_len=1024, **SIZES["125m"])))
        medium = count_parameters(Transformer(ModelArgs(vocab_size=50304, seq_len=1024, **SIZES["350m"])))
    assert 120e6 < small < 130e6 and 340e6 < medium < 370e6
    torch.manual_seed(0)
    tied = Transformer(ModelArgs(vocab_size=100, seq_len=8))
    untied = Transformer(ModelArgs(vocab_size=100, seq_len=8, tie_embeddings=False))
    assert tied.head.weight is tied.embed.weight
    assert count_parameters(untied) - count_parameters(tied) == 100 * 64
    tokens = torch.randint(0, 100, (2, 8))
    changed = tokens.clone()
    changed[:, 5] = (changed[:, 5] + 1) % 100
    with torch.no_grad():
        a, b = tied(tokens), tied(changed)
    assert a.shape == (2, 8, 100)
    assert torch.equal(a[:, :5], b[:, :5]) and not torch.equal(a[:, 5:], b[:, 5:])


def test_clipping_unscales_fp16_gradients_and_leaves_an_overflow_alone():
    params = [torch.nn.Parameter(torch.zeros(3)), torch.nn.Parameter(torch.zeros(4))]
    params[0].grad = torch.tensor([3.0, 0.0, 0.0]) * 1024
    params[1].grad = torch.tensor([0.0, 4.0, 0.0, 0.0]) * 1024
    assert clip_grad_norm_(params, max_norm=1.0, grad_scale=1024) == pytest.approx(5.0)
    assert torch.allclose(params[0].grad, torch.tensor([0.6, 0, 0]), atol=1e-6)
    assert torch.allclose(params[1].grad, torch.tensor([0, 0.8, 0, 0]), atol=1e-6)
    params[1].grad[2] = float("inf")
    before = [p.grad.clone() for p in params]
    assert clip_grad_norm_(params, max_norm=1.0, grad_scale=1024) == float("inf")
    assert all(torch.equal(p.grad, b) for p, b in zip(params, before))


def test_only_complete_checkpoints_are_found(tmp_path):
    for name, files in [
        ("step-00000004", [".metadata", "state.json"]),
        ("step-00000012", [".metadata", "state.json"]),
        ("step-00000016.tmp", [".metadata", "state.json"]),
        ("step-00000020", ["state.json"]),
        ("step-00000008", [".metadata", "state.json"]),
    ]:
        (tmp_path / name).mkdir()
        for f in files:
            (tmp_path / name / f).write_text("{}")
    assert [p.name for p in complete_checkpoints(tmp_path)] == ["step-00000004", "step-00000008", "step-00000012"]


class _Planted:
    """What a hostile .metadata pickles: an object whose unpickling runs a command."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_checkpoint_metadata_loads_without_running_code(tmp_path):
    model = torch.nn.Linear(4, 3)
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
    with warnings.catch_warnings():  # one process without torch.distributed: DCP says so
        warnings.simplefilter("ignore")
        dcp.save(state, checkpoint_id=str(tmp_path / "good"))
        # DCP's own metadata passes the check and loads back through the checked reader
        check_metadata(tmp_path / "good")
        with open(tmp_path / "good" / ".metadata", "rb") as stream:
            assert load_metadata(stream) == pickle.loads((tmp_path / "good" / ".metadata").read_bytes())
        loaded = {"model": torch.nn.Linear(4, 3).state_dict(), "optimizer": state["optimizer"]}
        dcp.load(loaded, storage_reader=MetadataCheckedReader(str(tmp_path / "good")))
    assert torch.equal(loaded["model"]["weight"], model.weight)

    marker = tmp_path / "ran"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / ".metadata").write_bytes(pickle.dumps({"storage_data": [_Planted(marker)]}))
    with pytest.raises(UnsafeCheckpointError, match="^posix.system$"), open(bad / ".metadata", "rb") as stream:
        load_metadata(stream)
    with pytest.raises(ConfigError, match="names posix.system, which no DCP checkpoint holds"):
        check_metadata(bad)
    with pytest.raises(CheckpointException, match="posix.system"):  # DCP gathers each rank's error into one
        dcp.load(loaded, storage_reader=MetadataCheckedReader(str(bad)))
    assert not marker.exists()  # nothing in the file ran
    (bad / ".metadata").write_bytes(b"not a pickle")
    with pytest.raises(ConfigError, match="is not a readable DCP checkpoint"):
        check_metadata(bad)


@pytest.mark.parametrize(
    "setting, expected",
    [
        ("train.launcher=slurm", "train.launcher: expected one of torchrun, ray"),
        ("train.batch_size=7", "train.batch_size: 7 sequences do not split over 2 workers"),
        ("train.checkpoint.interval=sometimes", "train.checkpoint.interval: expected a positive integer, auto or null"),
        ("train.model.size=7b", "train.model.size: expected one of"),
        ("train.spike.factor=0.5", "train.spike.factor: expected a finite number above 1"),
        ("train.lr=fast", "train.lr: expected float"),
    ],
)
def test_train_config_errors(shards, tmp_path, setting, expected):
    folder, _ = shards
    with pytest.raises(ConfigError, match=expected):
        load_config(None, overrides=[setting, f"train.data={folder}"], for_train=True)


def test_train_config_finds_the_shards_under_output(shards, tmp_path):
    folder, _ = shards
    config_path = tmp_path / "train.yaml"
    config_path.write_text(f"output: {folder}\ntrain: {{steps: 5, checkpoint: {{interval: auto}}}}\n")
    config = load_config(str(config_path), for_train=True)
    assert config.train.data == str(folder) and config.train.checkpoint.interval == "auto"
    assert load_config(str(ROOT / "configs" / "train_tiny.yaml"), output=str(folder), for_train=True).train.steps > 0
