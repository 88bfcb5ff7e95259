"""Runner: a tiny sweep through run + report, resume after an interruption, bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from ax_kernel_discovery.runner import (
    RunConfig,
    UserInputError,
    make_run_config,
    run_experiment,
)
from ax_kernel_discovery.runner.report import load_results, rank_table, write_report
from ax_kernel_discovery.runner.sweep import sweep, sweep_configs

torch.set_num_threads(1)

CHEAP = {"num_restarts": 2, "raw_samples": 32, "maxiter": 20}
#: Runner mechanics, not kernel quality: the start set alone (no SAAS member), short fits.
KD_SMALL = {
    "population_size": 3,
    "proposals_per_round": 1,
    "fit_maxiter": 10,
    "start_kernels": None,
}


@pytest.fixture(scope="module")
def tiny_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    out = tmp_path_factory.mktemp("sweep")
    settings = {"budget": 30, "batch": 5, "out": str(out), "workers": 1, **CHEAP}
    # kd on one seed, the cheap rbf on two (the seeds' designs differ): one folder
    summaries = sweep(["rover60"], ["kd", "rbf"], [0], kd_config=KD_SMALL, **settings)
    return out, summaries + sweep(["rover60"], ["rbf"], [1], **settings)


def test_tiny_sweep_files(tiny_sweep: tuple[Path, list[dict]]) -> None:
    out, summaries = tiny_sweep
    assert sorted(s["run_id"] for s in summaries) == [
        "rover60__kd__seed0",
        "rover60__rbf__seed0",
        "rover60__rbf__seed1",
    ]
    assert all(s["status"] == "complete" for s in summaries)
    for s in summaries:
        assert (out / f"{s['run_id']}.json").is_file()
        assert (out / "checkpoints" / f"{s['run_id']}.json").is_file()
    r = json.loads((out / "rover60__kd__seed0.json").read_text())
    assert r["status"] == "complete" and r["n_evaluations"] == 30
    assert len(r["values"]) == len(r["best_so_far"]) == 30
    assert all(v is not None for v in r["values"])
    assert r["best_so_far"] == list(np.maximum.accumulate(r["values"]))  # rover: maximize
    assert r["best_value"] == max(r["values"]) == r["values"][r["best_trial"]]
    assert [x["q"] for x in r["rounds"]] == [1, 19, 5, 5]  # Ax's centre, then Sobol
    assert [x["kind"] for x in r["rounds"]] == ["init", "init", "bo", "bo"]
    # the default's guard round hands the first BO round to Ax's default model
    first, second = r["chosen_kernels"]
    assert (first["chosen"], first["formula"], first["score"]) == ("AxDefault", None, None)
    assert second["chosen"] in r["rounds"][3]["population"] and second["formula"]
    assert set(r["timings"]["mean_per_bo_round"]) == {
        "fit",
        "propose",
        "validate",
        "acquisition",
        "evaluate",
        "overhead",
    }
    assert (
        r["timings"]["mean_per_bo_round"]["fit"] > 0
        and r["timings"]["mean_per_bo_round"]["acquisition"] > 0
    )
    assert r["torch_threads"] == 1
    assert {"ax-platform", "botorch", "gpytorch", "torch", "ax-kernel-discovery"} <= set(
        r["versions"]
    )
    # kd's default device is auto: CUDA where there is one
    assert r["device"]["torch_device"] == ("cuda" if torch.cuda.is_available() else "cpu")
    # what a run on another machine may part by: torch's CPU instruction set, the CPU
    assert r["device"]["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert "cpu_model" in r["device"]
    assert r["config"]["kd_config"] == KD_SMALL and r["problem_label"] == "rover60"
    assert isinstance(r["failures"], list)
    rbf = json.loads((out / "rover60__rbf__seed1.json").read_text())
    assert [c["chosen"] for c in rbf["chosen_kernels"]] == ["RBF", "RBF"]
    # the seeds differ, the Sobol designs too
    assert (
        rbf["values"][:20]
        != json.loads((out / "rover60__rbf__seed0.json").read_text())["values"][:20]
    )


def test_tiny_sweep_report(tiny_sweep: tuple[Path, list[dict]], tmp_path: Path) -> None:
    out, _ = tiny_sweep
    path = write_report(out, tmp_path / "report")
    text = path.read_text()
    assert (tmp_path / "report" / "curves_rover60.png").is_file()
    table = rank_table(load_results(out))
    assert table.methods == ["kd", "rbf"] and table.problems == ["rover60"]
    rows = [
        line for line in text.splitlines() if line.startswith("| kd") or line.startswith("| rbf")
    ]
    assert len(rows[:2]) == 2 and all(row.count("|") == 4 for row in rows[:2])
    means = {m: table.cells[m]["rover60"].mean for m in table.methods}
    best = max(means, key=means.__getitem__)  # rover: maximize
    assert table.ranks[best]["rover60"] == 1.0 and table.average_rank[best] == 1.0
    for m in table.methods:
        finals = [r["best_value"] for r in load_results(out) if r["method"] == m]
        assert means[m] == pytest.approx(np.mean(finals))


def test_finished_run_is_skipped_or_extended(
    tiny_sweep: tuple[Path, list[dict]], tmp_path: Path
) -> None:
    out, _ = tiny_sweep
    again = run_experiment("rover60", "rbf", seed=0, budget=30, batch=5, out=str(out), **CHEAP)
    assert again.get("skipped") is True and again["n_evaluations"] == 30
    # a larger budget continues a finished run from its checkpoint (on a copy)
    (tmp_path / "checkpoints").mkdir()
    for rel in ("rover60__rbf__seed0.json", "checkpoints/rover60__rbf__seed0.json"):
        shutil.copy(out / rel, tmp_path / rel)
    longer = run_experiment(
        "rover60", "rbf", seed=0, budget=35, batch=5, out=str(tmp_path), **CHEAP
    )
    assert longer["n_evaluations"] == 35 and longer["values"][:30] == again["values"]
    assert longer["sessions"][-1]["n_start"] == 30 and [r["q"] for r in longer["rounds"]] == [
        1,
        19,
        5,
        5,
        5,
    ]


class _Stop(Exception):
    pass


def test_resume_after_interruption(tmp_path: Path) -> None:
    settings = {"seed": 0, "batch": 5, "out": str(tmp_path), "kd_config": KD_SMALL, **CHEAP}
    rounds_seen = []

    def stop_after_first_bo_round(record: dict) -> None:
        rounds_seen.append(record["round"])
        if record["kind"] == "bo":
            raise _Stop

    with pytest.raises(_Stop):
        run_experiment("rover60", "kd", budget=30, on_round=stop_after_first_bo_round, **settings)
    cfg = make_run_config(problem="rover60", method="kd", budget=30, **settings)
    partial = json.loads(cfg.result_path.read_text())
    assert partial["status"] == "running" and partial["n_evaluations"] == 25
    assert cfg.checkpoint_path.is_file()

    # a different batch size cannot continue this checkpoint
    with pytest.raises(UserInputError, match="other settings"):
        run_experiment("rover60", "kd", budget=30, **{**settings, "batch": 4})

    import io

    from rich.console import Console
    from rich.progress import Progress

    screen = io.StringIO()
    bar = Progress(console=Console(file=screen, width=200))
    done = run_experiment("rover60", "kd", budget=30, progress=bar, **settings)
    assert (
        f"rover60__kd__seed0: resuming at 25/30 evaluations (checkpoint {cfg.checkpoint_path})"
        in (screen.getvalue().replace("\n", ""))
    )
    assert done["status"] == "complete" and done["n_evaluations"] == 30
    assert done["values"][:25] == partial["values"]  # nothing re-evaluated
    assert [(s["n_start"], s["n_end"], s["resumed"]) for s in done["sessions"]] == [
        (0, 25, False),
        (25, 30, True),
    ]
    assert [r["q"] for r in done["rounds"]] == [1, 19, 5, 5]  # Ax's centre, then Sobol
    assert len(done["chosen_kernels"]) == 2
    # the kernel-discovery state came back from the checkpoint: its history continues
    from ax.api import Client

    from ax_kernel_discovery.strategy import surrogate_of

    surrogate = surrogate_of(
        Client.load_from_json_file(str(cfg.checkpoint_path))._generation_strategy
    )
    assert [h.round for h in surrogate.history] == [0, 1]
    assert [c["chosen"] for c in done["chosen_kernels"]] == [h.chosen for h in surrogate.history]


# kd's run in the default suite; the baselines' (the same runner code) in the slow session
@pytest.mark.parametrize(
    "method",
    [
        "kd",
        pytest.param("ax_default", marks=pytest.mark.slow),
        pytest.param("bock", marks=pytest.mark.slow),
    ],
)
def test_a_seed_gives_one_run_and_a_resumed_run_continues_it_exactly(
    method: str, tmp_path: Path
) -> None:
    """Issue 31 item 4: the same seed and code give the same run (kd and the baselines),
    and a run killed after a round and resumed from its checkpoint is the run that never
    stopped, to the last bit: the checkpoint's observations (Ax's JSON keeps 10 decimals)
    are restored at full precision, and every round reseeds torch and numpy from the seed
    and the evaluations so far, so the random state is the uninterrupted run's."""
    settings = {"seed": 3, "batch": 5, "num_sobol": 10, "budget": 25, **CHEAP}
    if method == "kd":
        settings["kd_config"] = KD_SMALL

    def stop_after_two_bo_rounds(record: dict) -> None:
        if record["kind"] == "bo" and record["n_before"] >= 15:
            raise _Stop

    whole = run_experiment("rover60", method, out=str(tmp_path / "whole"), **settings)
    cut = str(tmp_path / "cut")
    with pytest.raises(_Stop):
        run_experiment("rover60", method, out=cut, on_round=stop_after_two_bo_rounds, **settings)
    resumed = run_experiment("rover60", method, out=cut, **settings)
    assert resumed["sessions"][-1]["resumed"] and resumed["sessions"][-1]["n_start"] == 20
    assert resumed["values"] == whole["values"]  # bit for bit, the BO rounds included
    assert len(whole["values"]) == 25 and whole["values"][20:] != whole["values"][15:20]


