"""Fakes of a round's inputs, for unit tests of its steps (as ``botorch.utils.testing``).

A round's collaborators (:class:`~.choice.Chooser`, :class:`~.heldout.HeldoutScorer`,
:class:`~.portfolio.Portfolios`) read a :class:`~.state.RoundContext` and the round's
:class:`~.fitting.FittedKernel` s. These helpers build both from given numbers, without Ax
or a GP fit:

* :func:`forecasts` and :func:`fake_population`: members with given held-out forecasts;
* :func:`round_context`: a context over a tiny float64 data set, with given earlier rounds;
* :func:`fitted_kernels`: fitted kernels with given scores (``model=None`` where the step
  reads no model);
* :func:`tiny_gp` and :class:`TinyGPBuilder`: a real :class:`~botorch.models.SingleTaskGP`
  at fixed hyperparameters, and a :class:`~.fitting.ModelBuilder` that builds one at a
  member's warm start (what :class:`~.heldout.HeldoutScorer` is handed in a run: Ax's
  ``Surrogate._construct_model``).

Example:
    >>> from ax_kernel_discovery.config import KernelDiscoveryConfig
    >>> from ax_kernel_discovery.surrogate.choice import Chooser
    >>> pop = fake_population({"A": forecasts([[0.5, 0.7]]), "B": forecasts([[0.4, 0.6]])})
    >>> ctx = round_context(pop, past=1)
    >>> config = KernelDiscoveryConfig(guard_rounds=0, tie_break="none", keep_kernels=())
    >>> Chooser(config.choice_options()).select(fitted_kernels({"A": 0.0, "B": 1.0}), ctx).names
    ['B']
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import torch
from ax.core.search_space import SearchSpaceDigest
from ax.generators.torch.botorch_modular.utils import ModelConfig
from botorch.models import SingleTaskGP
from botorch.models.model import Model
from botorch.utils.datasets import SupervisedDataset
from gpytorch.kernels import RBFKernel
from gpytorch.likelihoods import GaussianLikelihood
from torch import Tensor

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.errors import KernelFailure
from ax_kernel_discovery.expression import formula, leaf
from ax_kernel_discovery.population import START_SET, HeldOut, Population, base_candidate
from ax_kernel_discovery.surrogate.fitting import FittedKernel
from ax_kernel_discovery.surrogate.state import OutcomeState, PastRound, RoundContext
from ax_kernel_discovery.surrogate.trial_rows import FitRows

__all__ = [
    "TinyGPBuilder",
    "fake_candidate",
    "fake_population",
    "fitted_kernels",
    "forecasts",
    "round_context",
    "tiny_gp",
]

#: The start set's members by name (``"RBF"``, ``"Matern52"``, ...).
_START = {base_candidate(k).name: k for k in START_SET}


def forecasts(
    losses: Sequence[Sequence[float]],
    last_round: int | None = None,
    crps: Sequence[Sequence[float]] | None = None,
) -> list[HeldOut]:
    """A member's held-out forecasts of consecutive batches, from per-point log losses.

    Args:
        losses: One list per batch, oldest first, of per-point negative log densities.
        last_round: The round of the last batch (``None``: ``len(losses) - 1``, the
            first batch in round 0).
        crps: Per-point CRPS of each batch (``None``: zeros).
    """
    last = len(losses) - 1 if last_round is None else last_round
    first = last - len(losses) + 1
    return [
        HeldOut(
            round=first + i,
            logpdf=[-float(v) for v in batch],
            crps=[float(v) for v in crps[i]] if crps is not None else [0.0] * len(batch),
        )
        for i, batch in enumerate(losses)
    ]


def fake_candidate(name: str, kernel: str = "rbf") -> KernelCandidate:
    """A candidate called ``name``: the start-set member of that name (``"RBF"``,
    ``"SL"``, ...), or a single ``kernel`` leaf (a kernel of the expression grammar)."""
    if name in _START:
        return base_candidate(_START[name])
    spec = leaf(kernel)
    return KernelCandidate(name=name, formula=formula(spec), origin="offline", spec=spec)  # type: ignore[arg-type]


def fake_population(
    heldout: Mapping[str, Sequence[HeldOut]],
    kernels: Mapping[str, str] | None = None,
    size: int = 10,
) -> Population:
    """A population of the members named in ``heldout``, in that order, with those
    forecasts (see :func:`fake_candidate` for the kernels; ``kernels``: a leaf by name)."""
    kernels = kernels or {}
    candidates = [fake_candidate(name, kernels.get(name, "rbf")) for name in heldout]
    pop = Population(candidates, size=size)
    for member in pop:
        member.heldout = list(heldout[member.name])
    return pop


def round_context(
    population: Population,
    past: int | Sequence[PastRound] = 0,
    *,
    X: Tensor | None = None,
    Y: Tensor | None = None,
    Yvar: Tensor | None = None,
    n: int = 8,
    dim: int = 2,
    warm: Mapping[str, Mapping[str, Tensor]] | None = None,
    sign: float | None = -1.0,
    rows: FitRows | None = None,
    outcome: str = "f",
) -> RoundContext:
    """The context of a round of ``population``'s outcome, without Ax.

    Args:
        population: The members.
        past: The earlier rounds (a count ``k``: rounds ``0 .. k-1``, each one row
            fewer than the next, the last one row fewer than this round).
        X: Training inputs (``None``: ``n`` Sobol points in ``[0, 1]^dim``).
        Y: Training targets, ``n x 1`` (``None``: a smooth function of ``X``).
        Yvar: Known noise variances (``None``: unknown).
        n: Rows of the default ``X``.
        dim: Columns of the default ``X``.
        warm: Warm starts by member (:attr:`~.state.OutcomeState.warm`).
        sign: The objective's weight (``None``: not known yet).
        rows: The rows keyed by trial (``None``: not known).
        outcome: The outcome's name.
    """
    if X is None:
        X = torch.quasirandom.SobolEngine(dim, scramble=True, seed=0).draw(n, dtype=torch.float64)
    if Y is None:
        Y = torch.sin(3.0 * X).sum(-1, keepdim=True)
    if isinstance(past, int):
        rows_now = X.shape[0]
        past = [PastRound(r, rows_now - past + r) for r in range(past)]
    features = [f"x{i}" for i in range(X.shape[-1])]
    state = OutcomeState(population, warm={k: dict(v) for k, v in (warm or {}).items()})
    return RoundContext(
        outcome=outcome,
        state=state,
        dataset=SupervisedDataset(X, Y, Yvar=Yvar, feature_names=features, outcome_names=[outcome]),
        search_space_digest=SearchSpaceDigest(
            feature_names=features, bounds=[(0.0, 1.0)] * X.shape[-1]
        ),
        round=len(past),
        sign=sign,
        rows=rows,
        earlier=list(past),
    )


def fitted_kernels(
    scores: Mapping[str, float], models: Mapping[str, Model | None] | None = None
) -> dict[str, FittedKernel]:
    """Fitted kernels with the given scores, by name (``models``: their models; others
    ``None``, as a kernel fitted in a worker process before it is read)."""
    models = models or {}
    return {
        name: FittedKernel(models.get(name), ModelConfig(name=name), float(score))
        for name, score in scores.items()
    }


def tiny_gp(
    X: Tensor,
    Y: Tensor,
    Yvar: Tensor | None = None,
    lengthscale: float | Sequence[float] = 0.3,
    noise: float = 0.1,
    constant: float = 0.0,
    ard_num_dims: int | None = None,
) -> SingleTaskGP:
    """A :class:`~botorch.models.SingleTaskGP` with an RBF kernel at fixed hyperparameters
    (no output scale, no outcome transform, no fit), in eval mode.

    Args:
        X: Training inputs.
        Y: Training targets, ``n x 1``.
        Yvar: Known noise variances (``None``: a learnt noise, set to ``noise``).
        lengthscale: The kernel's lengthscale(s).
        noise: The likelihood's noise variance (without ``Yvar``).
        constant: The constant prior mean.
        ard_num_dims: Lengthscales of the kernel (``None``: one); what
            :func:`~ax_kernel_discovery.selection.num_hyperparameters` counts.
    """
    covar = RBFKernel(ard_num_dims=ard_num_dims).to(X)
    covar.lengthscale = torch.as_tensor(lengthscale, dtype=X.dtype)
    likelihood = None if Yvar is not None else GaussianLikelihood().to(X)
    if likelihood is not None:
        likelihood.noise = torch.tensor(noise, dtype=X.dtype)
    model = SingleTaskGP(
        X, Y, train_Yvar=Yvar, likelihood=likelihood, covar_module=covar, outcome_transform=None
    )
    model.mean_module.constant = torch.tensor(constant, dtype=X.dtype)
    return model.eval()


class TinyGPBuilder:
    """A :class:`~.fitting.ModelBuilder` of :func:`tiny_gp` s: each model is built on the
    dataset it is handed, at the state dict it is handed (a member's warm start), never
    fitted.

    Args:
        fail: Members (``ModelConfig.name``) whose build raises, as a broken kernel does.

    Attributes:
        calls: ``(name, rows, refit)`` of every build, in order.
    """

    def __init__(self, fail: Collection[str] = ()) -> None:
        self.fail = set(fail)
        self.calls: list[tuple[str | None, int, bool]] = []

    def __call__(
        self,
        dataset: SupervisedDataset,
        search_space_digest: SearchSpaceDigest,
        model_config: ModelConfig,
        state_dict: Mapping[str, Tensor] | None,
        refit: bool,
    ) -> Model:
        self.calls.append((model_config.name, int(dataset.X.shape[0]), refit))
        if model_config.name in self.fail:
            raise KernelFailure(f"{model_config.name} cannot be built")  # a kernel's failure
        model = tiny_gp(dataset.X, dataset.Y, dataset.Yvar)
        if state_dict is not None:
            model.load_state_dict(dict(state_dict), strict=False)
        return model
