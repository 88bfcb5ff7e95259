"""Benchmark runs: one problem x one method x one seed, driven by Ax, resumable.

:func:`run_experiment` builds an Ax :class:`~ax.api.client.Client` for a
:class:`~ax_kernel_discovery.benchmarks.BlackBoxProblem` (one float
``RangeParameterConfig`` per input, the objective in the problem's direction), sets the
method's ``GenerationStrategy`` (:func:`ax_kernel_discovery.baselines.get_method`) and
runs rounds until ``budget`` evaluations are done:

* round 0 is the Sobol design (``num_sobol`` points), every later round asks the
  strategy for one *joint* batch of ``batch`` points (``GenerationStrategy.gen(n=batch)``,
  as in the paper; each point becomes one Ax trial);
* the oracle evaluates the batch, the values are completed in Ax;
* the Ax client is checkpointed (``Client.save_to_json_file``) and the run's result JSON
  is rewritten after every round, so a killed run continues from its last round when
  started again, and a finished run (``status == "complete"``) is skipped.

The result JSON (``<out>/<problem>__<method>__seed<k>.json``) has the value and best-so-far
per evaluation, the chosen kernel per round, the time per phase (GP fit and selection,
proposal/LLM, validation, acquisition optimization, oracle evaluation, overhead), the
failures, the settings, package versions, device and torch threads.

:mod:`ax_kernel_discovery.runner.sweep` runs many of them in parallel.

Modules: :mod:`~ax_kernel_discovery.runner.run_config` (:class:`RunConfig` and its checks),
:mod:`~ax_kernel_discovery.runner.experiment` (:func:`run_experiment`),
:mod:`~ax_kernel_discovery.runner.rounds` (one round),
:mod:`~ax_kernel_discovery.runner.ax_client` (the Ax client and its checkpoint),
:mod:`~ax_kernel_discovery.runner.results` (the result JSON) and
:mod:`~ax_kernel_discovery.runner.environment` (versions and device).

Example:
    >>> result = run_experiment("branin100", "rbf", seed=0, budget=30, batch=5, out="results/")  # doctest: +SKIP
    >>> result["best_value"]  # doctest: +SKIP
"""

from __future__ import annotations

import logging

from ax_kernel_discovery.runner.ax_client import method_options
from ax_kernel_discovery.runner.environment import device_info, package_versions
from ax_kernel_discovery.runner.experiment import run_experiment
from ax_kernel_discovery.runner.results import PHASES, best_so_far, finished_result, load_result
from ax_kernel_discovery.runner.results import RESULT_VERSION as RESULT_VERSION
from ax_kernel_discovery.runner.run_config import KD_METHODS as KD_METHODS
from ax_kernel_discovery.runner.run_config import (
    METRIC,
    RunConfig,
    UserInputError,
    check_before_evaluations,
    check_run_config,
    make_problem,
    make_run_config,
)

logger = logging.getLogger(__name__)

__all__ = [
    "METRIC",
    "PHASES",
    "RunConfig",
    "UserInputError",
    "best_so_far",
    "check_before_evaluations",
    "check_run_config",
    "device_info",
    "finished_result",
    "load_result",
    "make_problem",
    "make_run_config",
    "method_options",
    "package_versions",
    "run_experiment",
]
