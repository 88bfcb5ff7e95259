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


def test_no_message_asks_pypi_for_this_package() -> None:
    """The package is not on PyPI: an install hint names what PyPI has (SQLAlchemy,
    scikit-learn, xllamacpp) or the extra installed from a clone, never
    ``pip install 'ax-kernel-discovery[extra]'``."""
    import re

    wrong = re.compile(r"pip install -?e? ?['\"]?ax-kernel-discovery")
    found = [
        f"{path.relative_to(REPO)}:{i}"
        for path in sorted((REPO / "ax_kernel_discovery").rglob("*.py"))
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if wrong.search(line)
    ]
    assert found == []


def test_the_missing_sqlalchemy_message_names_what_to_install(monkeypatch) -> None:
    import pytest

    from ax_kernel_discovery.storage import prepare_sql_storage

    monkeypatch.setitem(sys.modules, "ax.storage.sqa_store.db", None)  # import fails
    with pytest.raises(ImportError) as info:
        prepare_sql_storage("sqlite:///runs.db")
    message = str(info.value)
    assert "pip install 'sqlalchemy>=2.0,<3' tabulate" in message
    assert "in a clone of ax-kernel-discovery, pip install '.[sql]'" in message
