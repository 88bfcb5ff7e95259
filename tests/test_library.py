"""Kernel libraries: export from a run, save/load, a fixed kernel elsewhere, seeding, tampering."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from ax.api import Client
from ax.api.configs import RangeParameterConfig
from ax.generators.torch.botorch_modular.surrogate import SurrogateSpec
from pydantic import ValidationError

from ax_kernel_discovery import (
    KernelDiscoveryConfig,
    KernelDiscoverySurrogate,
    KernelLibraryError,
    LibraryKernel,
    export_kernels,
    fixed_kernel_generation_strategy,
    kernel_discovery_generation_strategy,
    load_kernels,
    model_config_for,
    save_kernels,
    surrogate_of,
)
from ax_kernel_discovery.benchmarks.synthetic import Ackley, Branin, Hartmann6
from ax_kernel_discovery.cli import EXIT_USER_ERROR, main
from ax_kernel_discovery.expression import leaf
from ax_kernel_discovery.library import LIBRARY_VERSION, get_kernel
from ax_kernel_discovery.population import Population, base_candidate
from ax_kernel_discovery.runner import UserInputError, make_run_config
from ax_kernel_discovery.surrogate.discovered import DiscoveredKernel

torch.set_num_threads(1)

FAST = {"num_restarts": 1, "raw_samples": 32, "maxiter": 20}
CORPUS = Path(__file__).parent / "kernel_corpus"


def _client(problem: Any, strategy: Any) -> Client:
    client = Client(random_seed=0)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
            for i in range(problem.dim)
        ],
        name=problem.name,
    )
    client.configure_optimization("-f")
    client.set_generation_strategy(strategy)
    return client


def _run(client: Client, problem: Any, strategy: Any, num_sobol: int, rounds: int, q: int) -> None:
    def evaluate(trials: dict[int, Any]) -> None:
        for index, params in trials.items():
            x = np.array([[params[f"x{i}"] for i in range(problem.dim)]])
            client.complete_trial(index, raw_data={"f": float(problem.evaluate(x)[0])})

    evaluate(client.get_next_trials(max_trials=num_sobol))
    for _ in range(rounds):
        strategy.current_generator_run_limit()  # move past the spent Sobol node first
        trials = client.get_next_trials(max_trials=q)
        assert len(trials) == q
        evaluate(trials)


@pytest.fixture(scope="module")
def discovery_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A tiny kernel-discovery Client run on 10-D Hartmann-6, saved to JSON."""
    folder = tmp_path_factory.mktemp("discovery")
    problem = Hartmann6(dim=10)
    config = KernelDiscoveryConfig(population_size=5, proposals_per_round=2, fit_maxiter=20)
    strategy = kernel_discovery_generation_strategy(config, num_sobol=6, **FAST)
    client = _client(problem, strategy)
    _run(client, problem, strategy, num_sobol=6, rounds=2, q=2)
    path = folder / "run.json"
    client.save_to_json_file(str(path))
    return {"client": client, "surrogate": surrogate_of(strategy), "path": path, "folder": folder}


def test_export_from_surrogate_client_and_file_agree(discovery_run: dict[str, Any]) -> None:
    from_surrogate = export_kernels(discovery_run["surrogate"], top=3)
    from_client = export_kernels(discovery_run["client"], top=3)
    from_file = export_kernels(discovery_run["path"], top=3)
    assert len(from_surrogate) == 3
    definition = [(k.name, k.formula, k.spec, k.code, k.score) for k in from_surrogate]
    assert [(k.name, k.formula, k.spec, k.code, k.score) for k in from_client] == definition
    assert [(k.name, k.formula, k.spec, k.code, k.score) for k in from_file] == definition
    scores = [k.score for k in from_surrogate]
    assert all(s is not None for s in scores) and scores == sorted(scores)  # best first
    best = discovery_run["surrogate"].population.best()
    assert from_surrogate[0].name == best.name and from_surrogate[0].formula == best.formula
    first = from_file[0]
    assert (first.criterion, first.dim, first.n_observations) == ("prequential", 10, 8)
    assert first.experiment == str(discovery_run["path"])
    assert from_client[0].experiment == "hartmann6_10"
    assert first.origin == best.origin and first.parents == best.parents
    with pytest.raises(ValueError, match="top must be >= 1"):
        export_kernels(discovery_run["surrogate"], top=0)
    # a result JSON of `ax-kernel-discovery run` exports through its checkpoint
    result = discovery_run["folder"] / "result.json"
    result.write_text(json.dumps({"format": 1, "checkpoint_path": str(discovery_run["path"])}))
    assert [k.name for k in export_kernels(result, top=3)] == [k.name for k in from_file]
    with pytest.raises(ValueError, match="holds no KernelDiscoverySurrogate"):
        export_kernels(_client(Branin(dim=3), fixed_kernel_generation_strategy(from_file[0])))


