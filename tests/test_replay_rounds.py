"""benchmarks/replay_rounds.py: recorded study rounds, extracted from checkpoints and replayed."""

from __future__ import annotations

import json
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.sampling import SobolQMCNormalSampler

from ax_kernel_discovery import KernelDiscoverySurrogate
from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.runner.run_config import METRIC
from ax_kernel_discovery.surrogate.acquisition import KernelDiscoveryAcquisition
from ax_kernel_discovery.surrogate.new_rows_qlognei import NewRowsqLogNEI
from ax_kernel_discovery.surrogate.state import decode_tensors

ROOT = Path(__file__).resolve().parents[1]
REPLAY = ROOT / "benchmarks" / "results" / "replay"
PROBLEMS = ("rover100", "hartmann6_100", "lasso_dna", "svm")


def test_arrays_round_trip_exactly(benchmark_script: Callable[[str], ModuleType]) -> None:
    rr = benchmark_script("replay_rounds")
    a = np.random.default_rng(0).random((7, 3))
    a[0, 0] = 1e-300
    np.testing.assert_array_equal(rr.decode_array(rr.encode_array(a)), a)


def test_committed_fixtures_are_rounds_of_the_four_problems(
    benchmark_script: Callable[[str], ModuleType],
) -> None:
    rr = benchmark_script("replay_rounds")
    fixtures = [rr.Fixture.load(p) for p in sorted(REPLAY.glob("*.json"))]
    assert {f.problem for f in fixtures} == set(PROBLEMS)
    for f in fixtures:
        assert f.path is not None and f.path.stat().st_size < 450_000, f.name
        n, dim = f.data["n"], f.data["dim"]
        assert f.X.shape == (n, dim) and f.Y.shape == (n,) and np.isfinite(f.Y).all()
        lower, upper = np.array(f.data["lower"]), np.array(f.data["upper"])
        assert ((f.X >= lower) & (f.X <= upper)).all()
        ds = f.dataset()  # standardized as Ax's StandardizeY does (ddof = 1)
        assert float(ds.Y.mean()) == pytest.approx(0.0, abs=1e-12)
        assert float(ds.Y.std()) == pytest.approx(1.0)
        # the state is the one the round started from: one record per earlier BO round
        surrogate = KernelDiscoverySurrogate(state=f.data["state"])
        seen = [h.n for h in surrogate.history if h.outcome == METRIC]
        assert len(seen) == f.data["round"] - 1 and (not seen or seen[-1] < n)
        chosen = f.chosen_candidate()
        if chosen is not None:
            assert chosen.name == f.data["recorded"]["chosen"]
            params = decode_tensors(f.data["chosen"]["parameters"])
            assert all(torch.isfinite(v).all() for v in params.values())


def test_a_replayed_acquisition_uses_the_recorded_kernel_and_parameters(
    benchmark_script: Callable[[str], ModuleType],
) -> None:
    rr = benchmark_script("replay_rounds")
    torch.set_num_threads(1)
    fixture = rr.Fixture.load(REPLAY / "rover100__seed1__r3.json")
    candidate = fixture.chosen_candidate()
    params = decode_tensors(fixture.data["chosen"]["parameters"])
    surrogate = rr.fitted_surrogate(fixture, candidate, params)
    model = surrogate.model
    assert model.covar_module.candidate.name == candidate.name
    for name, value in model.named_parameters():
        torch.testing.assert_close(value.detach().float(), params[name])
    options = rr.optimizer_options(1, 8, True, 2)
    timing = rr.time_fixture(fixture, 1, {}, options, parts=("acquisition",))
    assert set(timing.seconds) == {"kd_acq", "ax_acq"}
    assert timing.round("kd") == timing.median("kd_acq") > 0
    assert dict(timing.failures) == {"kd": 0, "ax": 0}


