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


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_the_device_help_names_the_device_every_method_runs_on_by_default(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 52 item 17: without --device every method runs on the CPU, even where CUDA
    is available, and the help says so (it said auto, CUDA when available)."""
    from ax_kernel_discovery.runner.experiment import _resolved_device
    from ax_kernel_discovery.runner.run_config import make_run_config

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert main([command, "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "torch device of the BO step for every method: cpu (the default" in help_text
    assert "auto (the default" not in help_text
    for method in ("kd", "rbf"):
        args = _run_args(["run", "--problem", "rover60", "--method", method])
        assert args["device"] is None
        assert _resolved_device(make_run_config(**args)) == "cpu"


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
    from ax_kernel_discovery.proposers.from_config import make_proposer
    from ax_kernel_discovery.proposers.llm import LLMProposer

    argv = ["run", "--problem", "rover60", "--method", "kd", "--llm", "local"]
    settings = _settings(build_parser().parse_args(argv))
    assert settings["kd_config"] == {"proposer": "llm", "llm_model": "local"}
    proposer = make_proposer(KernelDiscoveryConfig(**settings["kd_config"]))
    assert isinstance(proposer, ExpressionLLMProposer)  # auto: structured for the local model
    code = KernelDiscoveryConfig(**settings["kd_config"], proposal_format="code")
    coded = make_proposer(code)
    assert isinstance(coded, LLMProposer) and coded.conversion_style == "pair"  # auto
    argv += ["--kd-config", '{"conversion_style": "class", "num_formulas": 1}']
    settings = _settings(build_parser().parse_args(argv))
    assert settings["kd_config"]["conversion_style"] == "class"
    assert settings["kd_config"]["llm_model"] == "local"
    api = make_proposer(KernelDiscoveryConfig(proposer="llm", llm_model="gpt-4o"))
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


def _hostile_library(path: Path) -> Path:
    """A library whose one kernel imports os: checksum fine, refused by the sandbox."""
    from ax_kernel_discovery.library import LibraryKernel, save_kernels

    code = (Path(__file__).parent / "kernel_corpus" / "valid_rbf.py").read_text()
    evil = LibraryKernel(
        name="evil", origin="discovery", formula="exp(-r^2)", code="import os\n" + code, dim=4
    )
    return save_kernels([evil], path)


def _no_llm_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key in the environment, no xllamacpp, and a download that must not start."""
    import importlib.util

    from ax_kernel_discovery.llm import local_model

    for key in ("OPENAI_API_KEY", "AXKD_LLM_MODEL", "AXKD_LLM_API_BASE", "AXKD_LOCAL_MODEL"):
        monkeypatch.delenv(key, raising=False)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "xllamacpp" else real_find_spec(name, *a),
    )

    def no_download(*args: object, **kwargs: object) -> None:
        raise AssertionError("the local model was downloaded before the setup check")

    monkeypatch.setattr(local_model, "assemble_qwen_gguf", no_download)