def test_a_kernel_travels_to_a_second_experiment_and_seeds_a_third(
    discovery_run: dict[str, Any], tmp_path: Path
) -> None:
    library = save_kernels(export_kernels(discovery_run["path"], top=2), tmp_path / "k.json")
    kernels = load_kernels(library)
    kernel = kernels[0]

    # a second Client experiment, on another problem and dimension, with that one kernel
    problem = Branin(dim=20)
    strategy = fixed_kernel_generation_strategy(kernel, num_sobol=5, **FAST)
    client = _client(problem, strategy)
    _run(client, problem, strategy, num_sobol=5, rounds=1, q=2)
    assert len(client._experiment.trials) == 7
    fitted = surrogate_of(strategy).model.covar_module
    assert isinstance(fitted, DiscoveredKernel) and fitted.candidate.name == kernel.name
    assert fitted.candidate.spec == kernel.spec and fitted.candidate.code == kernel.code
    bo_trial = client._experiment.trials[6]
    assert bo_trial.generator_runs[0]._generation_node_name == "MBM"
    assert bo_trial.generator_runs[0]._generator_key == f"Fixed-{kernel.name}"
    client.save_to_json_file(str(tmp_path / "fixed.json"))  # Ax's storage keeps it
    reloaded = Client.load_from_json_file(str(tmp_path / "fixed.json"))
    assert len(reloaded._experiment.trials) == 7

    # a third run whose population starts from the library alone
    config = KernelDiscoveryConfig(  # no guard round: the one BO round chooses a member
        start_kernels=library,
        keep_start_set=False,
        population_size=5,
        proposals_per_round=0,
        guard_rounds=0,
    )
    problem3 = Ackley(dim=20, effective_dim=5)
    strategy3 = kernel_discovery_generation_strategy(config, num_sobol=5, **FAST)
    client3 = _client(problem3, strategy3)
    _run(client3, problem3, strategy3, num_sobol=5, rounds=1, q=2)
    surrogate = surrogate_of(strategy3)
    record = surrogate.history[0]
    names = [k.name for k in kernels]
    assert set(record.scores) == set(names) and record.chosen in names
    assert {m.origin for m in surrogate.population} == {"library"}
    assert [c.name for c in surrogate.population.start] == names


def test_start_kernels_on_top_of_the_start_set(discovery_run: dict[str, Any]) -> None:
    kernels = export_kernels(discovery_run["surrogate"], top=3)
    surrogate = KernelDiscoverySurrogate(KernelDiscoveryConfig(start_kernels=kernels))
    names = surrogate.population.names
    assert names[:5] == ["RBF", "Matern52", "RQ", "BOCK", "SL"]
    # a start kernel that survived the run is taken once; new ones join with origin library
    new = [k.name for k in kernels if k.name not in names[:5]]
    assert names[5:] == new
    assert all(surrogate.population.get(n).origin == "library" for n in new)
    # the config stores the kernels themselves (checksummed), so it travels with the run
    dumped = surrogate.config.model_dump(mode="json")
    assert KernelDiscoveryConfig.model_validate(dumped).start_kernels == dumped["start_kernels"]
    assert all("sha256" in entry for entry in dumped["start_kernels"])
    with pytest.raises(ValueError, match="keep_start_set=False needs start_kernels"):
        KernelDiscoveryConfig(keep_start_set=False, start_kernels=None)


