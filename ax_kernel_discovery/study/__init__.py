"""The quality study: which methods, problems and seeds, and what their runs show.

* :mod:`~ax_kernel_discovery.study.report`: ``summary.json`` and the report of a study
  folder (tables, paired comparisons, diagnostics);
* :mod:`~ax_kernel_discovery.study.markdown`: the report's Markdown;
* :mod:`~ax_kernel_discovery.study.protocol`: the protocol (:data:`STUDY`) and
  :func:`run_study`;
* :mod:`~ax_kernel_discovery.study.diagnostics`: why a method won or lost (kernel
  families, next-batch calibration);
* :mod:`~ax_kernel_discovery.study.statistics`: paired t-intervals, exact sign and
  permutation tests.
"""

from __future__ import annotations

from ax_kernel_discovery.study.protocol import (
    DEFAULT_OUT,
    STUDY,
    VARIANT_METHODS,
    StudyProtocol,
    run_study,
    study_configs,
)

__all__ = [
    "DEFAULT_OUT",
    "STUDY",
    "VARIANT_METHODS",
    "StudyProtocol",
    "run_study",
    "study_configs",
]
