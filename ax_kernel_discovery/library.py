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

The library's parts sit by what they depend on, and this module gathers them: the file
(format, reading and writing, checksums, validation of each kernel before use, the
start set of a population) is :mod:`~ax_kernel_discovery.library_format`, a low module
that the configuration and the surrogate use; export from a run sits with the rest of
what reads a run, in :mod:`~ax_kernel_discovery.analysis`; a kernel's ``ModelConfig`` and
its fixed-kernel ``GenerationStrategy`` sit with the other strategy builders, in
:mod:`~ax_kernel_discovery.strategy`.

Example:
    >>> kernels = export_kernels("run.json", top=3)  # doctest: +SKIP
    >>> save_kernels(kernels, "kernels.json")  # doctest: +SKIP
    >>> best = load_kernels("kernels.json")[0]  # doctest: +SKIP
    >>> client.set_generation_strategy(fixed_kernel_generation_strategy(best))  # doctest: +SKIP
"""

from __future__ import annotations

from ax_kernel_discovery.analysis import export_kernels
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
    validate_start_kernels,
)
from ax_kernel_discovery.strategy import fixed_kernel_generation_strategy, model_config_for

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
    "validate_start_kernels",
]