def test_a_leaf_by_name_joins_the_start_set() -> None:
    surrogate = KernelDiscoverySurrogate(KernelDiscoveryConfig(start_kernels=["saas"]))
    assert surrogate.population.names == ["RBF", "Matern52", "RQ", "BOCK", "SL", "SAAS"]
    (entry,) = surrogate.config.start_kernels or []
    assert entry["spec"] == {"kernel": "saas", "warp": "identity", "ard": True}
    assert "tau / l_d^2 ~ HC(1)" in entry["formula"]
    with pytest.raises(ValidationError, match="expected FILE, FILE:NAME or a leaf .*saas"):
        KernelDiscoveryConfig(start_kernels=["sass"])


def test_library_kernels_have_the_patience_of_start_kernels() -> None:
    start = [
        base_candidate("rbf"),
        LibraryKernel.from_candidate(base_candidate("rq", origin="offline")).candidate,
    ]
    pop = Population(start, patience=2)
    assert pop.get("RQ").origin == "library"
    assert not pop.strike("RQ") and pop.strike("RQ")  # dropped at the second strike
    pop.add(LibraryKernel.from_candidate(base_candidate("sl")).candidate, round_index=1)
    assert pop.strike("SL")  # not a start member: dropped at once


def test_round_trip_with_a_code_kernel(tmp_path: Path) -> None:
    spec_kernel = LibraryKernel(
        name="rbf_tanh",
        origin="offline",
        spec=leaf("rbf", warp="tanh"),
        score=0.12,
        criterion="loo_crps",
        dim=12,
    )
    code_kernel = LibraryKernel(
        name="llm_hand_rbf",
        formula="exp(-|x - x'|^2_l / 2)",
        origin="discovery",
        parents=("RBF",),
        code=(CORPUS / "valid_rbf.py").read_text(),
        class_name="HandRBFKernel",
        dim=8,
    )
    path = save_kernels([spec_kernel, code_kernel], tmp_path / "lib" / "kernels.json")
    data = json.loads(path.read_text())
    assert data["version"] == LIBRARY_VERSION and len(data["kernels"]) == 2
    loaded = load_kernels(path)  # validates: the code kernel in the sandboxed child process
    assert loaded == [spec_kernel, code_kernel]
    config = model_config_for(loaded[1])
    assert config.name == "llm_hand_rbf" and config.covar_module_class is DiscoveredKernel
    SurrogateSpec(model_configs=[model_config_for(f"{path}:rbf_tanh")])  # a user's own spec
    kernel = DiscoveredKernel(config.covar_module_options["candidate"], ard_num_dims=3)
    x = torch.rand(4, 3, dtype=torch.float64)
    assert kernel.double()(x, x).to_dense().shape == (4, 4)
    assert get_kernel(f"{path}:llm_hand_rbf") == code_kernel


def _write(path: Path, kernels: list[dict[str, Any]], **top: Any) -> Path:
    data = {"format": "ax-kernel-discovery kernel library", "version": 1, "kernels": kernels}
    path.write_text(json.dumps({**data, **top}))
    return path


def _entry(**fields: Any) -> dict[str, Any]:
    kernel = LibraryKernel(**{"name": "k", "origin": "offline", "spec": leaf("rbf"), **fields})
    return kernel.entry()


