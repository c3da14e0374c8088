"""The capacity planner: its figures are crawl_sample.md's."""

import json
import subprocess
import sys

import pytest

from helpers import ROOT
from pipeline.cli import main
from pipeline.train.plan import parse_count, plan, wasted_fraction, young_interval


def test_planner_figures_match_crawl_sample():
    p = plan(parse_count("7.5B"), 64)
    assert p["bytes_per_parameter"] == 16
    assert [round(b / 1e9, 1) for b in p["zero_bytes_per_gpu"].values()] == [120.0, 31.4, 16.6, 1.9]
    assert p["compute_optimal_tokens"] == 150e9 and p["training_flops"] == pytest.approx(6 * 7.5e9 * 150e9)
    assert young_interval(60, 180 * 60) / 60 == pytest.approx(18.97, abs=0.005)
    assert wasted_fraction(60, 180 * 60, young_interval(60, 180 * 60)) == pytest.approx(0.105, abs=0.0005)
    assert young_interval(10, 180 * 60) / 60 == pytest.approx(7.7, abs=0.05)
    assert wasted_fraction(10, 180 * 60, young_interval(10, 180 * 60)) == pytest.approx(0.043, abs=0.0005)
    assert parse_count("125M") == 125e6 and parse_count("300k") == 300e3 and parse_count("1e9") == 1e9


def test_plan_command(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline",
            "plan",
            "--params",
            "7.5B",
            "--gpus",
            "64",
            "--save-seconds",
            "60",
            "--mtbf-hours",
            "3",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for figure in ("120.0 GB", "31.4 GB", "16.6 GB", "1.9 GB", "150.0B", "18.97 minutes", "10.5%"):
        assert figure in out, (figure, out)
    figures = json.loads(
        subprocess.run(
            [sys.executable, "-m", "pipeline", "plan", "--params", "125M", "--gpus", "8", "--tokens", "2.5B", "--json"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
    )
    assert figures["training_flops"] == pytest.approx(6 * 125e6 * 2.5e9) and "checkpoint" not in figures


@pytest.mark.parametrize(
    "option, value",
    [
        ("--gpus", "0"),
        ("--gpus", "-8"),
        ("--gpus", "eight"),
        ("--params", "0"),
        ("--params", "seven"),
        ("--params", "nan"),
        ("--params", "inf"),
        ("--params", "-7"),
        ("--tokens", "0"),
        ("--tokens", "nanB"),
        ("--mfu", "0"),
        ("--mfu", "40"),
        ("--mfu", "nan"),
        ("--peak-tflops", "0"),
        ("--peak-tflops", "inf"),
        ("--peak-tflops", "nan"),
        ("--mtbf-hours", "0"),
        ("--mtbf-hours", "inf"),
        ("--save-seconds", "-1"),
        ("--save-seconds", "0"),
        ("--save-seconds", "nan"),
    ],
)
def test_plan_refuses_a_bad_figure_in_one_line(capsys, option, value):
    arguments = {"--params": "7.5B", "--gpus": "64", "--save-seconds": "60", "--mtbf-hours": "3", option: value}
    with pytest.raises(SystemExit) as exit_:
        main(["plan", *[text for pair in arguments.items() for text in pair]])
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    error = captured.err.strip().splitlines()[-1]
    assert error.startswith(f"crawlbelt plan: error: argument {option}: expected ") and repr(value) in error, error
    assert "Traceback" not in captured.err and captured.out == ""


@pytest.mark.parametrize("save_seconds, mtbf_hours", [("7200", "1"), ("1800", "1")])
def test_a_save_that_does_not_fit_between_failures_is_said_not_given_percentages(save_seconds, mtbf_hours):
    """A save as long as half the MTBF or more: Young's rule would waste 100% of the time or more."""
    command = [sys.executable, "-m", "pipeline", "plan", "--params", "7B", "--gpus", "8"]
    command += ["--save-seconds", save_seconds, "--mtbf-hours", mtbf_hours]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith(f"checkpoint: a save of C = {save_seconds} s does not fit between failures"), last
    assert "%" not in last
    figures = json.loads(subprocess.run([*command, "--json"], cwd=ROOT, capture_output=True, timeout=60).stdout)
    assert figures["checkpoint"]["keeps_up"] is False and figures["checkpoint"]["wasted_fraction"] is None
