"""Kernel libraries: keep the kernels a discovery run found, and use them elsewhere.

The paper's transferability study reused a kernel discovered on SVM as a fixed kernel on
the other benchmarks. This module is that path:

1. :func:`export_kernels` takes the best members of a run (a live
   :class:`~ax_kernel_discovery.KernelDiscoverySurrogate`, an Ax ``Client``, or a
   ``Client`` saved with ``save_to_json_file``), each with its name, formula, origin,
   score and the definition that rebuilds it (an expression tree or kernel source);
2. :func:`save_kernels` / :func:`load_kernels` keep them in a versioned JSON file;
3. a kernel then drives any Ax experiment as its only kernel
   (:func:`fixed_kernel_generation_strategy`), goes into a user's own ``SurrogateSpec``
   (:func:`model_config_for`), or seeds a new population
   (``KernelDiscoveryConfig(start_kernels=path_or_list)``).

The file (format, reading and writing, checksums, validation of each kernel before use,
the start set of a population) is :mod:`~ax_kernel_discovery.library_format`, a low
module that the configuration and the surrogate use; its names are re-exported here.
This module adds what needs a run or Ax: export from a surrogate or a saved ``Client``,
a kernel's ``ModelConfig`` and its fixed-kernel ``GenerationStrategy``.

Example:
    >>> kernels = export_kernels("run.json", top=3)  # doctest: +SKIP
    >>> save_kernels(kernels, "kernels.json")  # doctest: +SKIP
    >>> best = load_kernels("kernels.json")[0]  # doctest: +SKIP
    >>> client.set_generation_strategy(fixed_kernel_generation_strategy(best))  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ax.generation_strategy.generation_strategy import GenerationStrategy
from ax.generators.torch.botorch_modular.surrogate import Surrogate, SurrogateSpec

from ax_kernel_discovery.analysis import find_surrogate, load_surrogate
from ax_kernel_discovery.candidate import KernelCandidate
from ax_kernel_discovery.library_format import (
    LIBRARY_FORMAT,
    LIBRARY_VERSION,
    VALIDATION_DIM,
    KernelLibraryError,
    LibraryKernel,
    get_kernel,
    library_entries,
    library_start_candidates,
    load_kernels,
    parse_library,
    save_kernels,
    validate_library_kernel,
)
from ax_kernel_discovery.strategy import AcquisitionOptions, check_num_sobol, sobol_then_botorch
from ax_kernel_discovery.surrogate.core import KernelDiscoverySurrogate, candidate_model_config

if TYPE_CHECKING:
    from ax.generators.torch.botorch_modular.utils import ModelConfig
    from botorch.acquisition import AcquisitionFunction

__all__ = [
    "LIBRARY_FORMAT",
    "LIBRARY_VERSION",
    "VALIDATION_DIM",
    "KernelLibraryError",
    "LibraryKernel",
    "export_kernels",
    "fixed_kernel_generation_strategy",
    "get_kernel",
    "library_entries",
    "library_start_candidates",
    "load_kernels",
    "model_config_for",
    "parse_library",
    "save_kernels",
    "validate_library_kernel",
]

# --------------------------------------------------------------------------- export


def export_kernels(
    source: KernelDiscoverySurrogate | Any | str | os.PathLike[str], top: int = 3
) -> list[LibraryKernel]:
    """The best members of a kernel-discovery run, best first.

    Args:
        source: A :class:`~ax_kernel_discovery.KernelDiscoverySurrogate`, an Ax
            ``Client`` whose strategy holds one, or the path of a ``Client`` saved with
            ``save_to_json_file`` (a result JSON of ``ax-kernel-discovery run`` also
            works: its checkpoint is read).
        top: How many members to export (the population's best scores).

    Returns:
        Up to ``top`` :class:`LibraryKernel` (members that were never scored are left
        out), each with its name, formula, origin, score and definition.

    Raises:
        ValueError: ``top < 1``, no kernel-discovery surrogate in ``source``, or no
            member has a score yet (no BO round has run).
    """
    if top < 1:
        raise ValueError(f"top must be >= 1, got {top}")
    surrogate, experiment = _run_surrogate(source)
    population = surrogate.population
    population.rank()
    outcome = next((k for k, p in surrogate.populations.items() if p is population), None)
    last = next((r for r in reversed(surrogate.history) if r.outcome == outcome), None)
    members = [m for m in population if m.score is not None][:top]
    if not members:
        when = (
            "criterion='prequential' scores a member by its forecast of the next BO batch: "
            "export after at least two BO rounds"
            if surrogate.config.criterion == "prequential"
            else "export after at least one BO round"
        )
        raise ValueError(
            f"{experiment or 'the surrogate'}: no population member has a score yet ({when})"
        )
    return [
        LibraryKernel.from_candidate(
            m.candidate,
            score=m.score,
            criterion=surrogate.config.criterion,
            experiment=experiment,
            dim=last.dim if last is not None else None,
            n_observations=last.n if last is not None else None,
        )
        for m in members
    ]


def _run_surrogate(source: Any) -> tuple[KernelDiscoverySurrogate, str | None]:
    """The surrogate held by ``source`` and a label of where it ran."""
    if isinstance(source, KernelDiscoverySurrogate):
        return source, None
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"no such file: {str(path)!r}")
        checkpoint = _checkpoint_of_result(path)
        return load_surrogate(checkpoint or path), str(path)
    experiment = getattr(getattr(source, "_experiment", None), "name", None)
    return find_surrogate(source), experiment


def _checkpoint_of_result(path: Path) -> Path | None:
    """The Client checkpoint of a runner result JSON, ``None`` for an Ax Client JSON.

    Raises:
        KernelLibraryError: The file is neither (not JSON, a kernel library, other JSON).
    """
    what = (
        "export reads a run: an Ax Client saved with save_to_json_file, or a result JSON "
        "of `ax-kernel-discovery run`"
    )
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise KernelLibraryError(f"{path}: not a JSON file ({e}); {what}") from None
    if isinstance(data, dict) and data.get("format") == LIBRARY_FORMAT:
        raise KernelLibraryError(
            f"{path} is a kernel library, not a run: its kernels are already exported. Use "
            f"them as they are (--method fixed --kernel {path}:NAME, or "
            f"KernelDiscoveryConfig(start_kernels={str(path)!r})); {what}"
        )
    if not isinstance(data, dict) or not ({"experiment", "checkpoint_path"} & set(data)):
        raise KernelLibraryError(f"{path} is not a run; {what}")
    if "checkpoint_path" not in data:
        return None
    checkpoint = Path(str(data["checkpoint_path"]))
    if not checkpoint.is_absolute() and not checkpoint.is_file():
        checkpoint = path.parent / "checkpoints" / checkpoint.name
    if not checkpoint.is_file():
        raise FileNotFoundError(
            f"{path} is a run result; its Ax checkpoint {str(checkpoint)!r} (which holds the "
            "population) is missing"
        )
    return checkpoint


# --------------------------------------------------------------------------- use


def model_config_for(
    kernel: LibraryKernel | KernelCandidate | dict[str, Any] | str,
    fit_timeout: float | None = None,
    maxiter: int | None = None,
) -> ModelConfig:
    """The Ax ``ModelConfig`` of one kernel, for a user's own ``SurrogateSpec``.

    The kernel is validated first (see :func:`validate_library_kernel`).

    Args:
        kernel: A library kernel, a candidate, an entry's dict, or ``"kernels.json:NAME"``.
        fit_timeout: Seconds allowed for each MLL fit (``None``: no limit).
        maxiter: L-BFGS iterations of each fit (``None``: BoTorch's default).

    Example:
        >>> spec = SurrogateSpec(model_configs=[model_config_for("kernels.json:SL")])  # doctest: +SKIP
    """
    entry = get_kernel(kernel)
    validate_library_kernel(entry)
    return candidate_model_config(entry.candidate, fit_timeout, maxiter)


def fixed_kernel_generation_strategy(
    kernel: LibraryKernel | KernelCandidate | dict[str, Any] | str,
    num_sobol: int = 20,
    *,
    seed: int = 0,
    botorch_acqf_class: type[AcquisitionFunction] | None = None,
    num_restarts: int | None = None,
    raw_samples: int | None = None,
    sample_around_best: bool | None = None,
    maxiter: int | None = None,
    device: str | None = None,
    acquisition: AcquisitionOptions | None = None,
) -> GenerationStrategy:
    """Sobol, then BO with one kernel: a library kernel in any Ax experiment.

    The BO step is Ax's plain ``Surrogate`` with the kernel's single ``ModelConfig``
    (so no model selection), with the same acquisition settings as every method of the
    package (:func:`~ax_kernel_discovery.strategy.botorch_step`). The strategy saves
    and loads with Ax's JSON storage.

    Args:
        kernel: A library kernel, a candidate, an entry's dict, or ``"kernels.json:NAME"``;
            validated first (see :func:`validate_library_kernel`).
        num_sobol: Sobol trials before BO (paper: 20).
        seed: Seed of the Sobol step.
        botorch_acqf_class: Acquisition function (default: the acquisition's,
            ``qLogNoisyExpectedImprovement``).
        num_restarts: Acquisition optimizer restarts (default: Ax's).
        raw_samples: Raw samples of the restarts' initialization (default: Ax's).
        sample_around_best: RAASP, sampling around the best points (default: Ax's, off).
        maxiter: L-BFGS-B iterations of the acquisition optimizer (default: BoTorch's).
        device: torch device of the BO step (default ``auto``: CUDA when available).
        acquisition: The acquisition as one
            :class:`~ax_kernel_discovery.strategy.AcquisitionOptions` (default: Ax's
            own); the acquisition arguments above that are given override it.

    Returns:
        A ``GenerationStrategy`` for ``Client.set_generation_strategy``.
    """
    check_num_sobol(num_sobol)  # before the kernel's validation
    entry = get_kernel(kernel)
    surrogate = Surrogate(surrogate_spec=SurrogateSpec(model_configs=[model_config_for(entry)]))
    return sobol_then_botorch(
        surrogate,
        f"Sobol+fixed:{entry.name}",
        num_sobol,
        seed,
        acquisition=acquisition,
        botorch_acqf_class=botorch_acqf_class,
        num_restarts=num_restarts,
        raw_samples=raw_samples,
        sample_around_best=sample_around_best,
        maxiter=maxiter,
        device=device,
        generator_name=f"Fixed-{entry.name}",
    )
