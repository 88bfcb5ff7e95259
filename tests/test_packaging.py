"""The wheel carries the benchmark data (built offline from a copy of the source tree)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from ax_kernel_discovery.benchmarks.datasets import DATA_FILES

REPO = Path(__file__).resolve().parents[1]


def test_wheel_contains_the_benchmark_data(tmp_path: Path) -> None:
    # build from a copy, so that the build leaves nothing in the checkout
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(
        REPO / "ax_kernel_discovery",
        src / "ax_kernel_discovery",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    out = tmp_path / "wheels"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--quiet",
            "--wheel-dir",
            str(out),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = out.glob("ax_kernel_discovery-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        data = "ax_kernel_discovery/benchmarks/data/"
        for name in DATA_FILES:
            assert data + name in names
            assert zf.read(data + name) == (REPO / data / name).read_bytes()
        assert data + "README.md" in names
        assert "ax_kernel_discovery/benchmarks/datasets.py" in names
