"""Kernel discovery's Ax analysis cards: computed from a saved run, without any fit."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch
from ax.analysis.markdown.markdown_analysis import MarkdownAnalysisCard
from ax.analysis.plotly.plotly_analysis import PlotlyAnalysisCard
from ax.api import Client
from ax.core.analysis_card import AnalysisCard, AnalysisCardGroup, NotApplicableStateAnalysisCard
from ax.generators.torch.botorch_modular.surrogate import Surrogate

from ax_kernel_discovery import (
    KernelDiscoveryAnalysis,
    KernelDiscoverySurrogate,
    RoundRecord,
    kernel_discovery_analyses,
    kernel_discovery_generation_strategy,
    surrogate_of,
)
from ax_kernel_discovery.candidate import Rejection
from ax_kernel_discovery.cards import population_frame
from ax_kernel_discovery.testing import unit_box_client

torch.set_num_threads(1)

D = 4


def _client(strategy: Any | None = None) -> Client:
    return unit_box_client(D, strategy, objective="-loss")


def _loss(params: dict[str, Any]) -> float:
    return float(sum((params[f"x{i}"] - 0.3) ** 2 for i in range(D)))


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, float]]:
    """A kernel-discovery run of 4 rounds, saved as Ax saves a Client; its values."""
    strategy = kernel_discovery_generation_strategy(
        {  # the cards, not the default's fits: the start set alone, 50 L-BFGS steps a round
            "population_size": 5,
            "proposals_per_round": 3,
            "background_fits": "off",
            "start_kernels": None,
            "fit_maxiter": 50,
        },
        num_sobol=5,
        num_restarts=1,
        raw_samples=32,
        maxiter=10,
    )
    client = _client(strategy)
    values: dict[int, float] = {}
    for _ in range(5):
        for index, params in client.get_next_trials(max_trials=3).items():
            values[index] = _loss(params)
            client.complete_trial(index, raw_data={"loss": values[index]})
    path = tmp_path_factory.mktemp("cards") / "run.json"
    client.save_to_json_file(str(path))
    return path, values


def test_cards_of_a_saved_run_fit_nothing_and_match_the_history(
    saved_run: tuple[Path, dict[int, float]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, values = saved_run
    client = Client.load_from_json_file(str(path))
    surrogate = surrogate_of(client)
    history = [r.model_copy(deep=True) for r in surrogate.history]
    assert len(history) >= 3

    def no_fit(*args: object, **kwargs: object) -> None:
        raise AssertionError("a card fitted a model")

    monkeypatch.setattr(Surrogate, "fit", no_fit)
    monkeypatch.setattr(KernelDiscoverySurrogate, "model_selection", no_fit)
    cards = client.compute_analyses(kernel_discovery_analyses(), display=False)
    assert [type(c) for c in cards] == [
        AnalysisCard,
        MarkdownAnalysisCard,
        AnalysisCard,
        PlotlyAnalysisCard,
    ]
    assert surrogate.history == history  # nothing ran

    population, choices, rejections, plot = (c.df for c in cards)
    for rec in history:
        rows = population[population["round"] == rec.round]
        members = rows[rows["status"].isin(["chosen", "new", "kept"])]
        assert sorted(members["kernel"]) == sorted(rec.population)
        assert sorted(rows[rows["status"] == "dropped"]["kernel"]) == sorted(rec.dropped)
        assert len(rows[rows["status"] == "rejected"]) == len(rec.rejected)
        new = rows[rows["status"] == "new"]["kernel"]
        assert set(new) == set(rec.accepted) - {rec.chosen}
        if rec.chosen in rec.population:
            assert list(rows[rows["status"] == "chosen"]["kernel"]) == [rec.chosen]
        for row in members.itertuples():
            assert row.held_out_score == pytest.approx(
                rec.scores.get(row.kernel, math.nan), nan_ok=True
            )
    assert list(choices["chosen"]) == [r.chosen for r in history]
    assert list(choices["guard"]) == [r.guarded for r in history]
    assert choices["guard"].iloc[0] and choices["chosen"].iloc[0] == "AxDefault"
    by_index = [values[i] for i in sorted(values)]
    for rec, best in zip(history, choices["best_value_so_far"], strict=True):
        assert best == pytest.approx(min(by_index[: rec.n]))  # minimized: "-loss"
    assert rejections["count"].sum() == sum(len(r.rejected) for r in history)
    scored = sum(len(r.scores) for r in history)
    assert len(plot) == scored and set(plot[plot["chosen"]]["kernel"]) <= {
        r.chosen for r in history
    }
    figure = cards[3].get_figure()
    assert {t.name for t in figure.data} == set(plot["kernel"])
    assert "| round | n | chosen | score | best so far |" in cards[1].blob

    (group,) = client.compute_analyses([KernelDiscoveryAnalysis()], display=False)
    assert isinstance(group, AnalysisCardGroup) and len(group.children) == 4


def test_why_a_kernel_left() -> None:
    surrogate = KernelDiscoverySurrogate()
    surrogate.history = [
        RoundRecord(
            round=3,
            outcome="f",
            n=20,
            dim=4,
            chosen="RBF",
            population=["RBF", "new1"],
            accepted=["new1"],
            scores={"RBF": 0.1, "new1": 0.3, "weak": 0.9},
            dropped=["SL", "broken", "weak"],
            struck="SL",
            rejected=[
                Rejection(name="odd", stage="validation", reason="not PSD", formula="k = -1")
            ],
        )
    ]
    rows = population_frame(surrogate).set_index("kernel")
    assert rows.loc["RBF", "status"] == "chosen" and rows.loc["new1", "status"] == "new"
    assert rows.loc["SL", "why"] == "struck: the batch it chose did not improve the best value"
    assert rows.loc["broken", "why"] == "its fit failed or was too slow"
    assert rows.loc["weak", "why"] == "not among the population's best by score"
    assert (
        rows.loc["odd", "why"] == "validation: not PSD" and rows.loc["odd", "formula"] == "k = -1"
    )
    assert rows.loc["RBF", "origin"] == "base" and rows.loc["RBF", "formula"].startswith("k(x, x')")


def test_the_cards_say_when_they_do_not_apply() -> None:
    ax_default = _client()  # Ax's own strategy: no kernel discovery
    ax_default.get_next_trials(max_trials=1)
    kd = _client(kernel_discovery_generation_strategy(num_sobol=5))  # no round yet
    for client in (ax_default, kd):
        cards = client.compute_analyses(kernel_discovery_analyses(), display=False)
        assert all(isinstance(c, NotApplicableStateAnalysisCard) for c in cards)
    reason = kernel_discovery_analyses()[0].validate_applicable_state(
        generation_strategy=kd._generation_strategy
    )
    assert reason is not None and "No round of kernel discovery has run yet" in reason


def test_loading_a_run_needs_the_import_and_the_readme_says_so(
    saved_run: tuple[Path, dict[int, float]],
) -> None:
    """Ax has no plug-in hook: without the import its decoder does not know kd's types."""
    import subprocess
    import sys

    path, _ = saved_run
    load = f"from ax.api import Client; Client.load_from_json_file({str(path)!r}); print('ok')"
    root = Path(__file__).resolve().parents[1]
    env = {"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}
    bare = subprocess.run(
        [sys.executable, "-c", load], capture_output=True, text=True, env=env, timeout=300
    )
    assert bare.returncode != 0
    assert "KernelDiscoverySurrogate" in bare.stderr and "not registered" in bare.stderr
    imported = subprocess.run(
        [sys.executable, "-c", "import ax_kernel_discovery; " + load],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert imported.returncode == 0 and imported.stdout.strip().endswith("ok"), imported.stderr
    readme = " ".join((root / "README.md").read_text().split())
    assert "after `import ax_kernel_discovery`" in readme and "is not registered" in readme


def test_the_example_draws_the_scores_card_as_a_png(
    saved_run: tuple[Path, dict[int, float]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """examples/analysis_cards.py (what made docs/img/kd_scores.png), on the saved run."""
    import importlib.util

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location(
        "analysis_cards", root / "examples" / "analysis_cards.py"
    )
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    png = tmp_path / "scores.png"
    example.main(["--run", str(saved_run[0]), "--png", str(png)])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    out = capsys.readouterr().out
    assert "== Kernel discovery: the kernel chosen each round" in out