@pytest.mark.parametrize(
    "name", ["svm__seed0__r6", "lasso_dna__seed0__r6", "hartmann6_100__seed0__r9"]
)
def test_new_rows_equal_botorchs_qlognei_on_recorded_rounds(
    benchmark_script: Callable[[str], ModuleType], name: str
) -> None:
    """kd's default acquisition function against BoTorch's on a recorded round's model
    (a warped composite, a warped SL product, a Kumaraswamy-warped Matern), with pending
    points and the pruned baseline: the same values and gradients to rounding."""
    rr = benchmark_script("replay_rounds")
    torch.set_num_threads(1)
    fixture = rr.Fixture.load(REPLAY / f"{name}.json")
    params = decode_tensors(fixture.data["chosen"]["parameters"])
    model = rr.fitted_surrogate(fixture, fixture.chosen_candidate(), params).model
    train = model.train_inputs[0]
    generator = torch.Generator().manual_seed(0)
    pending = torch.rand(7, train.shape[-1], generator=generator, dtype=train.dtype)
    acqfs = []
    for cls in (qLogNoisyExpectedImprovement, NewRowsqLogNEI):
        torch.manual_seed(5)  # the baseline's pruning draws from torch's generator
        acqfs.append(
            cls(
                model,
                X_baseline=train,
                sampler=SobolQMCNormalSampler(torch.Size([128]), seed=1),
                X_pending=pending,
                prune_baseline=True,
            )
        )
    botorch, new_rows = acqfs
    assert new_rows._new_rows is not None  # computed from the new rows, not BoTorch's path
    torch.testing.assert_close(new_rows.X_baseline, botorch.X_baseline, rtol=0, atol=0)
    for p in model.parameters():
        p.requires_grad_(False)
    for q in (1, 15):
        X = torch.rand(4, q, train.shape[-1], generator=generator, dtype=train.dtype)
        X.requires_grad_(True)
        values = [acqf(X) for acqf in acqfs]
        grads = [torch.autograd.grad(v.sum(), X)[0] for v in values]
        torch.testing.assert_close(values[1], values[0], rtol=1e-9, atol=1e-12)
        torch.testing.assert_close(grads[1], grads[0], rtol=1e-7, atol=1e-10)