def test_sobol_only_run(tmp_path: Path) -> None:
    r = run_experiment(
        "rover60", "sobol", seed=1, budget=23, batch=2, num_sobol=20, out=str(tmp_path)
    )
    assert r["n_evaluations"] == 23 and [x["q"] for x in r["rounds"]] == [20, 2, 1]
    assert r["direction"] == "maximize"
    assert r["best_so_far"] == list(np.maximum.accumulate(r["values"]))
    assert r["chosen_kernels"] == [] and r["timings"]["bo_rounds"] == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"problem": "nope", "method": "kd"}, "unknown problem 'nope'; valid names:"),
        ({"problem": "rover60", "method": "nope"}, "unknown method 'nope'; valid names:"),
        (
            {"problem": "rover60", "method": "kd", "budget": 10},
            "budget (10) must be at least num_sobol (20)",
        ),
        ({"problem": "rover60", "method": "kd", "batch": 0}, "batch"),
        ({"problem": "rover60", "method": "saasbo", "budget": 500}, "budget <= 200"),
        (
            {"problem": "rover60", "method": "kd", "kd_config": {"population_size": 0}},
            "invalid kd_config",
        ),
    ],
)
def test_bad_input(kwargs: dict, message: str) -> None:
    with pytest.raises(UserInputError) as info:
        make_run_config(**kwargs)
    assert message in str(info.value)


