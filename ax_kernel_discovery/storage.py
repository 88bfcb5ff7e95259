"""Registrations that let Ax's JSON and SQL storage save and reload kernel discovery.

Called once on import of :mod:`ax_kernel_discovery`. After that,
``Client.save_to_json_file`` / ``load_from_json_file`` and a ``Client`` with a
``StorageConfig`` (Ax's SQL store, which needs SQLAlchemy: the ``[sql]`` extra) keep the
configuration, the population, the history and what the next round needs (warm
starts, the last choice, the proposer's dedup keys) of a
:class:`~ax_kernel_discovery.KernelDiscoverySurrogate`: a reloaded run continues as an
uninterrupted one would.

**One full copy per file.** Ax stores the generator's keyword arguments with every
generator run, and they hold the surrogate, the same object each round: written in full,
every trial would carry a copy of the whole state (the SQL store keeps one per row, the
JSON file three per generator run, all of the latest state). So the surrogate is written
in full only among the generation strategy node's generator specs (what a reload
continues from); each generator run, and the node's cached "spec to generate from"
(which Ax does not read back), keep a record of it: configuration, chosen model config,
round.

Example:
    >>> from ax_kernel_discovery.storage import prepare_sql_storage
    >>> storage_config = prepare_sql_storage("sqlite:///runs.db")  # doctest: +SKIP
    >>> client = Client(storage_config=storage_config)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ax.generation_strategy.generation_node import GenerationNode
from ax.storage.botorch_modular_registry import (
    register_acquisition,
    register_acquisition_function,
    register_kernel,
    register_model,
)
from ax.storage.json_store.encoders import (
    generation_node_to_dict,
    generator_spec_to_dict,
    pausing_criterion_to_dict,
    surrogate_to_dict,
)
from ax.storage.json_store.registry import CORE_DECODER_REGISTRY, CORE_ENCODER_REGISTRY
from ax.storage.transform_registry import register_transform

from ax_kernel_discovery.gp import KernelDiscoveryGP
from ax_kernel_discovery.strategy import SobolHandOver
from ax_kernel_discovery.surrogate.acquisition import KernelDiscoveryAcquisition
from ax_kernel_discovery.surrogate.core import KernelDiscoverySurrogate
from ax_kernel_discovery.surrogate.discovered import DiscoveredKernel
from ax_kernel_discovery.surrogate.new_rows_qlognei import NewRowsqLogNEI
from ax_kernel_discovery.surrogate.trial_rows import ShareRows
from ax_kernel_discovery.transforms import KeepNonFiniteOut

if TYPE_CHECKING:
    from ax.api.configs import StorageConfig

_DONE = False

__all__ = ["prepare_sql_storage", "register_storage", "register_surrogate_class"]


def surrogate_record_to_dict(surrogate: KernelDiscoverySurrogate) -> dict[str, Any]:
    """A generator run's copy: configuration, chosen model config, round; no state."""
    with surrogate.record_only():
        return surrogate_to_dict(surrogate)


def generation_node_with_state_to_dict(node: GenerationNode) -> dict[str, Any]:
    """Ax's ``generation_node_to_dict``; a kernel-discovery surrogate of the node's
    generator specs (what a reload continues from) is written in full. A node that holds
    no kernel-discovery surrogate gets Ax's own encoding, unchanged."""
    out = generation_node_to_dict(node)
    if not any(
        isinstance((spec.generator_kwargs or {}).get("surrogate"), KernelDiscoverySurrogate)
        for spec in node.generator_specs
    ):
        return out
    specs = []
    for spec in out["generator_specs"]:
        spec_dict = generator_spec_to_dict(spec)
        kwargs = spec_dict.get("generator_kwargs") or {}
        surrogate = kwargs.get("surrogate")
        if isinstance(surrogate, KernelDiscoverySurrogate):
            spec_dict["generator_kwargs"] = {**kwargs, "surrogate": surrogate_to_dict(surrogate)}
        specs.append(spec_dict)
    out["generator_specs"] = specs
    return out


def register_surrogate_class(cls: type[KernelDiscoverySurrogate]) -> None:
    """Register a :class:`KernelDiscoverySurrogate` (sub)class with Ax's storage."""
    CORE_ENCODER_REGISTRY[cls] = surrogate_record_to_dict
    CORE_DECODER_REGISTRY[cls.__name__] = cls


def register_storage() -> None:
    """Register the surrogate, its kernel class, acquisition (and acquisition function,
    :class:`~ax_kernel_discovery.surrogate.new_rows_qlognei.NewRowsqLogNEI`) and the Sobol node's cap
    (:class:`~ax_kernel_discovery.strategy.SobolHandOver`) with Ax (idempotent)."""
    global _DONE
    if _DONE:
        return
    register_kernel(DiscoveredKernel)
    register_transform(KeepNonFiniteOut)
    register_transform(ShareRows)
    register_model(KernelDiscoveryGP)
    register_acquisition(KernelDiscoveryAcquisition)
    register_acquisition_function(NewRowsqLogNEI)
    register_surrogate_class(KernelDiscoverySurrogate)
    CORE_ENCODER_REGISTRY[GenerationNode] = generation_node_with_state_to_dict
    CORE_ENCODER_REGISTRY[SobolHandOver] = pausing_criterion_to_dict
    CORE_DECODER_REGISTRY[SobolHandOver.__name__] = SobolHandOver
    _DONE = True


def prepare_sql_storage(url: str) -> StorageConfig:
    """Connect Ax's SQL store to ``url``, create its tables if needed, return the config.

    Ax's ``Client(storage_config=StorageConfig(url=...))`` saves to an existing
    database but does not create Ax's tables. Ax keeps one engine per process: this
    (re)binds it to ``url``.

    Args:
        url: A SQLAlchemy database URL, e.g. ``"sqlite:///runs.db"``.

    Returns:
        ``StorageConfig(url=url)`` for ``Client(storage_config=...)`` and
        ``Client.load_from_database``.

    Raises:
        ImportError: SQLAlchemy is missing (``pip install sqlalchemy tabulate``, or
            ``pip install ".[sql]"`` in a clone of the package).
    """
    try:
        from ax.storage.sqa_store.db import (
            create_all_tables,
            get_engine,
            init_engine_and_session_factory,
        )
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "Ax's SQL storage needs SQLAlchemy, which is not installed: pip install "
            "'sqlalchemy>=2.0,<3' tabulate (or, in a clone of ax-kernel-discovery, "
            "pip install '.[sql]')"
        ) from e
    from ax.api.configs import StorageConfig

    init_engine_and_session_factory(url=url, force_init=True)
    create_all_tables(get_engine())
    return StorageConfig(url=url)