def test_setups_that_cannot_work_fail_before_the_first_evaluation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Device, LLM, --kernel and --kd-config problems: one error line, exit 2, nothing run."""
    import socket

    _no_llm_setup(monkeypatch)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with socket.socket() as sock:  # a loopback port where nothing listens
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    evil = _hostile_library(tmp_path / "evil.json")
    run = ["run", "--problem", "rover60", "--budget", "30", "--no-progress"]
    cases = [
        (["--method", "kd", "--device", "cuda"], "device 'cuda' was asked for but CUDA is not"),
        (["--method", "rbf", "--device", "cuda:1"], "use --device cpu"),
        (["--method", "kd", "--llm", "gpt-4o"], "needs OPENAI_API_KEY in the environment"),
        (["--method", "kd", "--llm", "local"], "pip install 'xllamacpp==2026.10.11549'"),
        (
            ["--method", "kd", "--llm", "openai/mymodel", "--kd-config"]
            + [json.dumps({"llm_api_base": f"http://127.0.0.1:{closed}/v1"})],
            f"no server answers at http://127.0.0.1:{closed}/v1",
        ),
        (["--method", "kd", "--llm", "nonsense-model"], "not a model string litellm knows"),
        (["--method", "cake", "--llm", "gpt-4o"], "needs OPENAI_API_KEY"),
        (["--method", "fixed", "--kernel", str(evil)], "kernel 'evil': its kernel source failed"),
        (["--method", "kd", "--kd-config", "missing.json"], "no such file: 'missing.json'"),
        (
            ["--method", "kd", "--kd-config", '{"populaton_size": 5}'],
            "unknown setting 'populaton_size' of KernelDiscoveryConfig: did you mean "
            "'population_size'",
        ),
    ]
    for extra, message in cases:
        out = tmp_path / "out"
        assert main([*run, *extra, "--out", str(out)]) == EXIT_USER_ERROR, extra
        captured = capsys.readouterr()
        assert message in captured.err, (extra, captured.err)
        assert captured.err.startswith("error: ") and "Traceback" not in captured.err
        assert not out.exists() or not list(out.rglob("*.json")), extra  # nothing evaluated


def test_bad_files_name_the_file_and_the_way_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A truncated checkpoint, and `export` of a library or of a file that is not a run."""
    out = tmp_path / "results"
    checkpoint = out / "checkpoints" / "rover60__sobol__seed0.json"
    checkpoint.parent.mkdir(parents=True)
    checkpoint.write_text('{"experiment": {"__type": "Experiment", "name": "rov')
    argv = ["run", "--problem", "rover60", "--method", "sobol", "--budget", "22", "--out"]
    assert main([*argv, str(out), "--no-progress"]) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert f"checkpoint {checkpoint} cannot be read" in err
    assert f"delete {checkpoint} to start the run over" in err and "Traceback" not in err

    from ax_kernel_discovery.expression import leaf
    from ax_kernel_discovery.library import LibraryKernel, save_kernels

    library = save_kernels(
        [LibraryKernel(name="rbf", origin="base", spec=leaf("rbf"))], tmp_path / "k.json"
    )
    assert main(["export", str(library), "--out", str(tmp_path / "again.json")]) == 2
    err = capsys.readouterr().err
    assert f"{library} is a kernel library, not a run" in err
    assert f"--kernel {library}:NAME" in err and "Traceback" not in err
    other = tmp_path / "other.json"
    other.write_text('{"some": "json"}')
    assert main(["export", str(other)]) == EXIT_USER_ERROR
    assert f"{other} is not a run; export reads a run" in capsys.readouterr().err


