"""The CAKE baseline inside the kernel-discovery loop (method ``cake``).

:class:`CakeSurrogate` is a :class:`~ax_kernel_discovery.KernelDiscoverySurrogate` with

* the :class:`~ax_kernel_discovery.proposers.cake.CakeProposer` (LLM crossover and
  mutation of compositions of SE, PER, LIN, RQ, M32, M52, at most 3 base kernels);
* the six base kernels as the initial population;
* fitness by BIC (``config.criterion`` is forced to ``"bic"``; no guard round and no kept
  kernels), the top ``population_size`` survive, no strike rule (``strike_rule="none"``);
* a truncated view of each round's observations handed to the proposer (CAKE's
  prompts contain data; kernel discovery's do not).

The LLM is reached through the same :class:`~ax_kernel_discovery.llm.client.LLMClient`
as kernel discovery (``llm_model``: an API model, an OpenAI-compatible server, or
``"local"`` for a GGUF model run in-process by llama.cpp, the [local] extra). Without any model configured the
method refuses to start (:func:`check_cake_config`); with a model that cannot be
reached, each round's proposal is a recorded rejection and the round only re-scores
the population, so the run degrades to a BIC choice among the base kernels (and
earlier accepted compositions) instead of stopping.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ax.core.search_space import SearchSpaceDigest
from ax.generators.torch.botorch_modular.utils import ModelConfig
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.models.model import Model
from botorch.utils.datasets import SupervisedDataset

from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.config import KernelDiscoveryConfig
from ax_kernel_discovery.proposers.cake import CakeProposer, cake_start_candidates
from ax_kernel_discovery.proposers.from_config import llm_client_kwargs
from ax_kernel_discovery.storage import register_surrogate_class
from ax_kernel_discovery.surrogate.core import KernelDiscoverySurrogate

__all__ = ["CAKE_DEFAULTS", "CakeSurrogate", "NoLLMError", "check_cake_config"]

#: Defaults of CAKE's :class:`KernelDiscoveryConfig`.
CAKE_DEFAULTS: dict[str, Any] = {"population_size": 10, "proposals_per_round": 4}


class NoLLMError(ValueError):
    """``cake`` was asked for without any LLM to run it."""


def check_cake_config(config: KernelDiscoveryConfig) -> None:
    """Raise :class:`NoLLMError` with what to do when no LLM model is configured."""
    if not (config.llm_model or os.environ.get("AXKD_LLM_MODEL")):
        raise NoLLMError(
            "method 'cake' needs an LLM: pass --llm MODEL (a litellm model string, or 'local' "
            "for a GGUF model run in-process by llama.cpp, the [local] extra), or set llm_model in the config or $AXKD_LLM_MODEL"
        )


class CakeSurrogate(KernelDiscoverySurrogate):
    """CAKE (Suwandi et al., 2025): LLM-evolved compositional kernels, chosen by BIC.

    Args:
        config: Settings; ``criterion`` is set to ``"bic"``; the ``llm_*`` fields say
            which model runs CAKE.
        state: Saved state (from Ax's JSON storage).
        max_rows: Observations shown to the LLM each round (the most recent).
        max_dims: Coordinates shown per observation.
        **kwargs: Passed to :class:`~ax_kernel_discovery.KernelDiscoverySurrogate`.

    Example:
        >>> s = CakeSurrogate(KernelDiscoveryConfig(llm_model="gpt-4o"))
        >>> [m.name for m in s.population], s.config.criterion
        (['SE', 'PER', 'LIN', 'RQ', 'M32', 'M52'], 'bic')
    """

    #: BoTorch's qLogNEI, as in the study's runs of this baseline.
    fixed_acqf_class = qLogNoisyExpectedImprovement

    def __init__(
        self,
        config: KernelDiscoveryConfig | Mapping[str, Any] | None = None,
        state: Mapping[str, Any] | None = None,
        max_rows: int = 20,
        max_dims: int = 8,
        **kwargs: Any,
    ) -> None:
        if config is None:
            config = KernelDiscoveryConfig(**CAKE_DEFAULTS)
        # "llm" keeps the surrogate's LLM paths (prefetch); the fallback stays off
        config = KernelDiscoveryConfig.coerce(config).model_copy(
            update={
                "criterion": "bic",
                "proposer": "llm",
                "fallback_to_offline": False,
                "guard_rounds": 0,
                "keep_kernels": (),
                "strike_rule": "none",
            }
        )
        self.max_rows = int(max_rows)
        self.max_dims = int(max_dims)
        super().__init__(
            config=config,
            state=state,
            start_candidates=cake_start_set,
            proposer_factory=self.cake_proposer,
            **kwargs,
        )

    @property
    def needs_llm(self) -> bool:
        """CAKE always proposes with an LLM."""
        return True

    def cake_proposer(self, config: KernelDiscoveryConfig) -> CakeProposer:
        """The proposer factory: CAKE's LLM operator on ``config``'s model."""
        return CakeProposer(
            config.llm_model,
            max_rows=self.max_rows,
            max_dims=self.max_dims,
            seed=config.seed,
            hdbo_guidance=False,
            feedback_rounds=config.feedback_rounds,
            client_kwargs=llm_client_kwargs(config),
        )

    def model_selection(
        self,
        dataset: SupervisedDataset,
        model_configs: list[ModelConfig],
        search_space_digest: SearchSpaceDigest,
        candidate_metadata: Any = None,
    ) -> tuple[Model, ModelConfig]:
        """Hand the round's observations to CAKE's proposer, then run the round."""
        proposer = self.proposer
        if isinstance(proposer, CakeProposer):
            proposer.observe(dataset.X.detach().cpu(), dataset.Y.detach().cpu())
        return super().model_selection(
            dataset, model_configs, search_space_digest, candidate_metadata
        )

    def serialize_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        kwargs = super().serialize_kwargs(kwargs)
        kwargs["max_rows"] = self.max_rows
        kwargs["max_dims"] = self.max_dims
        return kwargs


def cake_start_set(config: KernelDiscoveryConfig, dim: int | None) -> list[KernelCandidate]:
    """CAKE's start set: its six base kernels, whatever ``config`` and ``dim``."""
    return cake_start_candidates()


register_surrogate_class(CakeSurrogate)
