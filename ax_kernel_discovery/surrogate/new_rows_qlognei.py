"""qLogNEI that computes only the new rows of the joint posterior at each evaluation.

BoTorch's ``qLogNoisyExpectedImprovement`` (with its cached root decomposition, the
default) evaluates, at every optimizer step, the model's joint posterior over
``cat([X_baseline, X])``: the kernel between every baseline point and every training
point and between every pair of baseline points, although these do not depend on ``X``
and :func:`botorch.utils.low_rank.sample_cached_cholesky` then reads only the ``q`` new
rows (BoTorch's own TODO in ``_get_samples_and_objectives``). With ``n`` training and
``n_b`` baseline points (``n_b`` is ``n`` or fewer), a step evaluates the kernel on
``(n_b + q) x (n + n_b + q)`` pairs where ``q x (n + n_b + q)`` carry information.

:class:`NewRowsqLogNEI` computes the same joint posterior from constant blocks cached
once per acquisition function and the new rows computed per step. With the GP's
predictive caches (:math:`\\alpha = (K_{TT} + \\Sigma)^{-1}(y - m_T)` and a root
:math:`S S^\\top = (K_{TT} + \\Sigma)^{-1}`, the same ones GPyTorch uses), and
:math:`W_Z = K_{ZT} S`:

.. math::

    \\mu_X = m(X) + K_{XT} \\alpha, \\qquad
    \\Sigma_{XB} = K_{XB} - W_X W_B^\\top, \\qquad
    \\Sigma_{XX} = K_{XX} - W_X W_X^\\top,

with :math:`\\mu_B`, :math:`\\Sigma_{BB}` and :math:`W_B` cached. The joint posterior is
assembled densely and passed through the model's outcome transform and the posterior
transform, then to BoTorch's own sampling code, unchanged. The values agree with
BoTorch's to rounding (a test holds them to 1e-9): the floating-point operations
differ, so candidates can differ in their last bits, and an optimizer can amplify that.

The kernel's hyperparameters must not change while the acquisition function is used:
the cached blocks (detached) would go stale. This holds in Ax, which builds the
acquisition function after the fit and optimizes it once.

The noise enters only the caches :math:`\\alpha` and :math:`S` (through
:math:`\\Sigma`), so a learned noise (``GaussianLikelihood``) and a known noise per
training point (``FixedNoiseGaussianLikelihood``: observations with SEMs) are served
alike. Models it cannot serve this way (not a single-output exact GP with one of these
likelihoods, one-to-many input transforms, ensembles and mixtures, multi-output or
batched models) take BoTorch's path, as does ``cache_root=False``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from botorch.acquisition.input_constructors import acqf_input_constructor, construct_inputs_qLogNEI
from botorch.models.gpytorch import GPyTorchModel
from botorch.models.utils import gpt_posterior_settings
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from gpytorch.likelihoods import FixedNoiseGaussianLikelihood, GaussianLikelihood
from gpytorch.models import ExactGP
from linear_operator.operators import DenseLinearOperator
from linear_operator.utils.errors import NanError, NotPSDError
from torch import Tensor

from ax_kernel_discovery._upstream.botorch import input_batch_shape, qLogNEIWithHooks
from ax_kernel_discovery._upstream.gpytorch import prediction_caches


@dataclass
class _BaselineBlocks:
    """What the new rows need and does not change during the optimization."""

    train_inputs: Tensor  # n x d, as the kernel sees them (input-transformed)
    baseline_inputs: Tensor  # n_b x d, input-transformed
    # the index among the training points of the leading baseline points
    baseline_in_train: Tensor | None
    mean_cache: Tensor  # n
    root: Tensor  # n x r, S S^T = (K_TT + Sigma)^-1
    baseline_w: Tensor  # n_b x r, K_BT S
    baseline_mean: Tensor  # n_b, latent posterior mean
    baseline_covar: Tensor  # n_b x n_b, latent posterior covariance


def serves(model: Any) -> bool:
    """Whether :class:`NewRowsqLogNEI` computes ``model``'s new rows itself."""
    if not (isinstance(model, ExactGP) and isinstance(model, GPyTorchModel)):
        return False
    if getattr(model, "num_outputs", None) != 1 or getattr(model, "is_ensemble", False):
        return False
    if input_batch_shape(model) != torch.Size():
        return False
    # a Gaussian likelihood: learned noise, or known noise per training point (SEMs);
    # either enters only the caches alpha and S, not the latent posterior's formulas
    if not isinstance(model.likelihood, (GaussianLikelihood, FixedNoiseGaussianLikelihood)):
        return False
    transform = getattr(model, "input_transform", None)
    if transform is not None and getattr(transform, "is_one_to_many", False):
        return False
    train_inputs: Any = getattr(model, "train_inputs", None) or ()
    return len(train_inputs) == 1 and train_inputs[0].dim() == 2


