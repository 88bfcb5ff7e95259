"""Thread-safe parsing and compiling of Python source.

CPython 3.11 can raise ``SystemError: AST constructor recursion depth mismatch`` when
``ast.parse`` or ``compile`` run in several threads at once (the AST validator keeps
its recursion depth in interpreter state shared between threads). The LLM proposers
parse replies in worker threads while the surrogate or the sandbox parse kernel source,
so every parse and compile of kernel source goes through one lock.
"""

from __future__ import annotations

import ast
import threading
from types import CodeType
from typing import Any

__all__ = ["compile_python", "parse_python"]

_LOCK = threading.RLock()


def parse_python(source: str, mode: str = "exec") -> Any:
    """``ast.parse(source, mode=mode)``, one thread at a time."""
    with _LOCK:
        return ast.parse(source, mode=mode)


def compile_python(source: str | ast.Module, filename: str, mode: str = "exec") -> CodeType:
    """``compile(source, filename, mode, dont_inherit=True)``, one thread at a time."""
    with _LOCK:
        return compile(source, filename, mode, dont_inherit=True)