def test_a_replayed_round_acquires_through_the_replayed_choice_with_either_acqf(
    benchmark_script: Callable[[str], ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    rr = benchmark_script("replay_rounds")
    torch.set_num_threads(1)
    fixture = rr.Fixture.load(REPLAY / "rover100__seed1__r3.json")
    through: list[Any] = []
    acquire = rr._acquire

    def spy(fixture: Any, surrogate: Any, options: Any, seed: int, acqf: Any) -> Any:
        through.append((type(surrogate).__name__, acqf.__name__))
        return acquire(fixture, surrogate, options, seed, acqf)

    monkeypatch.setattr(rr, "_acquire", spy)
    options = rr.optimizer_options(1, 8, True, 2)
    config = {"background_fits": "off", "fit_maxiter": 3}
    timing = rr.time_fixture(fixture, 1, config, options, through="replayed", acqf="new_rows")
    # kd's own surrogate hands the acquisition its model; Ax's default a plain Surrogate
    assert sorted(through) == [
        ("KernelDiscoverySurrogate", "NewRowsqLogNEI"),
        ("Surrogate", "NewRowsqLogNEI"),
    ]
    assert timing.replay_choice is not None and timing.round("kd") > 0
    # by default each method has its own: kd's config.acquisition, Ax's BoTorch's qLogNEI
    for kd_acquisition, kd_acqf in [
        ("new_rows", "NewRowsqLogNEI"),
        ("botorch", "qLogNoisyExpectedImprovement"),
    ]:
        through.clear()
        rr.time_fixture(fixture, 1, {**config, "acquisition": kd_acquisition}, options)
        assert sorted(through) == sorted(
            [
                ("Surrogate", "qLogNoisyExpectedImprovement"),  # Ax's default
                ("Surrogate", kd_acqf),  # the recorded kernel, kd's acquisition function
            ]
        )


def _copy_checkpoint(cfg_out: Path, run_id: str, store: Path) -> Any:
    def on_round(record: dict[str, Any]) -> None:
        src = cfg_out / "checkpoints" / f"{run_id}.json"
        shutil.copy(src, store / f"{run_id}.r{record['round']}.json")

    return on_round


@pytest.mark.slow
def test_extract_builds_the_round_from_checkpoints(
    benchmark_script: Callable[[str], ModuleType], tmp_path: Path
) -> None:
    from ax_kernel_discovery.runner import run_experiment

    rr = benchmark_script("replay_rounds")
    out, store = tmp_path / "run", tmp_path / "store"
    store.mkdir()
    run_id = "branin100__kd__seed0"
    result = run_experiment(
        "branin100",
        "kd",
        seed=0,
        budget=14,
        batch=3,
        num_sobol=8,
        out=str(out),
        num_restarts=1,
        raw_samples=8,
        maxiter=5,
        kd_config={"proposals_per_round": 1, "fit_maxiter": 5},
        on_round=_copy_checkpoint(out, run_id, store),
    )
    rounds = [r for r in result["rounds"] if r["kind"] == "bo"]
    r2 = rounds[1]
    with pytest.raises(SystemExit, match="no checkpoint holds the state before round"):
        rr.extract(out / f"{run_id}.json", [store / f"{run_id}.r2.json"], 2, None)
    fixture = rr.extract(
        out / f"{run_id}.json",
        [store / f"{run_id}.r1.json", store / f"{run_id}.r2.json"],
        2,
        tmp_path / "fx.json",
    )
    f = rr.Fixture.load(tmp_path / "fx.json")
    assert f.data == json.loads(json.dumps(fixture))
    assert f.data["n"] == r2["n_before"] == 11 and f.X.shape == (11, 100)
    values = [v for v in result["values"][:11]]
    np.testing.assert_allclose(f.Y, values)
    assert f.data["chosen"]["name"] == r2["chosen"]
    assert f.data["chosen"]["parameters_from"] == "run"
    # the replayed round starts from the recorded state and chooses as the run did
    t = rr.time_fixture(f, 1, "run", rr.optimizer_options(1, 8, True, 5), parts=("fit",))
    assert t.replay_choice == r2["chosen"]
    # without the checkpoint after the round, the chosen kernel is refitted
    refit = rr.extract(out / f"{run_id}.json", [store / f"{run_id}.r1.json"], 2, None)
    assert refit["chosen"]["parameters_from"] in ("refit", "run")


def test_lbfgs_through_a_kumaraswamy_warp_ends_without_failure(
    benchmark_script: Callable[[str], ModuleType],
) -> None:
    """Regression (issue 21): a recorded acquisition sub-problem that failed in L-BFGS-B.

    The model is (rbf+rbf@kumaraswamy) fitted on rover100's round-9 data; from these
    initial conditions, L-BFGS-B ended with status 2 (ABNORMAL line search) while the
    Kumaraswamy warp clamped its inputs (flat edges beside steep slopes).
    """
    from botorch.exceptions.warnings import OptimizationWarning
    from botorch.generation.gen import gen_candidates_scipy

    rr = benchmark_script("replay_rounds")
    torch.set_num_threads(1)
    case = json.loads((ROOT / "tests" / "data" / "kumaraswamy_lbfgs_case.json").read_text())
    fixture = rr.Fixture.load(REPLAY / case["fixture"])
    candidate = KernelCandidate.model_validate(case["candidate"])
    surrogate = rr.fitted_surrogate(fixture, candidate, decode_tensors(case["parameters"]))
    acquisition = KernelDiscoveryAcquisition(
        surrogate=surrogate,
        search_space_digest=fixture.digest(),
        torch_opt_config=rr.TorchOptConfig(objective_weights=fixture.objective_weights()),
        botorch_acqf_class=rr.qLogNoisyExpectedImprovement,
    )
    bounds = torch.tensor([fixture.data["lower"], fixture.data["upper"]], dtype=torch.float64)
    ic = torch.from_numpy(rr.decode_array(case["initial_conditions"]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gen_candidates_scipy(
            initial_conditions=ic,
            acquisition_function=acquisition.acqf,
            lower_bounds=bounds[0],
            upper_bounds=bounds[1],
            options=case["options"],
        )
    failures = [str(w.message) for w in caught if issubclass(w.category, OptimizationWarning)]
    assert not failures, failures


def _study_of(fixtures: list[Any], folder: Path) -> None:
    """A study folder whose kd run files recorded the fixtures' rounds."""
    folder.mkdir(exist_ok=True)
    runs: dict[str, dict[str, Any]] = {}
    for f in sorted(fixtures, key=lambda f: -f.data["n"]):  # values: the longest run's
        d = f.data
        run = runs.setdefault(
            f"{d['problem']}__kd__seed{d['seed']}.json",
            {"rounds": [], "config": {"kd_config": d["kd_config"]}, "values": list(f.Y)},
        )
        run["rounds"].append(
            {"round": d["round"], "n_before": d["n"], "chosen": d["recorded"]["chosen"]}
        )
    for name, result in runs.items():
        (folder / name).write_text(json.dumps(result))


def test_fixtures_are_checked_against_the_study_and_limited_per_problem(
    benchmark_script: Callable[[str], ModuleType], tmp_path: Path
) -> None:
    rr = benchmark_script("replay_rounds")
    fixtures = [rr.Fixture.load(p) for p in sorted(REPLAY.glob("rover100__seed1__*.json"))]
    assert [f.data["round"] for f in fixtures] == [3, 6]
    _study_of(fixtures, tmp_path / "study")
    kept = rr.select_fixtures(fixtures[::-1], tmp_path / "study", rounds=1)
    assert [f.name for f in kept] == ["rover100__seed1__r3"]
    assert len(rr.select_fixtures(fixtures, tmp_path / "study")) == 2
    # a study whose run did not record round 6
    _study_of(fixtures[:1], tmp_path / "short")
    with pytest.raises(SystemExit, match="not round 6 of .*rover100__kd__seed1.json"):
        rr.select_fixtures(fixtures, tmp_path / "short", rounds=1)
    # a run whose objective values differ is not the fixture's run
    run = tmp_path / "short" / "rover100__kd__seed1.json"
    result = json.loads(run.read_text())
    result["values"][0] += 1.0
    run.write_text(json.dumps(result))
    with pytest.raises(SystemExit, match="other values"):
        rr.select_fixtures(fixtures[:1], tmp_path / "short")
    with pytest.raises(SystemExit, match="no run rover100__kd__seed1.json"):
        rr.select_fixtures(fixtures[:1], tmp_path)
    with pytest.raises(SystemExit, match="--rounds must be at least 1"):
        rr.select_fixtures(fixtures, rounds=0)


@pytest.mark.slow  # a benchmark script's feature: replays every kernel of a round twice
def test_replay_agreement_compares_a_setting_with_the_default_on_a_recorded_round(
    benchmark_script: Callable[[str], ModuleType],
) -> None:
    rr = benchmark_script("replay_rounds")
    agreement = benchmark_script("replay_agreement")
    fixture = rr.Fixture.load(REPLAY / "svm__seed0__r3.json")
    row = agreement.compare(fixture, {"fit_maxiter": 1}, repeats=1)
    # the default's choice: the run (before the cost tie rule) chose (rbf+poly2@tanh); the
    # unbounded tie rule took RQ, within one paired standard error of it on the batches both
    # forecast; the bounded rule (issue 52 item 13: the lead's whole window, at most
    # TIE_BOUND a point) keeps the best held-out score
    assert row["default"] == "off_r1_1:(rbf+poly2@tanh)"
    assert row["t_default"] > 0 and row["t_variant"] > 0
    # one L-BFGS step instead of fits to convergence: the new kernels' fits are worse, the
    # choice (made from last round's forecasts under the prequential criterion) is not
    assert row["same"] and row["new_fit_scores"]
    assert all(variant != default for default, variant in row["new_fit_scores"].values())


def test_the_device_option_moves_data_weights_and_kd_config_there(
    benchmark_script: Callable[[str], ModuleType],
) -> None:
    rr = benchmark_script("replay_rounds")
    path = REPLAY / "svm__seed0__r3.json"
    fixture = rr.Fixture.load(path)
    assert fixture.device == "cpu"  # the default
    device = "cuda" if torch.cuda.is_available() else "cpu"
    fixture = rr.Fixture.load(path, device)
    ds = fixture.dataset()
    assert ds.X.device.type == ds.Y.device.type == device
    assert fixture.objective_weights().device.type == device
    # kd's configuration follows the fixture's device, over --kd-config's
    surrogate = rr.replay_surrogate(fixture, {"device": "auto", "fit_maxiter": 3})
    assert surrogate.config.device == device and surrogate.config.fit_maxiter == 3
    surrogate.close()
    assert rr.device_label("cpu") == "cpu"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without CUDA")
def test_time_with_cuda_but_no_gpu_stops_before_any_timing(
    benchmark_script: Callable[[str], ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    from ax_kernel_discovery.devices import DeviceUnavailableError

    rr = benchmark_script("replay_rounds")
    with pytest.raises(DeviceUnavailableError, match="CUDA is not available"):
        rr.main(["time", str(REPLAY / "svm__seed0__r3.json"), "--device", "cuda"])
    assert "| fixture |" not in capsys.readouterr().out


def test_humanoid_scale_runs_a_small_round_on_the_device_it_is_given(
    benchmark_script: Callable[[str], ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    hs = benchmark_script("humanoid_scale")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    hs.main(
        ["--n", "30", "--dim", "12", "--fit-maxiter", "1", "--proposals", "1", "--device", device]
    )
    out = capsys.readouterr().out
    assert f"device {device}" in out
    assert f"chosen model's tensors on: ['{device}" in out
    assert ("peak GPU memory allocated" in out) == (device == "cuda")
