"""Users' own stages from the YAML (stages/user.py, docs/stages.md): the worked example as written, the
stage contract (row errors, a stage that cannot start, a malformed batch), the ledger, resume after kill -9,
and the same bytes on 1 and 2 workers, with the stage's module outside the repository."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from helpers import needs_spark
from pipeline.config import ConfigError
from stages.user import StageError, UserStage

ROOT = Path(__file__).resolve().parents[1]
PYTHON = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv").is_dir() else sys.executable

# English paragraphs, each made different by a made-up word of its own every four words, so that the language
# and quality rules keep them and near dedup finds no two alike.
SENTENCES = [
    "The river carries sand and small stones from the mountains to the sea over many years.",
    "Farmers have grown rice on the wide delta because the soil is rich and the water is close.",
    "When the river floods it brings new soil with it, which is why the land there stays fertile.",
    "Students in the village learn about the river at school and study how the delta was made.",
    "A teacher can explain the theory of floods with an example drawn on the board for the class.",
]


def write_jsonl(path: Path, first: int, count: int, lorem_every: int = 0) -> None:
    lines = []
    for i in range(first, first + count):
        tag = "".join(chr(ord("a") + i // 26**k % 26) for k in range(3)) + "o"
        words = " ".join(SENTENCES[(i + k) % len(SENTENCES)] for k in range(5)).split()
        text = f"Page {i} of the river notes. " + " ".join(
            f"{word} {tag}" if n % 4 == 3 else word for n, word in enumerate(words)
        )
        if lorem_every and i % lorem_every == 0:
            text += " Lorem ipsum dolor sit amet, lorem ipsum again, and lorem ipsum once more."
        lines.append(json.dumps({"id": f"doc-{i:04d}", "text": text, "url": f"https://river.example/{i}"}))
    path.write_text("\n".join(lines) + "\n")


def doc_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", (ROOT / "docs" / "stages.md").read_text(), re.S)


def run_cli(args: list[str], cwd: Path, pythonpath: Path, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run(
        [PYTHON, "-m", "pipeline", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, **kwargs
    )


def base_config(inputs: list[str], output: Path, **extra) -> dict:
    return {
        "sources": [{"name": "notes", "input": inputs}],
        "output": str(output),
        "ray": {"num_cpus": 2},
        "language": {
            "method": "fasttext",
            "languages": [],
            "threshold": 0.0,
        },  # every language: the verdicts here are the stages'
        "classifier": {"kind": "none"},
        "tokenizer": {"vocab_size": 400},
        "packing": {"seq_len": 64},
        **extra,
    }


def output_bytes(out: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(out)): p.read_bytes()
        for folder in ("docs", "rejects", "tokens")
        for p in sorted((out / folder).glob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("engine", ["ray", pytest.param("spark", marks=needs_spark)])
@pytest.mark.slow
def test_the_worked_example_runs_as_written(tmp_path, engine):
    """docs/stages.md's module, its `stages:` list and its `select`, through the belt over the bundled crawl,
    on either engine (on Spark the user's module is imported by the executors' Python from the working
    directory, as on Ray)."""
    (tmp_path / "myfilters.py").write_text(doc_blocks("python")[0])
    stages_yaml, _, select_yaml = doc_blocks("yaml")  # the second, a transformers scorer: test_model_scorer.py
    (tmp_path / "classifier").mkdir()
    for name in ("good.txt", "bad.txt"):
        (tmp_path / "classifier" / name).write_bytes((ROOT / "configs" / "classifier" / name).read_bytes())
    write_jsonl(tmp_path / "lorem.jsonl", 0, 6, lorem_every=2)
    config = {
        **base_config([str(ROOT / "tests" / "fixtures" / "warc"), str(tmp_path / "lorem.jsonl")], tmp_path / "out"),
        **yaml.safe_load(stages_yaml),
    }
    config["sources"][0]["select"] = yaml.safe_load(select_yaml)["sources"][0]["select"]
    if engine == "spark":
        del config["ray"]
        config.update(engine="spark", spark={"master": "local[2]"})
    (tmp_path / "myconfig.yaml").write_text(yaml.safe_dump(config))
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    (command,) = [line for block in doc_blocks("bash") for line in block.splitlines() if "myconfig.yaml" in line]
    done = subprocess.run(
        command,
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": ""},
    )
    assert done.returncode == 0, done.stderr[-3000:]

    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["complete"] and all(manifest["invariants"].values())
    assert [s for s, row in manifest["stages"].items() if "rows_in" in row] == [
        "read",
        "extract",
        "language",
        "no_lorem_ipsum",
        "quality",
        "repetition",
        "nb",
        "edu",
        "exact_dedup",
        "near_dedup",
    ]
    reasons = manifest["counts"]["rejected_by_reason"]
    assert reasons["no_lorem_ipsum:too_much_lorem"] == 3  # pages 0, 2 and 4 of lorem.jsonl
    assert reasons.get("edu:below_threshold", 0) == manifest["counts"]["rejected"].get("edu", 0) > 0
    docs = pa.concat_tables([pq.read_table(p) for p in sorted((tmp_path / "out" / "docs").glob("*.parquet"))])
    assert {"lorem_hits", "score_nb", "score_edu"} <= set(docs.column_names)
    assert min(docs["score_edu"].to_pylist()) >= 0.02
    rejects = pa.concat_tables([pq.read_table(p) for p in sorted((tmp_path / "out" / "rejects").glob("*.parquet"))])
    lorem = rejects.filter(pa.compute.equal(rejects["reason"], "no_lorem_ipsum:too_much_lorem"))
    assert lorem["detail"].to_pylist() == ["3 hits"] * 3
    # select: the mixture drew from the better half of the source's kept documents by score_edu
    selected = re.search(r"mixture: notes: (\d+) of (\d+) documents selected by score_edu", done.stderr)
    assert selected and int(selected[1]) == -(-int(selected[2]) // 2)
    assert manifest["mixture"]["table"][0]["documents"] == int(selected[1])


class Flaky:
    """Raises on the rows whose text has 'boom'; rejects the ones with 'drop'."""

    adds = {"length": "int64"}

    def __call__(self, batch):
        texts = batch["text"].to_pylist()
        if any("boom" in t for t in texts):
            raise ValueError("boom in the text")
        return {"length": [len(t) for t in texts], "reject": ["dropped" if "drop" in t else None for t in texts]}


def test_a_row_that_raises_is_a_named_reject_and_the_rest_get_their_results():
    stage = UserStage(f"{__name__}:Flaky", name="flaky")
    batch = pa.table(
        {
            "text": ["fine", "boom here", "drop me", "also fine"],
            "stage": pa.nulls(4, pa.string()),
            "reason": pa.nulls(4, pa.string()),
            "detail": pa.nulls(4, pa.string()),
        }
    )
    out = stage(batch)
    assert out["reason"].to_pylist() == [None, "flaky:error", "flaky:dropped", None]
    assert out["detail"][1].as_py() == "ValueError: boom in the text"
    assert out["length"].to_pylist() == [4, None, 7, 9]


class Hangs:
    """Loops for ever in Python on 'loop', backtracks for ever in `re` on 'regex'."""

    adds = {"length": "int64"}

    def __call__(self, batch):
        texts = batch["text"].to_pylist()
        for text in texts:
            while "loop" in text:
                pass
            if "regex" in text:
                re.match(r"(a+)+$", "a" * 60 + "b")
        return {"length": [len(t) for t in texts]}


def test_a_row_that_runs_past_its_time_limit_is_a_timeout_reject_and_the_rest_get_their_results():
    stage = UserStage(f"{__name__}:Hangs", name="hangs", timeout_s=0.2)
    out = stage(ledger_batch(["fine", "a loop here", "a regex here", "also fine"]))
    assert out["reason"].to_pylist() == [None, "hangs:timeout", "hangs:timeout", None]
    assert out["detail"][1].as_py() == "over its 0.2 s limit on one document"
    assert out["length"].to_pylist() == [4, None, None, 9]
    # timing out on most rows is a broken stage, as raising on them is
    with pytest.raises(StageError, match=r"raised on 2 of 3 rows, .* the first: over its 0.2 s limit"):
        UserStage(f"{__name__}:Hangs", name="hangs", timeout_s=0.2)(ledger_batch(["loop", "regex", "fine"]))


class WrongLength:
    adds = {"score_wrong": "float64"}

    def __call__(self, batch):
        return {"score_wrong": [0.5] * (batch.num_rows - 1)}


class NoSetup:
    def setup(self):
        raise OSError("model file gone")

    def __call__(self, batch):
        return {}


class Undeclared:
    def __call__(self, batch):
        return {"extra": [1] * batch.num_rows}


@pytest.mark.parametrize(
    "target, message",
    [
        ("WrongLength", "returned 1 values of 'score_wrong' for 2 rows"),
        ("NoSetup", "failed to start: OSError: model file gone"),
        ("Undeclared", "returned the column 'extra', which it does not declare in `adds`"),
        ("Missing", "has no 'Missing'"),
    ],
)
def test_a_stage_that_breaks_the_contract_stops_the_run_in_one_line(tmp_path, target, message):
    """Config validation sets the stage up and runs it on a probe batch: exit 2, one line, nothing written."""
    write_jsonl(tmp_path / "in.jsonl", 0, 3)
    config = base_config(
        [str(tmp_path / "in.jsonl")], tmp_path / "out", stages=["language", {"use": f"test_user_stages:{target}"}]
    )
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    done = run_cli(["run", str(tmp_path / "c.yaml")], tmp_path, Path(__file__).parent)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("config error: stages[1]: ") and message in lines[0], lines
    assert not (tmp_path / "out").exists()


SLOW_STAGE = '''
import time


class Slow:
    """Waits a little per batch, so that a run can be killed mid-pass; rejects texts with an odd page number."""
    adds = {"page": "int64"}

    def __init__(self, wait_s=0.0):
        self.wait_s = wait_s

    def __call__(self, batch):
        time.sleep(self.wait_s)
        pages = [int(text.split()[1]) for text in batch["text"].to_pylist()]
        return {"page": pages, "reject": ["odd" if p % 2 else None for p in pages]}


class BreaksOnBigBatches:
    """Keeps the contract on the probe batch (2 rows), breaks it on a real one."""
    adds = {"page": "int64"}

    def __call__(self, batch):
        return {"page": [1] * min(batch.num_rows, 2)}
'''


@pytest.fixture()
def slow_stage_inputs(tmp_path):
    return slow_stage_files(tmp_path)


def slow_stage_files(tmp_path: Path) -> tuple[Path, Path]:
    """SLOW_STAGE's module in a folder outside the repository (for PYTHONPATH), and six JSONL files of 20
    pages each."""
    outside = tmp_path / "outside"  # a module outside the repository, on PYTHONPATH
    outside.mkdir()
    (outside / "my_slow_stage.py").write_text(SLOW_STAGE)
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for f in range(6):
        write_jsonl(inputs / f"part-{f}.jsonl", f * 20, 20)
    return outside, inputs


def run_killed(config: Path, cwd: Path, pythonpath: Path, parts: Path, at_least: int = 2) -> None:
    """`run CONFIG` in a process group, killed -9 once `parts` holds `at_least` filter-pass parts."""
    process = subprocess.Popen(
        [PYTHON, "-m", "pipeline", "run", str(config)],
        cwd=cwd,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(pythonpath)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while len(list(parts.glob("file-*.parquet"))) < at_least and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@pytest.mark.slow
def test_a_user_stage_rejects_resumes_after_kill_and_gives_the_same_bytes_on_1_and_2_workers(
    tmp_path, slow_stage_inputs
):
    outside, inputs = slow_stage_inputs
    stages = ["language", {"use": "my_slow_stage:Slow", "with": {"wait_s": 0.0}}, "quality"]

    def config(name: str, cpus: int, wait_s: float = 0.0) -> Path:
        raw = base_config([str(inputs)], tmp_path / name, stages=stages, read={"batch_size": 5})
        raw["stages"][1]["with"]["wait_s"] = wait_s
        raw["ray"]["num_cpus"] = cpus
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(raw))
        return path

    one = run_cli(["run", str(config("one", 1))], tmp_path, outside)
    assert one.returncode == 0, one.stderr[-3000:]
    manifest = json.loads((tmp_path / "one" / "manifest.json").read_text())
    assert manifest["counts"]["rejected_by_reason"]["slow:odd"] == 60
    assert manifest["counts"]["kept"] == 60 and all(manifest["invariants"].values())

    # on 2 workers, killed -9 once some files are through the filter pass, then rerun: it goes on from there,
    # and ends with the bytes of the uninterrupted run on 1 worker
    killed = config("killed", 2, wait_s=0.3)
    filtered = tmp_path / "killed" / "_work" / "filtered"
    run_killed(killed, tmp_path, outside, filtered)
    assert len(list(filtered.glob("file-*.parquet"))) < 6, "the kill came too late to test resume"
    again = run_cli(["run", str(killed)], tmp_path, outside)
    assert again.returncode == 0, again.stderr[-3000:]
    # a worker may finish the part it was writing as the run dies: the rerun says how many it found
    resumed = re.search(r"resume: (\d+) of 6 files already through the filter pass", again.stderr)
    assert resumed and 2 <= int(resumed[1]) < 6, again.stderr[-3000:]
    assert output_bytes(tmp_path / "killed") == output_bytes(tmp_path / "one")


@pytest.mark.slow
def test_a_stage_that_breaks_the_contract_on_a_worker_stops_the_run_in_one_line(tmp_path, slow_stage_inputs):
    outside, inputs = slow_stage_inputs
    raw = base_config([str(inputs)], tmp_path / "out", stages=["language", {"use": "my_slow_stage:BreaksOnBigBatches"}])
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(raw))
    done = run_cli(["run", str(tmp_path / "c.yaml")], tmp_path, outside)
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "stage error: stage breaks_on_big_batches (my_slow_stage:BreaksOnBigBatches) returned 2 values of 'page' for"
    ), last
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out" / "manifest.json").exists()


def ledger_batch(texts: list[str]) -> pa.Table:
    nulls = pa.nulls(len(texts), pa.string())
    return pa.table({"text": texts, "stage": nulls, "reason": nulls, "detail": nulls})


def test_a_stage_raising_on_more_than_its_max_error_share_of_rows_is_broken_and_says_its_first_exception():
    """Rejecting every row as NAME:error would end the run green with nothing kept: more than
    max_error_share (default 0.5) of the rows raising stops the run, with the first exception."""
    with pytest.raises(
        StageError,
        match=r"raised on 3 of 4 rows, more than its max_error_share \(0\.5\); the first: "
        r"ValueError: boom in the text$",
    ):
        UserStage(f"{__name__}:Flaky", name="flaky")(ledger_batch(["boom 1", "fine", "boom 2", "boom 3"]))
    # counted over the rows a worker has given it so far: half of them raising is still the data's fault
    stage = UserStage(f"{__name__}:Flaky", name="flaky")
    assert stage(ledger_batch(["fine", "fine", "fine"]))["reason"].to_pylist() == [None] * 3
    assert stage(ledger_batch(["boom", "boom", "boom"]))["reason"].to_pylist() == ["flaky:error"] * 3
    # max_error_share: 1 keeps the old behaviour, every row that raises a reject
    everything = UserStage(f"{__name__}:Flaky", name="flaky", max_error_share=1)
    assert everything(ledger_batch(["boom", "boom"]))["reason"].to_pylist() == ["flaky:error"] * 2


class Scores:
    """score_s read from the texts themselves: 'nan', 'none' or a number (0 for any other text)."""

    name = "s"
    adds = {"score_s": "float64"}

    def __call__(self, batch):
        return {"score_s": [_score(text) for text in batch["text"].to_pylist()]}


def _score(text: str) -> float | None:
    if text == "none":
        return None
    try:
        return float(text)  # float("nan") is NaN
    except ValueError:
        return 0.0


def test_a_row_without_a_score_never_passes_a_threshold():
    out = UserStage(f"{__name__}:Scores", threshold=0.5)(ledger_batch(["0.9", "nan", "none", "0.1"]))
    assert out["reason"].to_pylist() == [None, "s:no_score", "s:no_score", "s:below_threshold"]


class Returns:
    """Returns what its `result` argument names, for each way of breaking the contract."""

    adds = {"n": "int64"}

    def __init__(self, result: str):
        self.result = result

    def __call__(self, batch):
        rows = batch.num_rows
        return {
            "empty_reason": {"n": [1] * rows, "reject": [""] * rows},
            "scalar_column": {"n": 3},
            "text_column": {"n": "3"},
        }[self.result]


@pytest.mark.parametrize(
    "result, message",
    [
        ("empty_reason", "`reject` holds an empty reason; give a reason, or None to keep the row"),
        ("scalar_column", "returned int for 'n', expected one value per row"),
        ("text_column", "returned str for 'n', expected one value per row"),
    ],
)
def test_a_result_that_breaks_the_contract_is_a_stage_error(result, message):
    with pytest.raises(StageError, match=re.escape(message)):
        UserStage(f"{__name__}:Returns", {"result": result})(ledger_batch(["a", "b"]))


class Lengths:
    """pyarrow.compute's lengths: an int32 array, chunked as a table's column is."""

    adds = {"length": "int64"}

    def __call__(self, batch):
        return {"length": pa.compute.utf8_length(batch["text"])}


def test_an_arrow_column_of_another_type_is_cast_safely_to_the_declared_one():
    out = UserStage(f"{__name__}:Lengths")(ledger_batch(["ab", "abc"]))
    assert out["length"].type == pa.int64() and out["length"].to_pylist() == [2, 3]
    too_small = UserStage(f"{__name__}:Lengths", adds={"length": "int8"})
    assert too_small(ledger_batch(["ab"]))["length"].to_pylist() == [2]
    with pytest.raises(StageError, match=r"its column 'length' is not int8 \(Integer value 300 not in range"):
        too_small(ledger_batch(["x" * 300]))


def test_a_column_named_like_a_result_key_is_refused():
    with pytest.raises(StageError, match="`adds` declares the column 'reject', a key the stage contract keeps"):
        UserStage(f"{__name__}:Lengths", adds={"reject": "string"})


class BrokenOnRealRows:
    """Keeps the contract on the probe batch, raises on every real document (a model that did not load)."""

    adds = {"n": "int64"}

    def __call__(self, batch):
        if batch["id"][0].as_py().startswith("probe-"):
            return {"n": [0] * batch.num_rows}
        raise RuntimeError("the model is not loaded")


class AlwaysRaises:
    adds = {"n": "int64"}

    def __call__(self, batch):
        raise RuntimeError("the model is not loaded")


class DatedScore:
    """A scorer with a date argument: NaN for the page at .../0, 1 for the others; and each text's length
    (int32, chunked, as pyarrow.compute gives it)."""

    name = "dated"
    adds = {"score_dated": "float64", "length": "int64"}

    def __init__(self, since):
        self.since = since

    def __call__(self, batch):
        lengths = pa.compute.utf8_length(batch["text"])
        urls = batch["url"].to_pylist()
        return {"score_dated": [float("nan") if u.endswith("/0") else 1.0 for u in urls], "length": lengths}


@pytest.mark.parametrize(
    "entry, sources, message",
    [
        ({"use": "test_user_stages:Scores", "threshold": float("nan")}, None, "stages[1].threshold: expected a number"),
        ({"use": "test_user_stages:Scores", "threshold": "high"}, None, "stages[1].threshold: expected a number"),
        (
            {"use": "test_user_stages:Scores", "max_error_share": 2},
            None,
            "stages[1].max_error_share: expected a share in [0, 1], got 2",
        ),
        ({"use": "test_user_stages:Scores", "timeout_s": 0}, None, "stages[1].timeout_s: expected seconds above 0"),
        (
            {"use": "test_user_stages:Lengths", "adds": {"reject": "string"}},
            None,
            "`adds` declares the column 'reject'",
        ),
        (
            {"use": "test_user_stages:Lengths", "with": {"seen": {1, 2}}},
            None,
            "stages[1].with: set {1, 2} is not a value JSON can hold",
        ),
        (
            {"use": "no_such_module:Stage"},
            [{"select": {"score": "score_x", "top_fraction": 0.5}}],
            "stages[1]: 'no_such_module:Stage': cannot import 'no_such_module'",
        ),
        (
            {"use": "test_user_stages:Lengths"},
            [
                {},
                {
                    "name": "kept",
                    "curated": True,
                    "input": ["curated.parquet"],
                    "select": {"score": "text", "min_score": 1},
                },
            ],
            "sources[1].select.score: the column 'text' of ",
        ),
    ],
    ids=[
        "nan_threshold",
        "text_threshold",
        "error_share_above_1",
        "timeout_not_above_0",
        "reject_column",
        "set_argument",
        "unimportable_with_select",
        "text_score",
    ],
)
def test_a_user_stage_setting_that_cannot_work_stops_the_run_in_one_line(tmp_path, entry, sources, message):
    write_jsonl(tmp_path / "in.jsonl", 0, 3)
    secret = "a document text that must not be printed"
    pq.write_table(pa.table({"text": [secret, secret]}), tmp_path / "curated.parquet")
    config = base_config([str(tmp_path / "in.jsonl")], tmp_path / "out", stages=["language", entry])
    if sources:  # the first one's settings added to the test's source, then more sources
        config["sources"] = [{**config["sources"][0], **sources[0]}, *sources[1:]]
    (tmp_path / "c.yaml").write_text(yaml.dump(config))  # yaml.dump: the set argument written as !!set
    for command in ("validate", "run"):
        done = run_cli([command, str(tmp_path / "c.yaml")], tmp_path, Path(__file__).parent)
        assert done.returncode == 2, done.stderr[-2000:]
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("config error: ") and message in lines[0], lines
        assert secret not in done.stderr
        assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["ray", pytest.param("spark", marks=needs_spark)])
def test_a_stage_raising_on_every_real_row_stops_the_run_in_one_line(tmp_path, engine):
    write_jsonl(tmp_path / "in.jsonl", 0, 6)
    config = base_config(
        [str(tmp_path / "in.jsonl")],
        tmp_path / "out",
        stages=["language", {"use": "test_user_stages:BrokenOnRealRows"}],
    )
    if engine == "spark":
        del config["ray"]
        config.update(engine="spark", spark={"master": "local[2]"})
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    done = run_cli(["run", str(tmp_path / "c.yaml")], tmp_path, Path(__file__).parent)
    assert done.returncode == 2, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "stage error: stage broken_on_real_rows (test_user_stages:BrokenOnRealRows) raised on 6 of 6 rows, more "
        "than its max_error_share (0.5); the first: RuntimeError: the model is not loaded"
    ), last
    if engine == "ray":  # Spark's executor logs the task's trace before it: its log settings are another case's
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "out" / "docs").exists()


def test_a_date_argument_a_nan_score_and_an_int32_column_are_taken_as_meant(tmp_path, run_here):
    """`since: 2024-01-01` reaches the stage as a date and the manifest as ISO text; a NaN score is
    `dated:no_score`, not kept; an int32 Arrow column is written as the declared int64."""
    write_jsonl(tmp_path / "in.jsonl", 0, 4)
    entry = {"use": "test_user_stages:DatedScore", "with": {"since": "SINCE"}, "threshold": 0.5}
    config = base_config([str(tmp_path / "in.jsonl")], tmp_path / "out", stages=["language", entry])
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config).replace("SINCE", "2024-01-01"))
    assert "since: 2024-01-01\n" in (tmp_path / "c.yaml").read_text()
    run_here(tmp_path / "c.yaml", tmp_path / "out")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["config"]["stages"][1]["with"] == {"since": "2024-01-01"}
    assert manifest["counts"]["rejected_by_reason"] == {"dated:no_score": 1} and manifest["counts"]["kept"] == 3
    docs = pq.read_table(next((tmp_path / "out" / "docs").glob("*.parquet")))
    assert docs.schema.field("length").type == pa.int64()


def test_a_select_that_matches_no_document_says_so(tmp_path, run_here, caplog):
    """With nothing else to draw from, the run stops with a config error (exit 2, no docs/) rather than end
    green without token shards; with another source still drawn from, the run goes on and says which source
    `select` emptied, in the log and the manifest. (A config error's one line: test_one_line_errors.py.)"""
    write_jsonl(tmp_path / "web.jsonl", 0, 6)
    write_jsonl(tmp_path / "books.jsonl", 6, 6)
    stages = ["language", {"use": "test_user_stages:Scores"}]  # score_s 0 for every page
    config = base_config([str(tmp_path / "web.jsonl")], tmp_path / "alone", stages=stages)
    config["sources"][0]["select"] = {"score": "score_s", "min_score": 2}
    (tmp_path / "alone.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError) as error:
        run_here(tmp_path / "alone.yaml", tmp_path / "alone")
    assert str(error.value) == (
        "sources[0].select matched no document of source 'notes': the best score_s of its 6 "
        "documents is 0, below min_score 2; no other source has a document to draw"
    )
    assert not (tmp_path / "alone" / "docs").exists()

    config["output"] = str(tmp_path / "two")
    config["sources"].append({"name": "books", "input": [str(tmp_path / "books.jsonl")]})
    (tmp_path / "two.yaml").write_text(yaml.safe_dump(config))
    caplog.clear()
    with caplog.at_level(logging.INFO):
        run_here(tmp_path / "two.yaml", tmp_path / "two")
    line = (
        "sources[0].select matched no document of source 'notes': the best score_s of its 6 documents is 0, "
        "below min_score 2"
    )
    logged = [record.getMessage() for record in caplog.records]
    assert f"mixture: {line}" in logged and not any("has weight 1.0 but no tokens" in m for m in logged), logged
    manifest = json.loads((tmp_path / "two" / "manifest.json").read_text())
    assert manifest["mixture"]["warnings"] == [line] and manifest["tokens"]["sequences"] > 0


@pytest.mark.slow
def test_validate_notes_a_stage_raising_on_the_probe_batch_and_the_run_stops_on_real_documents(tmp_path):
    """The probe batch is made up, so a stage may fairly fail on it (a parser of one kind of document):
    validate says so and goes on; the run stops once real documents show the stage broken."""
    write_jsonl(tmp_path / "in.jsonl", 0, 4)
    entry = {"use": "test_user_stages:AlwaysRaises"}
    config = base_config([str(tmp_path / "in.jsonl")], tmp_path / "out", stages=["language", entry])
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    checked = run_cli(["validate", str(tmp_path / "c.yaml")], tmp_path, Path(__file__).parent)
    assert checked.returncode == 0, checked.stderr[-2000:]
    assert (
        "note: stages[1]: stage always_raises raised on the probe batch (2 of 2 rows, the first: RuntimeError: the "
        "model is not loaded); on real documents a run stops once it raises on more than max_error_share (0.5) of "
        "them\n"
    ) in checked.stdout
    done = run_cli(["run", str(tmp_path / "c.yaml")], tmp_path, Path(__file__).parent)
    assert done.returncode == 2, done.stderr[-3000:]
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith("stage error: stage always_raises (test_user_stages:AlwaysRaises) raised on 4 of 4 rows")
    )
    assert not (tmp_path / "out" / "docs").exists()
