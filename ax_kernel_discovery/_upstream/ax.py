"""Ax internals that kernel discovery relies on (checked on ax-platform 1.3.1).

See ``ax_kernel_discovery._upstream`` for why they are gathered here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pandas as pd
from ax.analysis.analysis import Analysis
from ax.core.analysis_card import AnalysisCard, AnalysisCardBase, AnalysisCardGroup
from ax.core.generator_run import GeneratorRun
from ax.generation_strategy.generation_node import GenerationNode
from ax.generation_strategy.generation_strategy import GenerationStrategy
from ax.generators.torch.botorch_modular.acquisition import Acquisition
from ax.generators.torch.botorch_modular.surrogate import Surrogate
from botorch.acquisition import AcquisitionFunction
from botorch.models.model import Model
from torch import Tensor

#: ``Surrogate._construct_model(dataset, search_space_digest, model_config, state_dict,
#: refit)``: builds the BoTorch model of one dataset with the surrogate's transforms and
#: priors, fits it unless ``refit`` is false, and caches it per outcome.
ModelBuilder = Callable[..., Model]

# -- Surrogate ----------------------------------------------------------------------------


def model_builder(surrogate: Surrogate) -> ModelBuilder:
    """``surrogate``'s own ``Surrogate._construct_model`` (bound): what Ax's
    ``Surrogate.fit`` calls per dataset, keyword arguments ``dataset``,
    ``search_space_digest``, ``model_config``, ``state_dict`` and ``refit``."""
    return surrogate._construct_model


def fresh_model_builder() -> ModelBuilder:
    """``_construct_model`` of a new default ``Surrogate()``: the same model building,
    without the caller's per-outcome cache (``_submodels``), which would otherwise hand
    back a model fitted earlier on equal data."""
    return Surrogate()._construct_model


def builds_with_ax(surrogate: Surrogate, build: ModelBuilder) -> bool:
    """Whether ``build`` is ``surrogate``'s ``_construct_model`` and that is Ax's own
    (a subclass may override ``Surrogate._construct_model``)."""
    return (
        type(surrogate)._construct_model is Surrogate._construct_model
        and build == surrogate._construct_model
    )


def forget_datasets(surrogate: Surrogate, outcome_names: tuple[str, ...]) -> None:
    """Drop ``surrogate``'s cached model and dataset of ``outcome_names``, so that Ax's
    next ``_construct_model`` on that dataset builds and fits again (Ax keeps them in
    ``_submodels`` and ``_last_datasets``, keyed by the outcome names' tuple)."""
    surrogate._submodels.pop(outcome_names, None)  # type: ignore[arg-type]
    surrogate._last_datasets.pop(outcome_names, None)  # type: ignore[arg-type]


def serialized_kwargs(surrogate: Surrogate) -> dict[str, Any]:
    """The keyword arguments that rebuild ``surrogate`` (Ax's storage and
    ``Surrogate.clone_reset`` call ``_serialize_attributes_as_kwargs``)."""
    return surrogate._serialize_attributes_as_kwargs()


class HookedSurrogate(Surrogate):
    """Ax's ``Surrogate`` whose private serialization hook is public:
    :meth:`serialize_kwargs` extends what Ax's ``_serialize_attributes_as_kwargs``
    returns (JSON and SQL storage and ``clone_reset`` rebuild the surrogate from it)."""

    def _serialize_attributes_as_kwargs(self) -> dict[str, Any]:
        return self.serialize_kwargs(super()._serialize_attributes_as_kwargs())

    def serialize_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments to store, given Ax's own ``kwargs``."""
        return kwargs


# -- Acquisition --------------------------------------------------------------------------


def acquisition_model(acquisition: Acquisition) -> Model:
    """The BoTorch model Ax's ``Acquisition`` built its acquisition function on
    (``Acquisition._model``, set in ``__init__`` from the surrogate's model)."""
    return acquisition._model


def condition_on_candidates(
    acquisition: Acquisition, candidates: Tensor, initial_pending: Tensor | None
) -> None:
    """Add ``candidates`` to the pending points of ``acquisition.acqf`` (after the
    initial ones), as Ax's sequential optimization does between its candidates
    (``Acquisition._condition_on_prev_candidates``)."""
    acquisition._condition_on_prev_candidates(candidates, initial_pending)


def construct_botorch_acquisition(
    acquisition: Acquisition,
    botorch_acqf_class: type[AcquisitionFunction],
    botorch_acqf_options: dict[str, Any],
    model: Model,
) -> AcquisitionFunction:
    """A BoTorch acquisition function on ``model``, built with ``acquisition``'s inputs
    (objective, pending points, ...) as Ax builds its own
    (``Acquisition._construct_botorch_acquisition``)."""
    return acquisition._construct_botorch_acquisition(
        botorch_acqf_class=botorch_acqf_class,
        botorch_acqf_options=botorch_acqf_options,
        model=model,
    )


@contextmanager
def botorch_acquisitions_built() -> Iterator[list[AcquisitionFunction]]:
    """Collect every BoTorch acquisition function Ax's ``Acquisition`` builds in the
    block (it builds each through ``Acquisition._construct_botorch_acquisition``)."""
    built: list[AcquisitionFunction] = []
    original = Acquisition._construct_botorch_acquisition

    def spy(self: Acquisition, *args: Any, **kwargs: Any) -> AcquisitionFunction:
        acqf = original(self, *args, **kwargs)
        built.append(acqf)
        return acqf

    Acquisition._construct_botorch_acquisition = spy  # type: ignore[method-assign]
    try:
        yield built
    finally:
        Acquisition._construct_botorch_acquisition = original  # type: ignore[method-assign]


# -- Client, adapter, generator -----------------------------------------------------------


def client_experiment(client: Any) -> Any:
    """The experiment of Ax's ``Client`` (the ``Client._experiment`` property; it raises
    ``AssertionError`` while none is set)."""
    return client._experiment


def client_generation_strategy(client: Any) -> GenerationStrategy:
    """The generation strategy of Ax's ``Client`` (the ``Client._generation_strategy``
    property; Ax has no public accessor; it raises ``AssertionError`` while none is
    set)."""
    return client._generation_strategy


def experiment_of(source: Any) -> Any | None:
    """The experiment Ax's ``Client`` or ``Adapter`` holds (both keep it as
    ``_experiment``), ``None`` where ``source`` has none."""
    return getattr(source, "_experiment", None)


def adapter_training_data(adapter: Any) -> Any | None:
    """The ``ExperimentData`` an Ax ``Adapter`` was fitted on, before its transforms
    (``Adapter._training_data``), ``None`` where ``adapter`` has none."""
    return getattr(adapter, "_training_data", None)


def adapter_optimization_config(adapter: Any) -> Any | None:
    """The optimization config an Ax ``Adapter`` holds, in the metrics' own units
    (``Adapter._optimization_config``), ``None`` where ``adapter`` has none."""
    return getattr(adapter, "_optimization_config", None)


def generator_surrogate(generator: Any) -> Any | None:
    """The ``Surrogate`` of Ax's ``BoTorchGenerator`` (``BoTorchGenerator._surrogate``),
    ``None`` where ``generator`` has none."""
    return getattr(generator, "_surrogate", None)


# -- Generation strategy ------------------------------------------------------------------


def strategy_nodes(strategy: GenerationStrategy) -> list[GenerationNode]:
    """The nodes of ``strategy``, in order (Ax's ``GenerationStrategy._nodes``: the list
    itself, not a copy)."""
    return strategy._nodes


def set_pausing_criteria(node: GenerationNode, criteria: Sequence[Any]) -> None:
    """Replace ``node``'s pausing criteria (``GenerationNode._pausing_criteria``, read by
    its public ``pausing_criteria`` property and its transition checks)."""
    node._pausing_criteria = list(criteria)


def generator_key(run: GeneratorRun) -> str | None:
    """The key of the generator that made ``run`` (``GeneratorRun._generator_key``)."""
    return run._generator_key


def generation_node_name(run: GeneratorRun) -> str | None:
    """The name of the generation node that made ``run``
    (``GeneratorRun._generation_node_name``)."""
    return run._generation_node_name


# -- Analysis -----------------------------------------------------------------------------


def create_analysis_card(
    analysis: Analysis, title: str, subtitle: str, df: pd.DataFrame
) -> AnalysisCard:
    """An ``AnalysisCard`` named after ``analysis``'s class, with ``df`` as its table and
    blob (``Analysis._create_analysis_card``)."""
    return analysis._create_analysis_card(title=title, subtitle=subtitle, df=df)


def create_analysis_card_group(
    analysis: Analysis,
    title: str,
    subtitle: str | None,
    children: Sequence[AnalysisCardBase],
) -> AnalysisCardGroup:
    """An ``AnalysisCardGroup`` named after ``analysis``'s class
    (``Analysis._create_analysis_card_group``)."""
    return analysis._create_analysis_card_group(title=title, subtitle=subtitle, children=children)


__all__ = [
    "HookedSurrogate",
    "ModelBuilder",
    "acquisition_model",
    "adapter_optimization_config",
    "adapter_training_data",
    "botorch_acquisitions_built",
    "builds_with_ax",
    "client_experiment",
    "client_generation_strategy",
    "condition_on_candidates",
    "construct_botorch_acquisition",
    "create_analysis_card",
    "create_analysis_card_group",
    "experiment_of",
    "forget_datasets",
    "fresh_model_builder",
    "generation_node_name",
    "generator_key",
    "generator_surrogate",
    "model_builder",
    "serialized_kwargs",
    "set_pausing_criteria",
    "strategy_nodes",
]