def test_help_and_commands_print_no_ax_info_line(tmp_path: Path) -> None:
    """Ax's '[INFO] ... SQL storage initialized' (printed at Ax's import) stays quiet."""
    for argv in (["--help"], ["list"], ["run", "--help"]):
        proc = subprocess.run(
            [sys.executable, "-m", "ax_kernel_discovery.cli", *argv],
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert proc.returncode == 0, proc.stderr
        assert "[INFO" not in proc.stdout + proc.stderr, argv
    assert "--verbose" in proc.stdout


def test_final_line_says_how_many_rounds_used_the_llm() -> None:
    from ax_kernel_discovery.cli import _llm_note

    note = _llm_note({"llm_rounds": {"rounds": 5, "used_llm": 3, "without_llm": 2}})
    assert note.startswith("; the LLM's proposals were used in 3 of 5 rounds")
    assert "failures" in note
    assert _llm_note({"llm_rounds": None}) == ""


def test_a_finished_llm_run_needs_no_llm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The setup checks guard evaluations: a complete run is skipped without them."""
    from ax_kernel_discovery.runner import make_run_config

    _no_llm_setup(monkeypatch)
    out = tmp_path / "results"
    settings = {
        "budget": 30,
        "out": str(out),
        "kd_config": {"proposer": "llm", "llm_model": "local"},
    }
    cfg = make_run_config(problem="rover60", method="kd", **settings)
    out.mkdir()
    cfg.result_path.write_text(
        json.dumps(
            {"status": "complete", "n_evaluations": 30, "best_value": 1.0, "direction": "minimize"}
        )
    )
    argv = ["run", "--problem", "rover60", "--method", "kd", "--budget", "30", "--llm", "local"]
    assert main([*argv, "--out", str(out), "--no-progress"]) == 0
    assert "already complete" in capsys.readouterr().out
    sweep = ["sweep", "--problems", "rover60", "--methods", "kd", "--budget", "30"]
    assert main([*sweep, "--llm", "local", "--out", str(out), "--no-progress"]) == 0
    assert main([*sweep, "--seeds", "1", "--llm", "local", "--out", str(out)]) == 2
    assert "needs xllamacpp" in capsys.readouterr().err  # seed 1 would run: checked first


def test_formulas_print_as_they_are(capsys: pytest.CaptureFixture[str]) -> None:
    """A warped kernel's formula holds ``[u = ...]``, which rich would take for markup."""
    from ax_kernel_discovery.cli import _console
    from ax_kernel_discovery.expression import formula, leaf

    text = formula({"op": "add", "args": [leaf("matern52", warp="kumaraswamy"), leaf("rbf")]})
    assert "[u = " in text
    _console().print(text)
    assert capsys.readouterr().out == text + "\n"


def _finished(cfg: object, n: int, resolved: bool = True) -> None:
    """A finished result of ``cfg`` as the runner writes it (only what the checks read)."""
    record = {
        "status": "complete",
        "n_evaluations": n,
        "best_value": 1.0,
        "direction": "maximize",
        "config": cfg.model_dump(mode="json"),  # type: ignore[attr-defined]
    }
    if resolved:
        record["resolved_kd_config"] = cfg.resolved_kd_config()  # type: ignore[attr-defined]
    Path(cfg.result_path).parent.mkdir(parents=True, exist_ok=True)  # type: ignore[attr-defined]
    Path(cfg.result_path).write_text(json.dumps(record))  # type: ignore[attr-defined]


def test_a_rerun_with_other_settings_is_refused_naming_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's commands: a default kd run, then other --kd-config, --batch, --num-sobol."""
    from ax_kernel_discovery.runner import make_run_config

    out = tmp_path / "results"
    run = ["run", "--problem", "rover60", "--method", "kd", "--seed", "0", "--out", str(out)]
    first = [*run, "--budget", "40", "--batch", "5", "--num-sobol", "10", "--no-progress"]
    _finished(make_run_config(**_run_args(first)), 40)
    before = sorted(p.read_text() for p in out.rglob("*.json"))

    cases = [
        (
            ["--kd-config", '{"population_size": 5, "criterion": "loo_crps"}'],
            [
                'kd_config.criterion: "prequential" -> "loo_crps"',
                "kd_config.population_size: 10 -> 5",
            ],
        ),
        (["--batch", "10", "--num-sobol", "20"], ["batch: 5 -> 10", "num_sobol: 10 -> 20"]),
        (["--num-restarts", "2"], ["num_restarts: 4 -> 2"]),
        (["--data-dir", str(tmp_path)], ['problem_options: {} -> {"data_dir":']),
    ]
    for extra, differences in cases:
        assert main([*first, *extra]) == EXIT_USER_ERROR, extra
        err = " ".join(capsys.readouterr().err.split())
        assert (
            f"{out / 'rover60__kd__seed0.json'} holds a run of rover60__kd__seed0 with other settings"
            in err
        )
        assert all(d in err for d in differences), (extra, err)
        assert "use another --out folder for these settings, or delete" in err
        assert "Traceback" not in err
    assert sorted(p.read_text() for p in out.rglob("*.json")) == before  # nothing touched
    # the same settings: skipped, as before; a result of an earlier version too
    assert main(first) == 0
    assert (
        "already complete with the same settings (40 evaluations), skipped"
        in capsys.readouterr().out
    )
    _finished(make_run_config(**_run_args(first)), 40, resolved=False)
    assert main(first) == 0 and "skipped" in capsys.readouterr().out


def test_a_finished_smaller_run_continues_and_a_sweep_refuses_up_front(tmp_path: Path) -> None:
    from ax_kernel_discovery.runner import UserInputError, check_run_config, make_run_config
    from ax_kernel_discovery.runner.sweep import sweep_configs

    out = str(tmp_path)
    _finished(make_run_config(problem="rover60", method="rbf", budget=30, out=out), 30)
    check_run_config(make_run_config(problem="rover60", method="rbf", budget=50, out=out))
    with pytest.raises(UserInputError, match="rover60__rbf__seed0 with other settings"):
        sweep_configs(["rover60"], ["kd", "rbf"], [0], budget=30, batch=10, out=out)


def _run_args(argv: list[str]) -> dict[str, object]:
    from ax_kernel_discovery.cli import _settings, build_parser

    args = build_parser().parse_args(argv)
    return {"problem": args.problem, "method": args.method, "seed": args.seed, **_settings(args)}


def test_kd_settings_with_a_method_that_takes_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = ["run", "--problem", "rover60", "--out", str(tmp_path), "--no-progress"]
    assert main([*run, "--method", "rbf", "--kd-config", '{"population_size": 5}']) == 2
    err = capsys.readouterr().err
    assert "--kd-config configures kernel discovery (methods kd, compositional, cake)" in err
    assert "method rbf takes none: drop --kd-config, or run --method kd" in err
    assert main([*run, "--method", "sl", "--llm", "gpt-4o"]) == 2
    assert "--llm configures kernel discovery" in capsys.readouterr().err
    sweep = ["sweep", "--problems", "rover60", "--seeds", "0", "--out", str(tmp_path)]
    assert main([*sweep, "--methods", "rbf,sl", "--kd-config", "{}"]) == 2
    assert "methods rbf, sl take none" in capsys.readouterr().err
    assert not list(tmp_path.rglob("*.json"))

    from ax_kernel_discovery.cli import _check_kd_options, build_parser

    args = build_parser().parse_args([*sweep, "--methods", "kd,rbf", "--kd-config", "{}"])
    _check_kd_options(args, ["kd", "rbf"])
    assert "note: --kd-config apply to kd only; rbf ignores it" in capsys.readouterr().err


def test_a_run_that_never_uses_a_discovered_kernel_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ax_kernel_discovery.runner import make_run_config

    argv = ["run", "--problem", "rover60", "--method", "kd", "--budget", "30", "--batch", "10"]
    argv += ["--out", str(tmp_path), "--no-progress"]
    _finished(make_run_config(**_run_args(argv)), 30)  # finished: nothing runs
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert (
        "warning: rover60__kd__seed0: the only BO round is a guard round (guard_rounds=1: "
        "Ax's default model chooses the points), so no discovered kernel will be used (raise "
        "--budget to at least 31, or set guard_rounds=0 in --kd-config)"
    ) in " ".join(captured.err.split())
    assert "no discovered kernel was used" in captured.out
    assert (
        make_run_config(problem="rover60", method="kd", budget=31, batch=10).unused_discovery_note()
        is None
    )
    assert (
        make_run_config(problem="rover60", method="rbf", budget=30).unused_discovery_note() is None
    )


def test_study_outside_a_clone_needs_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for argv in (["study", "--no-progress"], ["study", "--report", "r.md"]):
        assert main(argv) == EXIT_USER_ERROR
        err = " ".join(capsys.readouterr().err.split())
        assert "no study folder here: the study's results live in benchmarks/results/study/" in err
        assert "give --out FOLDER for a study of your own" in err
    assert not list(tmp_path.iterdir())  # nothing started
    (tmp_path / "benchmarks" / "results" / "study").mkdir(parents=True)  # a clone's root
    assert main(["study", "--report", "r.md"]) == EXIT_USER_ERROR
    assert "no complete result JSON" in capsys.readouterr().err  # the default folder is read


@pytest.mark.parametrize("method", ["kd", "compositional"])
@pytest.mark.parametrize("kd_config", [None, {"population_size": 6, "criterion": "loo_crps"}])
def test_the_identity_holds_the_config_the_surrogate_runs_with(
    method: str, kd_config: dict | None, tmp_path: Path
) -> None:
    from ax_kernel_discovery.baselines.methods import get_method
    from ax_kernel_discovery.runner import make_run_config, method_options
    from ax_kernel_discovery.strategy import surrogate_of

    cfg = make_run_config(
        problem="rover60", method=method, seed=3, kd_config=kd_config, out=str(tmp_path)
    )
    built = surrogate_of(get_method(cfg.method, **method_options(cfg))).config
    assert cfg.resolved_kd_config() == built.model_dump(mode="json")
    assert cfg.identity()["kd_config"]["seed"] == 3


def test_the_committed_study_is_found_and_a_setting_named_as_auto_resolves_is_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ax_kernel_discovery.runner import UserInputError, make_run_config
    from ax_kernel_discovery.study.protocol import study_configs

    out = str(tmp_path)
    named = {"tie_break": "cost", "criterion": "prequential"}  # what "auto" resolves to
    _finished(
        make_run_config(problem="rover60", method="kd", budget=30, out=out, kd_config=named), 30
    )
    make_run_config(problem="rover60", method="kd", budget=30, out=out)  # the same run
    with pytest.raises(UserInputError, match='kd_config.tie_break: "cost" -> "none"'):
        make_run_config(
            problem="rover60", method="kd", budget=30, out=out, kd_config={"criterion": "lbo_crps"}
        )
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    assert len(study_configs()) == 120  # the committed study's files: no refusal
