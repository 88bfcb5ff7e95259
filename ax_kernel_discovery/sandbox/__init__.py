"""Isolation of untrusted kernel source written by an LLM.

Kernel classes proposed by an LLM are Python source. They are never imported; they go
through three layers:

1. :func:`check_source`, a static AST allowlist. Imports only of ``torch`` (and the
   submodules ``nn``, ``nn.functional``, ``nn.init``, ``linalg``, ``special``, ``fft``,
   ``autograd``), ``gpytorch`` (``kernels``, ``kernels.kernel``, ``constraints``,
   ``priors``, ``settings``, ``functions``), ``math`` and a few names of ``typing``. No ``global``/``nonlocal``,
   ``yield``, ``async``, ``match``, star or relative imports, bare ``except``, class
   keywords (metaclasses), class decorators, or method decorators other than
   ``property``/``staticmethod``/``classmethod``/``x.setter``; a class body holds only
   methods, a docstring and constant attributes. No names or attributes that start with
   ``__`` (except ``__init__``), no dangerous builtins (``eval``, ``exec``, ``open``,
   ``getattr``, ``type``, ``object``, ...), and a denylist of attributes that reach
   files, processes, pickles, frames, raw memory or process-wide state (``load``,
   ``save``, ``from_file``, ``hub``, ``ops``, ``os``, ``sys``, ``environ``,
   ``gi_frame``, ``f_globals``, ``as_strided``, ``set_*``, ``manual_seed``,
   ``format``, ...). ``self`` is privileged in methods: only ``self._private``
   attributes may be read (GPyTorch code calls ``self._set_lengthscale``) and only
   ``self.x = ...`` (one level deep) may be assigned; ``self`` can never be rebound.
2. :func:`load_kernel_class` ``exec``s the checked source with a restricted
   ``__builtins__`` (:data:`SAFE_BUILTINS`) whose ``__import__`` hands out read-only
   proxies of the allowed modules; a proxy refuses private names, denylisted names and
   any submodule that is not allowed (so ``torch.os`` or ``typing.sys`` do not leak).
   Its ``__build_class__`` makes every method check that its first argument is an
   instance of its class, so ``K.patch(torch.Tensor)`` cannot turn ``self.x = ...``
   into a monkey-patch of torch.
3. :func:`run_isolated` runs the loading and :func:`~ax_kernel_discovery.validation.check_kernel`
   in a child process: ``python -I`` (no ``PYTHON*`` variables, no user site), a clean
   environment (no API keys: see :func:`_child_env`), a fresh temporary working
   directory and ``HOME``, resource limits (address space, CPU time, file size, open
   files, no core dumps), a wall-clock limit after which the whole process group is
   killed, and output through files in the temporary directory. Whatever happens in
   the child (exceptions, crashes, signals, exhausted limits, garbage output) comes
   back as a :class:`~ax_kernel_discovery.validation.ValidationResult` with
   ``ok=False``; nothing is raised into the caller.

What it protects against: honest mistakes and sloppy or mildly hostile LLM output:
reading files or environment variables (API keys), writing files, spawning processes,
network access through Python, unpickling, monkey-patching the host's modules or global
torch settings, infinite loops, huge allocations and crashes taking the host down.

What it does not: it is *not* a security boundary against a determined attacker.
CPython object graphs are large and a static filter cannot prove the absence of every
escape route; torch ops run native code that can be crashed or, with a memory
corruption bug, exploited; the rlimits do not restrict syscalls or the network. Once a
kernel passed validation, :func:`load_kernel_class` also runs its (checked) source in
the host process, where only layers 1-2 apply: a kernel that is slow or huge only on
other inputs, or that mutates a public container of an allowed module (``x[k] = v``),
is not stopped there. Run untrusted proposals inside a
container or VM (no network, read-only file system, no secrets mounted) when that
matters.

Why the limits are set in the child rather than with ``preexec_fn``: ``preexec_fn`` is
unsafe when the parent has threads (torch and LiteLLM start some), and the child
applies the limits before importing anything or reading the untrusted code, which
gives the same protection.

Modules, one concept each:

* :mod:`~ax_kernel_discovery.sandbox.errors`: :class:`UnsafeCodeError`;
* :mod:`~ax_kernel_discovery.sandbox.policy`: allowed modules, forbidden names and
  attributes;
* :mod:`~ax_kernel_discovery.sandbox.checker`: the static check (layer 1);
* :mod:`~ax_kernel_discovery.sandbox.restricted`: safe builtins and module proxies
  (layer 2), used by :mod:`~ax_kernel_discovery.sandbox.loader`;
* :mod:`~ax_kernel_discovery.sandbox.isolation`: the child process (layer 3);
* :mod:`~ax_kernel_discovery.sandbox.validate`: :func:`validate_kernel_code`, the
  validation checks on untrusted source, run in that child.
"""

from __future__ import annotations

from ax_kernel_discovery.sandbox.checker import check_source
from ax_kernel_discovery.sandbox.errors import UnsafeCodeError
from ax_kernel_discovery.sandbox.isolation import run_isolated
from ax_kernel_discovery.sandbox.loader import load_kernel_class
from ax_kernel_discovery.sandbox.policy import ALLOWED_MODULES
from ax_kernel_discovery.sandbox.restricted import SAFE_BUILTINS
from ax_kernel_discovery.sandbox.validate import validate_kernel_code

__all__ = [
    "ALLOWED_MODULES",
    "SAFE_BUILTINS",
    "UnsafeCodeError",
    "check_source",
    "load_kernel_class",
    "run_isolated",
    "validate_kernel_code",
]
