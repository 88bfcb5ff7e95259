"""Held-out forecasts of SAAS fits on a finished run's own points (round 3's diagnostic).

Round 3 of the hold-out study (``benchmarks/results/holdout3``) screens kd with a SAAS-prior
member (:class:`~ax_kernel_discovery.kernels.SaasMatern52Kernel`, one global shrinkage
inferred by MAP). kd seldom chooses that member: its held-out scores are among the worst of
the population. This script asks whether that is kd's fit or the model: on the points of a
finished run, it fits each model on the first n points (BoTorch's full ``fit_gpytorch_mll``,
outcomes standardized on those n) and prints the mean negative log predictive density of
the next 15 points (the next batch; lower is better):

- ``matern52``: :class:`~ax_kernel_discovery.kernels.DimScaledMatern52Kernel` (the
  dimension-scaled prior of Ax's default model);
- ``saas``: ``SaasMatern52Kernel``, as kd's member, fitted to convergence;
- ``saas_200``: the same with L-BFGS stopped at 200 iterations (kd gives a new member 200,
  then 50 per round from its last fit);
- ``map_saas``: BoTorch's ``EnsembleMapSaasSingleTaskGP`` (4 MAP fits, one per shrinkage
  drawn from HC(0.1), as a mixture), the model of the ``map_saas`` baseline.

Usage:
    python benchmarks/saas_heldout.py RUN_CHECKPOINT.json [...]
"""

from __future__ import annotations

import argparse
import math
import warnings
from collections.abc import Sequence

import numpy as np
import torch
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.map_saas import EnsembleMapSaasSingleTaskGP
from gpytorch.kernels import ScaleKernel
from gpytorch.mlls import ExactMarginalLogLikelihood

from ax_kernel_discovery.kernels import DimScaledMatern52Kernel, SaasMatern52Kernel

MODELS: tuple[str, ...] = ("matern52", "saas", "saas_200", "map_saas")
SIZES: tuple[int, ...] = (50, 80, 110, 140)
BATCH = 15


def run_points(checkpoint: str) -> tuple[torch.Tensor, torch.Tensor]:
    """A run's points in the unit cube (in trial order) and their values."""
    from ax.api import Client

    experiment = Client.load_from_json_file(checkpoint)._experiment
    params = experiment.search_space.parameters
    lower = torch.tensor([p.lower for p in params.values()], dtype=torch.float64)
    upper = torch.tensor([p.upper for p in params.values()], dtype=torch.float64)
    df = experiment.fetch_data().df
    values = dict(zip(df["trial_index"], df["mean"], strict=True))
    order = sorted(values)
    x = torch.tensor(
        np.array([[experiment.trials[i].arm.parameters[n] for n in params] for i in order]),
        dtype=torch.float64,
    )
    y = torch.tensor([values[i] for i in order], dtype=torch.float64).unsqueeze(-1)
    return (x - lower) / (upper - lower), y


def fitted(model: str, x: torch.Tensor, y: torch.Tensor) -> SingleTaskGP:
    """``model`` fitted on ``(x, y)`` with BoTorch's ``fit_gpytorch_mll``."""
    options: dict[str, object] = {}
    if model == "map_saas":
        gp: SingleTaskGP = EnsembleMapSaasSingleTaskGP(x, y)
    else:
        kernel_class = DimScaledMatern52Kernel if model == "matern52" else SaasMatern52Kernel
        gp = SingleTaskGP(x, y, covar_module=ScaleKernel(kernel_class(ard_num_dims=x.shape[-1])))
        if model == "saas_200":
            options = {"optimizer_kwargs": {"options": {"maxiter": 200}}}
    fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp), **options)  # type: ignore[arg-type]
    return gp


def nlpd(gp: SingleTaskGP, x: torch.Tensor, y: torch.Tensor) -> float:
    """Mean negative log predictive density of ``y`` at ``x`` (a mixture for an ensemble)."""
    gp.eval()
    with torch.no_grad():
        post = gp.posterior(x, observation_noise=True)
        mean, var = post.mean.squeeze(-1), post.variance.squeeze(-1)
        log_p = -0.5 * ((y - mean) ** 2 / var + torch.log(2 * math.pi * var))
        if log_p.dim() > 1:  # the ensemble's members, one row each: their equal mixture
            log_p = torch.logsumexp(log_p, dim=0) - math.log(log_p.shape[0])
        return float(-log_p.mean())


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="+")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    print(f"NLPD of the next {BATCH} points after n (lower is better)")
    print("| run | n | " + " | ".join(MODELS) + " |")
    print("|---|---|" + "---|" * len(MODELS))
    for checkpoint in args.checkpoints:
        x, y = run_points(checkpoint)
        name = checkpoint.rsplit("/", 1)[-1].removesuffix(".json")
        for n in SIZES:
            mu, sd = y[:n].mean(), y[:n].std()
            train, test = (y[:n] - mu) / sd, ((y[n : n + BATCH] - mu) / sd).squeeze(-1)
            cells = []
            for model in MODELS:
                torch.manual_seed(n)  # the ensemble draws its shrinkages
                try:
                    cells.append(f"{nlpd(fitted(model, x[:n], train), x[n : n + BATCH], test):.3f}")
                except Exception as e:  # noqa: BLE001 - a failed fit is a result here
                    cells.append(type(e).__name__)
            print(f"| {name} | {n} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