def _baseline_blocks(model: Any, X_baseline: Tensor) -> _BaselineBlocks | None:
    model.eval()
    with torch.no_grad(), gpt_posterior_settings():
        baseline_inputs = model.transform_inputs(X_baseline)
        baseline = model(baseline_inputs)  # builds the prediction strategy and its caches
        train_inputs = model.train_inputs[0]
        if baseline_inputs.dim() != 2 or train_inputs.dim() != 2:
            return None
        mean_cache, root = prediction_caches(model)
        if mean_cache.dim() != 1 or root.dim() != 2:
            return None
        index = _rows_in(baseline_inputs, train_inputs)
        k_bt = model.covar_module(baseline_inputs, train_inputs).to_dense()
        return _BaselineBlocks(
            train_inputs=train_inputs,
            baseline_inputs=baseline_inputs,
            baseline_in_train=index,
            mean_cache=mean_cache.detach(),
            root=root.detach(),
            baseline_w=(k_bt @ root).detach(),
            baseline_mean=baseline.mean.detach(),
            baseline_covar=baseline.covariance_matrix.detach(),
        )


#: The most elements of the rows that :func:`_rows_in` reads at once (float64: 32 MB).
ROWS_IN_MAX_ELEMENTS = 1 << 22


def _row_keys(x: Tensor, max_elements: int) -> Iterator[bytes]:
    """A digest of each row of ``x``, read ``max_elements`` at a time: rows equal under
    ``==`` have the same (``-0.0`` is read as ``0.0``; a row with a NaN equals none)."""
    step = max(1, max_elements // max(1, x.shape[-1]))
    for start in range(0, x.shape[0], step):
        chunk = x[start : start + step]
        values = chunk.masked_fill(chunk == 0, 0).cpu().numpy()
        for row in values:
            yield hashlib.blake2b(row.tobytes(), digest_size=16).digest()


def _rows_in(
    rows: Tensor, table: Tensor, max_elements: int = ROWS_IN_MAX_ELEMENTS
) -> Tensor | None:
    """The index in ``table`` of each of the leading ``rows`` found there (exact
    equality, ``==``; the first such row of ``table``), or ``None`` when none is; the
    rows after the first not found are taken as not found (an incremental qLogNEI's
    baseline: observed points, then pending).

    Rows are matched by a digest of their values, each match then checked with ``==``:
    ``O((n_b + n) D)`` work, and at most ``max(max_elements, D)`` elements read at once.
    Comparing every row with every row (``n_b x n x D`` booleans) took 1 GB and seconds
    at ``n_b = n = 400``, ``D = 6392`` (issue 30 item 15).
    """
    if rows.dtype != table.dtype:  # compared as == compares them
        dtype = torch.promote_types(rows.dtype, table.dtype)
        rows, table = rows.to(dtype), table.to(dtype)
    where: dict[bytes, list[int]] = {}
    for j, key in enumerate(_row_keys(table, max_elements)):
        where.setdefault(key, []).append(j)
    found: list[int] = []
    for i, key in enumerate(_row_keys(rows, max_elements)):
        match = next((j for j in where.get(key, ()) if bool((rows[i] == table[j]).all())), None)
        if match is None:
            break
        found.append(match)
    return torch.tensor(found, dtype=torch.long, device=rows.device) if found else None


def joint_posterior(
    model: Any, blocks: _BaselineBlocks, X: Tensor, posterior_transform: Any = None
) -> GPyTorchPosterior:
    """The model's posterior over ``cat([X_baseline, X])``, from the cached blocks and
    the new rows: what ``model.posterior(X_full, posterior_transform=...)`` returns."""
    model.eval()
    with gpt_posterior_settings():
        Xt = model.transform_inputs(X)
        batch = Xt.shape[:-2]
        train = blocks.train_inputs.expand(*batch, *blocks.train_inputs.shape)
        k_xt = model.covar_module(Xt, train).to_dense()  # b x q x n
        index = blocks.baseline_in_train
        found = 0 if index is None else index.shape[0]
        parts = [] if index is None else [k_xt[..., index]]
        if found < blocks.baseline_inputs.shape[0]:  # baseline points not trained on
            rest = blocks.baseline_inputs[found:]
            parts.append(model.covar_module(Xt, rest.expand(*batch, *rest.shape)).to_dense())
        k_xb = torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0]
        k_xx = model.covar_module(Xt).to_dense()
        mean_x = model.mean_module(Xt) + (k_xt @ blocks.mean_cache.unsqueeze(-1)).squeeze(-1)
        w_x = k_xt @ blocks.root
        bl = k_xb - w_x @ blocks.baseline_w.transpose(-1, -2)
        br = k_xx - w_x @ w_x.transpose(-1, -2)
        top = torch.cat(
            [
                blocks.baseline_covar.expand(*batch, *blocks.baseline_covar.shape),
                bl.transpose(-1, -2),
            ],
            dim=-1,
        )
        covar = torch.cat([top, torch.cat([bl, br], dim=-1)], dim=-2)
        mean = torch.cat([blocks.baseline_mean.expand(*batch, -1), mean_x], dim=-1)
        mvn = MultivariateNormal(mean, DenseLinearOperator(covar))  # lazy: no Cholesky here
    posterior: Any = GPyTorchPosterior(distribution=mvn)
    X_full = torch.cat(
        [blocks.baseline_inputs.expand(*batch, *blocks.baseline_inputs.shape), Xt], -2
    )
    if hasattr(model, "outcome_transform"):
        posterior = model.outcome_transform.untransform_posterior(posterior, X=X_full)
    if posterior_transform is not None:
        posterior = posterior_transform(posterior=posterior, X=X_full)
    return posterior


