"""Moved to :mod:`ax_kernel_discovery.runner.executors`; this path works until the next release.

Importing a name from here warns with a :class:`DeprecationWarning`.
"""

from ax_kernel_discovery._deprecated import moved_module

__getattr__ = moved_module(__name__, "ax_kernel_discovery.runner.executors")
