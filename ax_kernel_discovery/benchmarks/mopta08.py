"""Mopta08: vehicle-design problem with 68 constraints, soft-constrained (D=124).

A wrapper around the compiled MOPTA 2008 program (Jones 2008), which is not in any
package registry: the user supplies the executable (``binary`` argument or the
``AXKD_MOPTA08_BINARY`` environment variable; the builds circulated with
SAASBO/BAxUS are called ``mopta08_elf64.bin`` and so on).

Per evaluation the wrapper writes ``input.txt`` (124 values in ``[0, 1]``, one per
line) into a fresh temporary directory, runs the program there, and reads
``output.txt``: the objective followed by 68 constraint values (feasible when
``<= 0``). The value is the soft-constrained objective of Eriksson & Jankowiak
(2021, appendix E.7), as in BAxUS and BenchSuite:

.. math::
    f(x) = \\text{objective}(x) + 10 \\sum_{i=1}^{68} \\max(0, c_i(x))

to minimise. ``best_known`` is the kernel-discovery paper's best (216.81).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from ax_kernel_discovery.benchmarks.base import (
    MOPTA08_BINARY_ENV,
    BlackBoxProblem,
    setting_path,
)

__all__ = ["Mopta08", "resolve_mopta08_binary"]

DIM = 124
N_CONSTRAINTS = 68
PENALTY = 10.0


def resolve_mopta08_binary(binary: str | Path | None = None) -> Path:
    """Path of the Mopta08 executable.

    Args:
        binary: An explicit path; wins over ``AXKD_MOPTA08_BINARY``.

    Raises:
        FileNotFoundError: No path given, or the file does not exist or is not
            executable; the message says what to set.
    """
    source = "binary argument" if binary is not None else MOPTA08_BINARY_ENV
    path = setting_path(binary, MOPTA08_BINARY_ENV)
    if path is None:
        raise FileNotFoundError(
            "Mopta08 needs the compiled MOPTA 2008 program, which no package registry "
            f"provides: pass binary=... or set {MOPTA08_BINARY_ENV} to its path "
            "(e.g. mopta08_elf64.bin from the SAASBO/BAxUS benchmark material)"
        )
    if not path.is_file():
        raise FileNotFoundError(f"Mopta08 binary {str(path)!r} (from {source}) does not exist")
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(
            f"Mopta08 binary {str(path)!r} (from {source}) is not executable (chmod +x it)"
        )
    return path.resolve()


class Mopta08(BlackBoxProblem):
    """Mopta08 with soft constraints (D=124, minimise).

    Args:
        binary: Path of the executable (default: ``AXKD_MOPTA08_BINARY``).
        timeout: Seconds allowed per run of the program.
        n_workers: Default worker processes for batches (each run gets its own
            temporary directory, so parallel runs do not collide).

    Example:
        >>> problem = Mopta08(binary="/opt/mopta08/mopta08_elf64.bin")
        >>> problem.evaluate_one(np.full(124, 0.5))
    """

    def __init__(
        self,
        binary: str | Path | None = None,
        timeout: float = 60.0,
        n_workers: int = 1,
    ) -> None:
        self.binary = resolve_mopta08_binary(binary)
        self.timeout = float(timeout)
        super().__init__(
            name="mopta08",
            dim=DIM,
            lower=0.0,
            upper=1.0,
            minimize=True,
            optimum=None,
            best_known=216.81,
            description=(
                "Mopta08 (Jones 2008) vehicle design, 124 inputs in [0, 1]; objective + "
                "10 * sum(max(0, c)) over 68 constraints (Eriksson & Jankowiak 2021); "
                f"binary {self.binary.name}; minimise."
            ),
            n_workers=n_workers,
        )

    def run(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """Run the program once; return (objective, constraints of shape (68,))."""
        with tempfile.TemporaryDirectory(prefix="axkd-mopta08-") as tmp:
            workdir = Path(tmp)
            lines = "".join(f"{float(v)!r}\n" for v in np.asarray(x, dtype=float))
            (workdir / "input.txt").write_text(lines)
            try:
                proc = subprocess.run(
                    [str(self.binary)],
                    cwd=workdir,
                    capture_output=True,
                    timeout=self.timeout,
                    check=False,
                )
            except subprocess.TimeoutExpired as exc:
                raise RuntimeError(
                    f"mopta08: {self.binary} did not finish within {self.timeout:g} s"
                ) from exc
            out_file = workdir / "output.txt"
            if proc.returncode != 0 or not out_file.is_file():
                stderr = proc.stderr.decode(errors="replace").strip()[-500:]
                raise RuntimeError(
                    f"mopta08: {self.binary} failed (exit code {proc.returncode}"
                    f"{', no output.txt' if not out_file.is_file() else ''}): {stderr}"
                )
            values = np.array([float(t) for t in out_file.read_text().split()], dtype=float)
        if values.shape != (1 + N_CONSTRAINTS,):
            raise RuntimeError(
                f"mopta08: expected {1 + N_CONSTRAINTS} numbers in output.txt "
                f"(objective + {N_CONSTRAINTS} constraints), got {values.size}"
            )
        return float(values[0]), values[1:]

    def _evaluate_point(self, x: np.ndarray) -> float:
        objective, constraints = self.run(x)
        return objective + PENALTY * float(np.sum(np.maximum(constraints, 0.0)))
