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

import base64
import hashlib
import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ax_kernel_discovery.expression import acquisition_cost, build_kernel
from ax_kernel_discovery.sandbox import load_kernel_class

if TYPE_CHECKING:
    from gpytorch.kernels import Kernel

Origin = Literal[
    "base", "offline", "discovery", "composition", "direct", "repair", "baseline", "library"
]


class KernelCandidate(BaseModel):
    """A kernel that may join the population.

    Args:
        name: Short unique name (used in reports and as the population key).
        formula: The covariance function as readable math (plain text / LaTeX-ish).
        origin: Where it came from: ``base`` (start set), ``offline`` (offline
            evolution operator), ``discovery``/``composition``/``direct``/``repair``
            (LLM proposers), ``baseline`` (fixed-kernel baselines), ``library`` (a start
            kernel from a kernel library, see :mod:`ax_kernel_discovery.library`).
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
        payload = (
            json.dumps(_canonical(self.spec), sort_keys=True)
            if self.spec is not None
            else self.code
        )
        return hashlib.sha256(str(payload).encode()).hexdigest()[:16]

    @property
    def acquisition_cost(self) -> int:
        """Proxy of the kernel's cost per acquisition step (see
        :func:`ax_kernel_discovery.expression.acquisition_cost`); code kernels count 4."""
        if self.spec is None:
            return 4
        return acquisition_cost(self.spec)

    def build(self, dim: int) -> Kernel:
        """Build the GPyTorch kernel for inputs of dimension ``dim`` (with output scale).

        Code candidates are loaded through the sandbox's restricted loader; callers
        must have validated the code first (see :mod:`ax_kernel_discovery.validation`).
        """
        if self.spec is not None:
            return build_kernel(self.spec, dim)
        from gpytorch.kernels import ScaleKernel

        return ScaleKernel(load_code_class(str(self.code), self.class_name)(ard_num_dims=dim))


_KEY_BYTES = 8  # a key is 16 hex characters


def encode_keys(keys: Iterable[str]) -> str:
    """Content keys (:attr:`KernelCandidate.key`) -> base64 of their bytes (sorted:
    deterministic), 8 bytes a key: how proposers save the keys they have seen."""
    return base64.b64encode(b"".join(bytes.fromhex(k) for k in sorted(keys))).decode("ascii")


def decode_keys(encoded: str) -> set[str]:
    """Inverse of :func:`encode_keys`."""
    raw = base64.b64decode(encoded)
    return {raw[i : i + _KEY_BYTES].hex() for i in range(0, len(raw), _KEY_BYTES)}


def _canonical(spec: Any) -> Any:
    """Spec with the arguments of commutative operators sorted (a + b == b + a)."""
    if isinstance(spec, dict) and "op" in spec:
        args = sorted(
            (_canonical(a) for a in spec["args"]), key=lambda a: json.dumps(a, sort_keys=True)
        )
        return {**spec, "args": args}
    return spec


_CLASS_CACHE: dict[tuple[str, str | None], type] = {}


def load_code_class(code: str, class_name: str | None = None) -> type:
    """Load (once) the kernel class of untrusted ``code`` with restricted builtins."""
    key = (hashlib.sha256(code.encode()).hexdigest(), class_name)
    if key not in _CLASS_CACHE:
        _CLASS_CACHE[key] = load_kernel_class(code, class_name)
    return _CLASS_CACHE[key]


class Rejection(BaseModel):
    """Why a proposed kernel did not join the population."""

    name: str
    stage: str = Field(description="proposal | parse | sandbox | validation | fit | duplicate")
    reason: str
    formula: str | None = None
