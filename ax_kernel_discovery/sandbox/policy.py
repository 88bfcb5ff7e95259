"""What kernel source may reach: allowed modules, forbidden names and attributes.

The policy is shared by the static check (:mod:`~ax_kernel_discovery.sandbox.checker`)
and the run-time module proxies (:mod:`~ax_kernel_discovery.sandbox.restricted`).
"""

from __future__ import annotations

__all__ = [
    "ALLOWED_MODULES",
    "FORBIDDEN_NAMES",
    "MODULE_ATTRIBUTE_ALLOWLIST",
    "attribute_refusal",
]


#: Modules the kernel source may import (and reach as attributes of each other).
ALLOWED_MODULES: frozenset[str] = frozenset(
    {
        "__future__",
        "math",
        "typing",
        "torch",
        "torch.nn",
        "torch.nn.functional",
        "torch.nn.init",
        "torch.linalg",
        "torch.special",
        "torch.fft",
        "torch.autograd",
        "gpytorch",
        "gpytorch.kernels",
        "gpytorch.kernels.kernel",
        "gpytorch.constraints",
        "gpytorch.priors",
        "gpytorch.settings",
        "gpytorch.functions",
    }
)

#: Per-module attribute allowlists (modules not listed expose every public attribute
#: that passes the denylist). ``typing`` can evaluate strings (``get_type_hints``).
MODULE_ATTRIBUTE_ALLOWLIST: dict[str, frozenset[str]] = {
    "typing": frozenset(
        {
            "Any",
            "Callable",
            "Dict",
            "Iterable",
            "List",
            "Optional",
            "Sequence",
            "TYPE_CHECKING",
            "Tuple",
            "Union",
        }
    ),
    "__future__": frozenset({"annotations"}),
}

#: Builtin names the source may not mention at all.
FORBIDDEN_NAMES: frozenset[str] = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "open",
        "getattr",
        "setattr",
        "delattr",
        "globals",
        "locals",
        "vars",
        "dir",
        "input",
        "breakpoint",
        "help",
        "exit",
        "quit",
        "memoryview",
        "type",
        "object",
        "BaseException",
        "SystemExit",
        "KeyboardInterrupt",
        "GeneratorExit",
        "bytearray",
        "id",
        "copyright",
        "credits",
        "license",
    }
)

#: Attribute names (on any object) and imported names that are refused.
_FORBIDDEN_ATTRIBUTES: frozenset[str] = frozenset(
    {
        # files, pickles, native code, compilation
        "load",
        "loads",
        "save",
        "dump",
        "dumps",
        "from_file",
        "fromfile",
        "tofile",
        "frombuffer",
        "load_library",
        "load_state_dict",
        "compile",
        "hub",
        "ops",
        "classes",
        "library",
        "utils",
        "jit",
        "package",
        "serialization",
        "cpp_extension",
        "multiprocessing",
        "distributed",
        "backends",
        "profiler",
        "numpy",
        "ctypes",
        # modules re-exported by torch/typing/gpytorch
        "os",
        "sys",
        "subprocess",
        "builtins",
        "importlib",
        "inspect",
        "pickle",
        "shutil",
        "socket",
        "pathlib",
        "io",
        "environ",
        "getenv",
        "system",
        "popen",
        "spawn",
        "fork",
        # frames, code objects, tracebacks
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "cr_frame",
        "cr_code",
        "cr_await",
        "ag_frame",
        "ag_code",
        "ag_await",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_back",
        "f_code",
        "f_trace",
        "tb_frame",
        "tb_next",
        "co_code",
        "co_consts",
        "co_names",
        "mro",
        # string evaluation, formatting into attributes
        "format",
        "format_map",
        "get_type_hints",
        "ForwardRef",
        # raw memory
        "as_strided",
        "as_strided_",
        "storage",
        "untyped_storage",
        "data_ptr",
        # process-wide state
        "manual_seed",
        "seed",
        "use_deterministic_algorithms",
        "set_",
    }
)

#: Attribute name prefixes that are refused (``set_default_dtype``, ``set_num_threads``,
#: ``set_grad_enabled``, ``set_printoptions``, ...).
_FORBIDDEN_PREFIXES: tuple[str, ...] = ("set_",)


def attribute_refusal(attr: str) -> str | None:
    """Why attribute ``attr`` may not be used (on any object), or None."""
    if attr in _FORBIDDEN_ATTRIBUTES:
        return f"attribute {attr!r} is not allowed"
    if attr.startswith(_FORBIDDEN_PREFIXES):
        return f"attribute {attr!r} is not allowed (changes process-wide state)"
    if attr.startswith("__") and attr != "__init__":
        return f"dunder attribute {attr!r} is not allowed"
    return None