class NewRowsqLogNEI(qLogNEIWithHooks):
    """``qLogNoisyExpectedImprovement`` whose joint posterior at each evaluation is
    computed from cached baseline blocks and the ``q`` new rows (see the module
    docstring); everything else is BoTorch's."""

    _new_rows: _BaselineBlocks | None = None

    def baseline_changed(self) -> None:
        # BoTorch calls this at construction and whenever the pending points change
        # (incremental qLogNEI appends them to the baseline): the blocks follow
        self._new_rows = None
        if self.caches_root and serves(self.model):
            try:
                self._new_rows = _baseline_blocks(self.model, self.X_baseline)
            except (NanError, NotPSDError):
                self._new_rows = None

    def samples_and_objectives(self, X: Tensor) -> tuple[Tensor, Tensor] | None:
        blocks = self._new_rows
        if blocks is None or X.dim() < 2:
            return None  # BoTorch's own
        q = X.shape[-2]
        posterior = joint_posterior(self.model, blocks, X, self.posterior_transform)
        samples = self.joint_samples(posterior, q)
        obj = self.objective(samples, X=X)
        return samples, obj


# Ax builds a BoTorch acquisition function's inputs with the constructor registered for
# its class: this one takes qLogNEI's.
acqf_input_constructor(NewRowsqLogNEI)(construct_inputs_qLogNEI)

__all__ = ["NewRowsqLogNEI", "joint_posterior", "serves"]