def test_an_edited_formula_with_a_recomputed_checksum_is_refused(tmp_path: Path) -> None:
    """The formula of an expression tree is derived from the tree: an edit is caught."""
    kernel = LibraryKernel(name="k", origin="offline", spec=leaf("rbf", warp="tanh"))
    assert kernel.formula.startswith("k(x, x') = s * RBF[u = tanh(")  # derived
    entry = kernel.entry()
    entry["formula"] = "k(x, x') = s * MATERN52[u = x]"  # edited ...
    entry["sha256"] = hashlib.sha256(  # ... and the checksum recomputed
        json.dumps({k: v for k, v in entry.items() if k != "sha256"}, sort_keys=True).encode()
    ).hexdigest()
    with pytest.raises(KernelLibraryError, match=r"formula does not match its expression tree"):
        load_kernels(_write(tmp_path / "f.json", [entry]), validate=False)
    noted = {**kernel.entry(), "formula": kernel.formula + "   [idea: squash the inputs]"}
    noted.pop("sha256")
    assert LibraryKernel.model_validate(noted).formula.endswith("[idea: squash the inputs]")


def test_a_tampered_or_malformed_file_names_the_entry(tmp_path: Path) -> None:
    good = _entry(name="good")
    edited = _entry(name="edited")
    edited["score"] = -1.0  # changed after export
    path = _write(tmp_path / "a.json", [good, edited])
    with pytest.raises(KernelLibraryError, match=r"entry 1 \('edited'\) does not match its sha256"):
        load_kernels(path)

    unsigned = {k: v for k, v in _entry(name="unsigned").items() if k != "sha256"}
    with pytest.raises(KernelLibraryError, match=r"entry 0 \('unsigned'\) has no sha256"):
        load_kernels(_write(tmp_path / "b.json", [unsigned]))

    missing = _entry(name="half")
    del missing["origin"]
    with pytest.raises(KernelLibraryError, match=r"entry 0 \('half'\) is malformed: origin"):
        load_kernels(_write(tmp_path / "c.json", [missing]))

    bad_tree = {"name": "tree", "formula": "f", "origin": "offline", "spec": {"kernel": "evil"}}
    with pytest.raises(
        KernelLibraryError, match=r"entry 0 \('tree'\) is malformed.*unknown kernel"
    ):
        load_kernels(_write(tmp_path / "d.json", [{**bad_tree, "sha256": "0" * 64}]))

    with pytest.raises(KernelLibraryError, match=r"entry 1 \('good'\): name used twice"):
        load_kernels(_write(tmp_path / "e.json", [good, good]))
    with pytest.raises(KernelLibraryError, match="unsupported kernel library version 2"):
        load_kernels(_write(tmp_path / "f.json", [good], version=2))
    with pytest.raises(KernelLibraryError, match="not a kernel library"):
        load_kernels(_write(tmp_path / "g.json", [good], format="something else"))
    (tmp_path / "h.json").write_text("{not json")
    with pytest.raises(KernelLibraryError, match="invalid JSON"):
        load_kernels(tmp_path / "h.json")


def test_hostile_code_with_a_valid_checksum_fails_sandboxed_validation(tmp_path: Path) -> None:
    hostile = LibraryKernel(
        name="sneaky",
        formula="exp(-|x - x'|^2)",
        origin="discovery",
        code="import os\nos.system('echo hi')\n" + (CORPUS / "valid_rbf.py").read_text(),
        dim=5,
    )
    path = save_kernels([hostile], tmp_path / "hostile.json")
    assert load_kernels(path, validate=False)[0].name == "sneaky"  # structure and checksum pass
    with pytest.raises(KernelLibraryError, match=r"kernel 'sneaky': its kernel source failed"):
        load_kernels(path)
    with pytest.raises(KernelLibraryError, match="'sneaky'"):
        fixed_kernel_generation_strategy(f"{path}:sneaky")
    # refused when its surrogate is built, before any evaluation (not at the first BO
    # round); building the config runs no kernel code
    config = KernelDiscoveryConfig(start_kernels=path)
    message = r"start_kernels: kernel 'sneaky': its kernel source failed validation"
    with pytest.raises(KernelLibraryError, match=message):
        KernelDiscoverySurrogate(config)
    with pytest.raises(KernelLibraryError, match=message):
        kernel_discovery_generation_strategy({"start_kernels": [f"{path}:sneaky"]})
    with pytest.raises(UserInputError, match="invalid kd_config: " + message):
        make_run_config(problem="rover60", method="kd", kd_config={"start_kernels": str(path)})


