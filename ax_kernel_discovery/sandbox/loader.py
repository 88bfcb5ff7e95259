"""Loading checked kernel source in this process with restricted builtins."""

from __future__ import annotations

import hashlib
from typing import Any

from ax_kernel_discovery._ast_lock import compile_python
from ax_kernel_discovery.errors import KERNEL_CODE_FILE
from ax_kernel_discovery.sandbox.checker import check_source
from ax_kernel_discovery.sandbox.errors import KernelLoadError
from ax_kernel_discovery.sandbox.restricted import SAFE_BUILTINS

__all__ = ["load_kernel_class"]


def _kernel_base() -> type:
    import gpytorch

    return gpytorch.kernels.Kernel


def load_kernel_class(code: str, class_name: str | None = None) -> type:
    """Check and execute kernel source with restricted builtins; return the kernel class.

    Args:
        code: Python source of a module defining a ``gpytorch.kernels.Kernel`` subclass.
        class_name: Class to return; default: the first Kernel subclass defined in ``code``.

    Returns:
        The kernel class (a subclass of :class:`gpytorch.kernels.Kernel`).

    Raises:
        UnsafeCodeError: The source fails :func:`check_source`.
        KernelLoadError: Executing the source failed, or it defines no (such) Kernel
            subclass (a ``ValueError``).
    """
    check_source(code)
    module_name = "axkd_kernel_code_" + hashlib.sha256(code.encode()).hexdigest()[:12]
    namespace: dict[str, Any] = {
        "__builtins__": dict(SAFE_BUILTINS),
        "__name__": module_name,
        "__doc__": None,
    }
    try:
        compiled = compile_python(code, KERNEL_CODE_FILE.format(module_name), "exec")
        exec(compiled, namespace)  # noqa: S102 - checked source, restricted builtins
    except Exception as err:  # noqa: BLE001 - arbitrary code
        msg = str(err).strip().splitlines()
        detail = f"{type(err).__name__}: {msg[0][:300]}" if msg else type(err).__name__
        raise KernelLoadError(f"load: executing the kernel code failed ({detail})") from err
    base = _kernel_base()
    defined = [
        value
        for value in namespace.values()
        if isinstance(value, type) and issubclass(value, base) and value.__module__ == module_name
    ]
    if class_name is not None:
        for value in defined:
            if value.__name__ == class_name:
                return value
        names = ", ".join(v.__name__ for v in defined) or "none"
        raise KernelLoadError(
            f"load: the code defines no Kernel subclass named {class_name!r} (found: {names})"
        )
    if not defined:
        raise KernelLoadError("load: the code defines no subclass of gpytorch.kernels.Kernel")
    return defined[0]
