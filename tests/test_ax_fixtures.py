"""Kernel discovery on Ax's own test experiments: it generates wherever Ax's own BO step
does, with the same kind of acquisition function (issue 30, the fixture matrix).

Ax's ``get_offline_experiments()`` and ``get_online_experiments()`` are the experiments
Ax's own analysis tests loop over: single- and multi-objective, choice, fixed and derived
parameters, parameter and outcome constraints, batch trials, a status quo with relative
constraints. For each, Ax's BO node (what ``Client()`` uses) and kernel discovery's
(:func:`~ax_kernel_discovery.strategy.botorch_step`, a small population) generate
candidates, and the acquisition functions they built are compared by family.
"""

from __future__ import annotations

import copy
import functools
import random
import warnings
from typing import Any

import numpy as np
import pytest
import torch
from ax.generation_strategy.generation_strategy import GenerationStrategy
from ax.utils.testing.core_stubs import get_offline_experiments, get_online_experiments
from botorch.acquisition.logei import qLogNoisyExpectedImprovement

from ax_kernel_discovery import KernelDiscoveryConfig, KernelDiscoverySurrogate
from ax_kernel_discovery.baselines.methods import ax_strategy
from ax_kernel_discovery.strategy import botorch_step
from ax_kernel_discovery.surrogate.new_rows_qlognei import NewRowsqLogNEI
from ax_kernel_discovery.testing import acquisitions_built

torch.set_num_threads(1)

#: A small population whose chosen kernel drives the first BO round (no guard round).
SMALL = KernelDiscoveryConfig(
    population_size=3,
    proposals_per_round=0,
    fit_maxiter=5,
    guard_rounds=0,
    background_fits="off",
    seed=0,
)
TINY = {"num_restarts": 1, "raw_samples": 16}

#: Classes that compute the same acquisition function (kd computes qLogNEI with its own).
FAMILY = {NewRowsqLogNEI: qLogNoisyExpectedImprovement}


@functools.cache
def _experiments(kind: str) -> list[Any]:
    """Ax's fixture experiments of one kind (built once: Ax builds them with Sobol trials
    and random data, from the global generators: seeded here, every process builds the
    same data)."""
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return get_offline_experiments() if kind == "offline" else get_online_experiments()


def _generate(experiment: Any, node: Any) -> tuple[list[type], int]:
    """The acquisition functions built and the candidates generated (an arm generated
    twice counts twice: Ax merges a repeated candidate into one arm of weight 2)."""
    gs = GenerationStrategy(name="one node", nodes=[node])
    n = 2
    # the acquisition optimizer's raw samples come from torch's global generator: seeded
    # here, the outcome does not depend on which tests ran before in the same process.
    # A repeated candidate is BoTorch's qLogNEI on kd's model (a spike of the Cholesky
    # jitter at a pending point), not kd's acquisition: it counts as generated.
    torch.manual_seed(0)
    with acquisitions_built() as built, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = gs.gen(experiment=experiment, n=n)
    candidates = round(sum(sum(gr.weights) for group in runs for gr in group))
    return [type(f) for f in built], candidates


def _compare(experiment: Any) -> str | None:
    """``None`` when kd generates as Ax's own BO step does (or Ax cannot), else why not."""
    ax_node = ax_strategy(num_sobol=1, seed=0, **TINY)._nodes[-1]
    try:
        ax_built, ax_arms = _generate(copy.deepcopy(experiment), ax_node)
    except Exception:  # noqa: BLE001 - Ax itself cannot: nothing to compare
        return None
    surrogate = KernelDiscoverySurrogate(SMALL)
    try:
        kd_built, kd_arms = _generate(copy.deepcopy(experiment), botorch_step(surrogate, **TINY))
    except Exception as e:  # noqa: BLE001 - reported with the fixture's index
        return f"kd failed where Ax generates: {type(e).__name__}: {str(e)[:300]}"
    if not (kd_arms == ax_arms > 0):
        return f"kd generated {kd_arms} candidates, Ax {ax_arms}"
    if not ax_built or [FAMILY.get(c, c) for c in kd_built] != ax_built:
        names = [c.__name__ for c in kd_built], [c.__name__ for c in ax_built]
        return f"acquisition functions differ: kd {names[0]}, Ax {names[1]}"
    if not surrogate.history:
        return "kernel discovery did not run a round"
    return None


#: One fixture of each kind, by (kind, index): single objective with a choice parameter
#: and a parameter constraint; multi-objective with outcome constraints and a fixed
#: parameter; multi-objective, range parameters only; batch trials with a status quo and
#: relative constraints, single- and multi-objective.
ONE_OF_EACH = [("offline", 0), ("offline", 4), ("offline", 19), ("online", 0), ("online", 4)]


def _features(experiment: Any) -> set[str]:
    config = experiment.optimization_config
    kinds = {type(p).__name__ for p in experiment.parameters.values()}
    features = {"moo" if config.is_moo_problem else "single"} | kinds
    if config.outcome_constraints:
        features.add("outcome constraints")
    if experiment.search_space.parameter_constraints:
        features.add("parameter constraints")
    if any(type(t).__name__ == "BatchTrial" for t in experiment.trials.values()):
        features.add("batch trials")
    if experiment.status_quo is not None:
        features.add("status quo")
    return features


@pytest.mark.parametrize(("kind", "index"), ONE_OF_EACH)
def test_kd_generates_where_ax_does_on_one_fixture_of_each_kind(kind: str, index: int) -> None:
    assert _compare(_experiments(kind)[index]) is None


def _matrix_features() -> set[str]:
    """Every feature some fixture of the matrix holds."""
    return set().union(*(_features(e) for k in ("offline", "online") for e in _experiments(k)))


def test_one_of_each_kind_holds_every_feature_of_the_matrix() -> None:
    every = _matrix_features()
    chosen = set().union(*(_features(_experiments(k)[i]) for k, i in ONE_OF_EACH))
    assert chosen == every, every - chosen


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["offline", "online"])
def test_kd_generates_where_ax_does_with_the_same_acquisition(kind: str) -> None:
    experiments = _experiments(kind)
    assert len(experiments) >= 10
    failures = {i: why for i, e in enumerate(experiments) if (why := _compare(e)) is not None}
    assert not failures, failures


def test_the_matrix_covers_what_ax_s_fixtures_hold() -> None:
    """Multi-objective, outcome constraints, batch trials and a status quo are all in it
    (else the matrix would not test what issue 30 asks)."""
    wanted = {"moo", "single", "outcome constraints", "batch trials", "status quo"}
    assert wanted <= _matrix_features(), wanted - _matrix_features()
