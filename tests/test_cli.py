"""CLI: clear errors and non-zero exits for bad input; a tiny run and report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ax_kernel_discovery.cli import EXIT_USER_ERROR, main

torch.set_num_threads(1)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--problem", "nope", "--method", "kd"], "unknown problem 'nope'"),
        (["run", "--problem", "rover60", "--method", "nope"], "unknown method 'nope'"),
        (
            ["run", "--problem", "rover60", "--method", "kd", "--budget", "10"],
            "must be at least num_sobol",
        ),
        (["run", "--problem", "rover60", "--method", "kd", "--batch", "0"], "batch"),
        (["run", "--problem", "rover60", "--method", "kd", "--budget", "ten"], "invalid int value"),
        (["run", "--method", "kd"], "--problem"),
        (["run", "--problem", "rover60", "--method", "kd", "--kd-config", "{bad"], "JSON"),
        (["sweep", "--problems", "rover60", "--methods", "kd,foo"], "unknown method 'foo'"),
        (
            ["sweep", "--problems", "rover60", "--methods", "kd", "--seeds", "a,b"],
            "seeds must be integers",
        ),
        (
            ["sweep", "--problems", "rover60", "--methods", "kd", "--workers", "0"],
            "--workers must be >= 1",
        ),
        (
            ["sweep", "--problems", "rover60", "--methods", "kd", "--executor", "spark"],
            "invalid choice",
        ),
        (["sweep", "--problems", "mopta08", "--methods", "kd"], "mopta08"),
        (
            ["run", "--problem", "rover60", "--method", "rbf", "--device", "gpu"],
            "--device: device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got 'gpu'",
        ),
        (["report", "does/not/exist"], "does not exist"),
        (
            ["study", "--variant", "v", "--kd-config", "{}", "--methods", "sl"],
            "a variant runs kd or cake with --kd-config",
        ),
        (["study", "--variant", "v"], "--variant and --kd-config go together"),
        (["frobnicate"], "invalid choice"),
        ([], ""),
    ],
)
def test_bad_input_exits_non_zero(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    if argv[:1] in (["run"], ["sweep"], ["study"]):
        argv = [*argv, "--out", str(tmp_path)]
    assert main(argv) == EXIT_USER_ERROR
    captured = capsys.readouterr()
    assert message in captured.err
    assert "Traceback" not in captured.err + captured.out
    assert not list(tmp_path.glob("*.json"))


def test_device_help_says_every_method_defaults_to_auto(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "torch device of the BO step for every method: auto (the default: CUDA when" in help_text
    assert "default cpu" not in help_text


def test_console_script_error_without_traceback(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ax_kernel_discovery.cli",
            "run",
            "--problem",
            "nope",
            "--method",
            "kd",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == EXIT_USER_ERROR
    assert "error: unknown problem 'nope'; valid names:" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "rover100" in out and "compositional" in out


def test_run_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "results"
    for seed in ("0", "1"):
        argv = [
            "run",
            "--problem",
            "rover60",
            "--method",
            "sobol",
            "--budget",
            "22",
            "--batch",
            "2",
            "--seed",
            seed,
            "--out",
            str(out),
            "--no-progress",
        ]
        assert main(argv) == 0
    result = json.loads((out / "rover60__sobol__seed1.json").read_text())
    assert result["status"] == "complete" and result["n_evaluations"] == 22
    assert main(argv) == 0  # finished: skipped
    assert "skipped" in capsys.readouterr().out
    assert main(["report", str(out), "--out", str(tmp_path / "report")]) == 0
    text = (tmp_path / "report" / "report.md").read_text()
    assert "| sobol |" in text and (tmp_path / "report" / "curves_rover60.png").is_file()


def test_llm_option_sets_the_llm_proposer() -> None:
    from ax_kernel_discovery.cli import _settings, build_parser
    from ax_kernel_discovery.config import KernelDiscoveryConfig
    from ax_kernel_discovery.proposers.expression_llm import ExpressionLLMProposer
    from ax_kernel_discovery.proposers.llm import LLMProposer, proposer_from_config

    argv = ["run", "--problem", "rover60", "--method", "kd", "--llm", "local"]
    settings = _settings(build_parser().parse_args(argv))
    assert settings["kd_config"] == {"proposer": "llm", "llm_model": "local"}
    proposer = proposer_from_config(KernelDiscoveryConfig(**settings["kd_config"]))
    assert isinstance(proposer, ExpressionLLMProposer)  # auto: structured for the local model
    code = KernelDiscoveryConfig(**settings["kd_config"], proposal_format="code")
    coded = proposer_from_config(code)
    assert isinstance(coded, LLMProposer) and coded.conversion_style == "pair"  # auto
    argv += ["--kd-config", '{"conversion_style": "class", "num_formulas": 1}']
    settings = _settings(build_parser().parse_args(argv))
    assert settings["kd_config"]["conversion_style"] == "class"
    assert settings["kd_config"]["llm_model"] == "local"
    api = proposer_from_config(KernelDiscoveryConfig(proposer="llm", llm_model="gpt-4o"))
    assert isinstance(api, LLMProposer) and api.conversion_style == "class"  # auto


def test_data_lists_each_file_its_origin_and_checksum(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from ax_kernel_discovery.benchmarks.datasets import DATA_FILES

    assert main(["data"]) == 0
    out = capsys.readouterr().out
    for name in DATA_FILES:
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(name))
        assert " ok " in line
    assert out.count("package: ") == len(DATA_FILES)
    assert "slice_localization_data.csv" in out and "AXKD_DATA_DIR" in out  # the full file
    (tmp_path / "dna.scale.gz").write_bytes(b"not the published file")
    assert main(["data", "--data-dir", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    line = next(ln for ln in captured.out.splitlines() if ln.strip().startswith("dna.scale.gz"))
    assert "mismatch" in line and str(tmp_path / "dna.scale.gz") in captured.out
    assert "dna.scale.gz" in captured.err
    assert main(["data", "--data-dir", str(tmp_path / "nope")]) == EXIT_USER_ERROR


def test_bo_run_with_bundled_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's fresh-clone check: a BO run on Rover with no data setting."""
    monkeypatch.delenv("AXKD_DATA_DIR", raising=False)
    argv = ["run", "--problem", "rover60", "--method", "rbf", "--budget", "24", "--batch", "2"]
    argv += ["--num-restarts", "1", "--raw-samples", "32", "--maxiter", "20"]
    assert main([*argv, "--out", str(tmp_path), "--no-progress"]) == 0
    result = json.loads((tmp_path / "rover60__rbf__seed0.json").read_text())
    assert result["status"] == "complete" and result["n_evaluations"] == 24