def test_kernel_references(tmp_path: Path) -> None:
    one = save_kernels([_library_kernel("only")], tmp_path / "one.json")
    two = save_kernels([_library_kernel("a"), _library_kernel("b")], tmp_path / "two.json")
    assert get_kernel(str(one)).name == "only"
    assert get_kernel(f"{two}:b").name == "b"
    with pytest.raises(KernelLibraryError, match="holds 2 kernels: name one"):
        get_kernel(str(two))
    with pytest.raises(KernelLibraryError, match="no kernel named 'c'; it holds: a, b"):
        get_kernel(f"{two}:c")
    with pytest.raises(KernelLibraryError, match="no such kernel library"):
        get_kernel(str(tmp_path / "nope.json:a"))
    # evolved kernels are named like off_r9_3:(bock+sl): the file is the prefix that exists
    colon = save_kernels([_library_kernel("off_r1_0:(rbf+sl)")], tmp_path / "c.json")
    assert get_kernel(f"{colon}:off_r1_0:(rbf+sl)").name == "off_r1_0:(rbf+sl)"


def _library_kernel(name: str) -> LibraryKernel:
    return LibraryKernel(name=name, origin="offline", spec=leaf("rbf"))


def test_cli_export_and_run_fixed(
    discovery_run: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    library = tmp_path / "kernels.json"
    assert main(["export", str(discovery_run["path"]), "--top", "2", "--out", str(library)]) == 0
    kernels = load_kernels(library, validate=False)
    printed = capsys.readouterr().out
    assert len(kernels) == 2 and f"--kernel {library}:{kernels[0].name}" in printed
    assert all(f"  {k.formula}\n" in printed for k in kernels)  # as the file holds them
    name = kernels[0].name
    out = tmp_path / "results"
    argv = ["run", "--problem", "branin100", "--method", "fixed", "--kernel", f"{library}:{name}"]
    argv += ["--budget", "8", "--num-sobol", "6", "--batch", "2", "--num-restarts", "1"]
    argv += ["--raw-samples", "32", "--maxiter", "20", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    (result_path,) = out.glob("branin100__fixed-*__seed0.json")
    result = json.loads(result_path.read_text())
    assert result["status"] == "complete" and result["n_evaluations"] == 8
    assert result["method"] == f"fixed:{name}"
    assert result["config"]["method_options"]["kernel"]["formula"] == kernels[0].formula
    # bad input is one error line
    capsys.readouterr()
    base = ["run", "--problem", "branin100", "--out", str(out)]
    assert main([*base, "--method", "fixed"]) == EXIT_USER_ERROR
    assert "needs a kernel: --kernel" in capsys.readouterr().err
    assert main([*base, "--method", "fixed", "--kernel", f"{library}:nope"]) == EXIT_USER_ERROR
    assert "no kernel named 'nope'" in capsys.readouterr().err
    assert main([*base, "--method", "rbf", "--kernel", str(library)]) == EXIT_USER_ERROR
    assert "--kernel goes with --method fixed" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "missing.json")]) == EXIT_USER_ERROR


def test_a_huge_file_is_refused_by_its_size_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ax_kernel_discovery import KernelDiscoveryConfig
    from ax_kernel_discovery.library_format import get_kernel

    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:  # a sparse 200 MB file: nothing is written to disk
        f.truncate(200 * 2**20)

    def no_reading(self: Path, *args: object, **kwargs: object) -> str:
        raise AssertionError(f"{self} was read")

    monkeypatch.setattr(Path, "read_text", no_reading)
    monkeypatch.setattr(Path, "read_bytes", no_reading)
    message = r"huge.json: 200 MB is too large for a kernel library \(at most 16 MB"
    with pytest.raises(KernelLibraryError, match=message):
        load_kernels(huge)
    with pytest.raises(KernelLibraryError, match=message):
        get_kernel(f"{huge}:k")
    with pytest.raises(ValueError, match=message):
        KernelDiscoveryConfig(start_kernels=str(huge))