def test_sweep_checks_everything_first(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="unknown method 'foo'"):
        sweep_configs(["rover60"], ["rbf", "foo"], [0], budget=30, out=str(tmp_path))
    with pytest.raises(UserInputError, match="mopta08"):
        sweep_configs(["mopta08"], ["rbf"], [0], budget=30, out=str(tmp_path))
    assert not list(tmp_path.iterdir())
    cfgs = sweep_configs(["branin100", "rover60"], ["rbf"], [0, 1], budget=30, out=str(tmp_path))
    assert [c.run_id for c in cfgs] == [
        "branin100__rbf__seed0",
        "branin100__rbf__seed1",
        "rover60__rbf__seed0",
        "rover60__rbf__seed1",
    ]
    assert (
        isinstance(cfgs[0], RunConfig)
        and cfgs[0].result_path == tmp_path / "branin100__rbf__seed0.json"
    )


def test_saasbo_needs_jax_or_runs_short(tmp_path: Path) -> None:
    from botorch.models import fully_bayesian

    if getattr(fully_bayesian, "_HAS_JAX", False):
        cfg = make_run_config(problem="rover60", method="saasbo", budget=30, out=str(tmp_path))
        assert cfg.method == "saasbo"
    else:
        with pytest.raises(UserInputError, match=r"botorch\[fully_bayesian\]"):
            make_run_config(problem="rover60", method="saasbo", budget=30, out=str(tmp_path))


def test_progress_bar_shows_eta_resume_and_llm_wait() -> None:
    from rich.progress import Progress, TimeRemainingColumn

    from ax_kernel_discovery.runner.experiment import WaitingColumn, _round_bar

    class Waiting:
        def llm_waiting(self) -> str | None:
            return "gpt-4o, discovery, 42 s"

    cfg = make_run_config(problem="rover60", method="kd", budget=40)
    bar, task, own = _round_bar(True, cfg, 28, Waiting())
    try:
        assert own and isinstance(bar, Progress)
        assert any(isinstance(c, TimeRemainingColumn) for c in bar.columns)
        the_task = bar.tasks[0]
        assert the_task.completed == 28 and "resuming at 28/40" in the_task.description
        waiting = next(c for c in bar.columns if isinstance(c, WaitingColumn))
        assert waiting.render(the_task).plain == "waiting for the LLM (gpt-4o, discovery, 42 s)"
        assert WaitingColumn(None).render(the_task).plain == ""
    finally:
        bar.stop()


def test_llm_rounds_counts_the_rounds_that_used_the_llm() -> None:
    from ax_kernel_discovery.runner.experiment import llm_rounds

    rounds = [{"kind": "init"}, {"llm_used": True}, {"llm_used": False}, {"llm_used": True}]
    assert llm_rounds(rounds) == {"rounds": 3, "used_llm": 2, "without_llm": 1}
    assert llm_rounds([{"kind": "bo"}]) is None  # offline operator: nothing to count
