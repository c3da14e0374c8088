"""Safe handling: configs are data only, nothing read is unpickled or evaluated, RNG checkpoints load with
weights_only=True."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
import torch

from helpers import ROOT
from pipeline.config import ConfigError, load_config
from pipeline.train.checkpoint import rng_states, set_rng_states


def test_a_config_cannot_run_code(tmp_path):
    marker = tmp_path / "ran"
    config = tmp_path / "evil.yaml"
    config.write_text(f"sources: !!python/object/apply:os.system ['touch {marker}']\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(str(config))
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(None, overrides=[f"output=!!python/object/apply:os.system ['touch {marker}']"])
    assert not marker.exists()


def test_no_unsafe_loading_in_the_code():
    unsafe = re.compile(r"\bpickle\.loads?\b|\beval\(|\bexec\(|weights_only=False|yaml\.load\(|yaml\.unsafe_load")
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for folder in ("pipeline", "stages")
        for path in (ROOT / folder).rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if unsafe.search(line)
    ]
    assert found == []


def test_rng_states_load_with_weights_only(tmp_path):
    random.seed(3), np.random.seed(3), torch.manual_seed(3)
    torch.save(rng_states(), tmp_path / "rng.pt")
    expected = (random.random(), np.random.random(), torch.rand(1).item())
    random.seed(4), np.random.seed(4), torch.manual_seed(4)
    set_rng_states(torch.load(tmp_path / "rng.pt", weights_only=True))
    assert (random.random(), np.random.random(), torch.rand(1).item()) == expected
