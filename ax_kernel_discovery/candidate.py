"""A candidate kernel: what the population holds and what proposers return.

A candidate is data, not code that runs on import: a readable ``formula`` (what the
LLM prompts and the reports show) plus exactly one way to build the GPyTorch kernel:

* ``spec``: an expression tree over the package's own trusted kernels and input warps
  (see :mod:`ax_kernel_discovery.expression`), used by the base set and the offline
  evolution operator;
* ``code``: the source of a ``gpytorch.kernels.Kernel`` subclass written by an LLM.
  It is untrusted and is only ever loaded through :mod:`ax_kernel_discovery.sandbox`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Origin = Literal["base", "offline", "discovery", "composition", "direct", "repair", "baseline"]


class KernelCandidate(BaseModel):
    """A kernel that may join the population.

    Args:
        name: Short unique name (used in reports and as the population key).
        formula: The covariance function as readable math (plain text / LaTeX-ish).
        origin: Where it came from: ``base`` (start set), ``offline`` (offline
            evolution operator), ``discovery``/``composition``/``direct``/``repair``
            (LLM proposers), ``baseline`` (fixed-kernel baselines).
        parents: Names of the members it was made from.
        spec: Expression tree of trusted building blocks (exclusive with ``code``).
        code: Source of a GPyTorch ``Kernel`` subclass (exclusive with ``spec``).
        class_name: Name of the class to take from ``code`` (first Kernel subclass if None).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    formula: str
    origin: Origin = "base"
    parents: tuple[str, ...] = ()
    spec: dict[str, Any] | None = None
    code: str | None = None
    class_name: str | None = None

    @model_validator(mode="after")
    def _one_builder(self) -> KernelCandidate:
        if (self.spec is None) == (self.code is None):
            raise ValueError("a KernelCandidate needs exactly one of `spec` or `code`")
        return self

    @property
    def key(self) -> str:
        """Content hash of what builds the kernel (formula text excluded)."""
        payload = json.dumps(self.spec, sort_keys=True) if self.spec is not None else self.code
        return hashlib.sha256(str(payload).encode()).hexdigest()[:16]


class Rejection(BaseModel):
    """Why a proposed kernel did not join the population."""

    name: str
    stage: str = Field(description="proposal | parse | sandbox | validation | fit | duplicate")
    reason: str
    formula: str | None = None
