"""BoTorch internals that kernel discovery relies on (checked on botorch 0.18.1).

See ``ax_kernel_discovery._upstream`` for why they are gathered here.
"""

from __future__ import annotations

from typing import Any

import torch
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from torch import Tensor


def input_batch_shape(model: Any) -> torch.Size:
    """The batch shape of ``model``'s training inputs (``torch.Size()`` if it keeps none).

    BoTorch's ``BatchedMultiOutputGPyTorchModel`` (``SingleTaskGP`` among them) keeps it
    in ``_input_batch_shape``, set from the training inputs in ``_set_dimensions``.
    """
    return getattr(model, "_input_batch_shape", torch.Size())


def has_jax() -> bool:
    """Whether BoTorch's fully Bayesian (SAAS) models can run: JAX and NumPyro import.

    ``botorch.models.fully_bayesian`` sets the module flag ``_HAS_JAX`` when it imports
    (``False`` when ``jax``/``numpyro`` are missing).
    """
    from botorch.models import fully_bayesian

    return bool(getattr(fully_bayesian, "_HAS_JAX", False))


class EnsembleWithoutCachedRoot:
    """Class flags BoTorch reads from a model by their private names (a mixin for a
    ``botorch.models.model.Model`` subclass).

    ``_is_ensemble = True``: ``botorch.cross_validation.efficient_loo_cv`` and friends
    dispatch to ``ensemble_loo_cv`` (``getattr(model, "_is_ensemble", False)``).
    ``_supports_cache_root = False``: ``botorch.acquisition.cached_cholesky.supports_cache_root``
    answers ``False``, so qLogNEI does not cache the baseline's root decomposition.
    """

    _is_ensemble = True
    _supports_cache_root = False


class qLogNEIWithHooks(qLogNoisyExpectedImprovement):
    """BoTorch's ``qLogNoisyExpectedImprovement`` with its private steps behind public
    hooks; a subclass overrides :meth:`baseline_changed` and :meth:`samples_and_objectives`.

    It relies on qLogNEI calling ``_init_baseline`` at construction and whenever the
    pending points change (``set_X_pending``), and ``_get_samples_and_objectives(X)`` in
    ``forward``; on ``CachedCholeskyMCSamplerMixin`` keeping ``_cache_root``, and on its
    ``_set_sampler(q_in, posterior)`` and ``_get_f_X_samples(posterior, q_in)``.
    """

    def _init_baseline(self, *args: Any, **kwargs: Any) -> None:
        super()._init_baseline(*args, **kwargs)
        self.baseline_changed()

    def baseline_changed(self) -> None:
        """Called after BoTorch (re)initialized the baseline (``X_baseline`` is set)."""

    def _get_samples_and_objectives(self, X: Tensor) -> tuple[Tensor, Tensor]:
        out = self.samples_and_objectives(X)
        return super()._get_samples_and_objectives(X) if out is None else out

    def samples_and_objectives(self, X: Tensor) -> tuple[Tensor, Tensor] | None:
        """The samples and objectives at ``X`` (``None``: BoTorch's own computation)."""
        return None

    @property
    def caches_root(self) -> bool:
        """Whether BoTorch caches the baseline's root decomposition (``_cache_root``)."""
        return bool(self._cache_root)

    def joint_samples(self, posterior: Any, q: int) -> Tensor:
        """Samples of the joint ``posterior`` of the baseline and ``q`` new points, drawn
        as BoTorch's own step draws them (``_set_sampler``, then ``_get_f_X_samples``)."""
        self._set_sampler(q_in=q, posterior=posterior)
        return self._get_f_X_samples(posterior=posterior, q_in=q)


__all__ = ["EnsembleWithoutCachedRoot", "has_jax", "input_batch_shape", "qLogNEIWithHooks"]
