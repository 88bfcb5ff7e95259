"""The installed package's version, read from its metadata (``pyproject.toml``)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("ax-kernel-discovery")
except PackageNotFoundError:  # a source tree on sys.path that was never installed
    __version__ = "0+unknown"
