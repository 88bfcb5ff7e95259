"""The package's architecture: import contracts hold, old import paths keep working.

The contracts are ``[tool.importlinter]`` in ``pyproject.toml`` (see
``docs/architecture.md``); import-linter is a dev tool, so these tests need the dev extra.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import ax_kernel_discovery

REPO = Path(__file__).resolve().parents[1]

#: What ``from ax_kernel_discovery import ...`` offers (the public API of the README).
PUBLIC_NAMES = {
    "KernelCandidate",
    "KernelDiscoveryAnalysis",
    "KernelDiscoveryConfig",
    "KernelDiscoverySurrogate",
    "KernelLibraryError",
    "LibraryKernel",
    "Population",
    "Rejection",
    "RoundRecord",
    "botorch_step",
    "export_kernels",
    "fixed_kernel_generation_strategy",
    "kernel_discovery_analyses",
    "kernel_discovery_generation_strategy",
    "load_kernels",
    "lbo_crps",
    "loo_crps",
    "model_config_for",
    "register_storage",
    "save_kernels",
    "sobol_step",
    "start_candidates",
    "surrogate_of",
}

#: Names that moved up a layer: (old module, name, new module). The old path warns.
MOVED_UP = [
    (
        "ax_kernel_discovery.validation",
        "validate_kernel_code",
        "ax_kernel_discovery.sandbox.validate",
    ),
    ("ax_kernel_discovery.llm.client", "make_client", "ax_kernel_discovery.llm.factory"),
    (
        "ax_kernel_discovery.proposers.llm",
        "proposer_from_config",
        "ax_kernel_discovery.proposers.from_config",
    ),
    (
        "ax_kernel_discovery.proposers.llm",
        "LOCAL_TIMEOUT_S",
        "ax_kernel_discovery.proposers.from_config",
    ),
]

#: Names that moved down a layer: (old module, name, new module). The old module imports
#: them, so the old path is the same object, without a warning.
MOVED_DOWN = [
    ("ax_kernel_discovery.proposers.base", "MemberSummary", "ax_kernel_discovery.population"),
    ("ax_kernel_discovery.proposers", "MemberSummary", "ax_kernel_discovery.population"),
    ("ax_kernel_discovery.surrogate.state", "encode_keys", "ax_kernel_discovery.candidate"),
    ("ax_kernel_discovery.surrogate.state", "decode_keys", "ax_kernel_discovery.candidate"),
    (
        "ax_kernel_discovery.benchmarks.svm",
        "FULL_FILE_NAMES",
        "ax_kernel_discovery.benchmarks.datasets",
    ),
    ("ax_kernel_discovery.config", "resolve_device", "ax_kernel_discovery.devices"),
    ("ax_kernel_discovery.config", "check_device", "ax_kernel_discovery.devices"),
    ("ax_kernel_discovery.config", "check_device_name", "ax_kernel_discovery.devices"),
    ("ax_kernel_discovery.config", "DeviceUnavailableError", "ax_kernel_discovery.devices"),
] + [
    ("ax_kernel_discovery.library", name, "ax_kernel_discovery.library_format")
    for name in (
        "LIBRARY_FORMAT",
        "LIBRARY_VERSION",
        "VALIDATION_DIM",
        "KernelLibraryError",
        "LibraryKernel",
        "get_kernel",
        "library_entries",
        "library_start_candidates",
        "load_kernels",
        "parse_library",
        "save_kernels",
        "validate_library_kernel",
    )
]


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the package and ``pyproject.toml`` under ``root``."""
    pytest.importorskip("importlinter", reason="import-linter is in the dev extra")
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True))",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _copy_of_the_package(tmp_path: Path) -> Path:
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(
        REPO / "ax_kernel_discovery",
        tmp_path / "ax_kernel_discovery",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    return tmp_path


def test_import_contracts_hold() -> None:
    proc = _lint_imports(REPO)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def _broken_contracts_with(tmp_path: Path, module: str, added: str) -> str:
    """``lint-imports``'s report on a copy of the package with ``added`` at the end of
    ``module`` (a file under ``ax_kernel_discovery/``); the contracts must break."""
    root = _copy_of_the_package(tmp_path)
    path = root / "ax_kernel_discovery" / module
    path.write_text(path.read_text() + added)
    proc = _lint_imports(root)
    assert proc.returncode == 1, proc.stdout[-4000:] + proc.stderr[-2000:]
    return " ".join(proc.stdout.split())


def test_a_function_local_import_that_closes_a_cycle_breaks_the_contracts(
    tmp_path: Path,
) -> None:
    # the cycle issue 23 removed: config's start_kernels validator reaching up into the
    # surrogate (through library) from inside a function
    out = _broken_contracts_with(
        tmp_path,
        "config.py",
        "\n\ndef _start_set() -> object:\n"
        "    from ax_kernel_discovery.surrogate import KernelDiscoverySurrogate\n\n"
        "    return KernelDiscoverySurrogate\n",
    )
    assert "Layers: a module imports only from layers below its own BROKEN" in out
    assert "No import cycles, between the modules and packages of every folder BROKEN" in out
    assert "ax_kernel_discovery.config -> ax_kernel_discovery.surrogate" in out


def test_an_import_under_type_checking_counts_too(tmp_path: Path) -> None:
    out = _broken_contracts_with(
        tmp_path,
        "population.py",
        "\n\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
        "    from ax_kernel_discovery.proposers.base import Proposer\n",
    )
    assert "ax_kernel_discovery.population -> ax_kernel_discovery.proposers.base" in out


def _private_names_imported_across_modules(package: Path) -> list[str]:
    """Every ``from <a module of the package> import _name`` under ``package``.

    A helper that another module needs is public in its owner (issue 23); the package's
    own modules are the ones named ``ax_kernel_discovery...`` or imported relatively.
    """
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level == 0 and not (node.module or "").startswith("ax_kernel_discovery"):
                continue
            found += [
                f"{path.relative_to(package.parent)}:{node.lineno}: {node.module} {a.name}"
                for a in node.names
                if a.name.startswith("_") and not a.name.startswith("__")
            ]
    return found


def test_no_module_imports_a_private_name_of_another() -> None:
    assert _private_names_imported_across_modules(REPO / "ax_kernel_discovery") == []


def test_the_private_name_check_finds_one(tmp_path: Path) -> None:
    package = tmp_path / "ax_kernel_discovery"
    (package / "study").mkdir(parents=True)
    (package / "study" / "markdown.py").write_text(
        "from ax_kernel_discovery.runner.report import _fmt, timing_table\n"
        "from .statistics import _paired, summary\n"
        "from ax_kernel_discovery import __version__\n"
        "from math import _private_but_not_ours\n"
    )
    assert _private_names_imported_across_modules(package) == [
        "ax_kernel_discovery/study/markdown.py:1: ax_kernel_discovery.runner.report _fmt",
        "ax_kernel_discovery/study/markdown.py:2: statistics _paired",
    ]


def test_the_public_api_is_unchanged() -> None:
    assert set(ax_kernel_discovery.__all__) == PUBLIC_NAMES
    for name in PUBLIC_NAMES:
        assert getattr(ax_kernel_discovery, name) is not None


def test_the_version_comes_from_the_package_metadata() -> None:
    assert ax_kernel_discovery.__version__ == importlib.metadata.version("ax-kernel-discovery")


#: Names that were renamed: (old module, old name, new module, new name). The old name
#: warns and gives the new object, for one release.
RENAMED = [
    (
        "ax_kernel_discovery.surrogate",
        "model_config_for",
        "ax_kernel_discovery.surrogate.fitting",
        "candidate_model_config",
    ),
    (
        "ax_kernel_discovery.surrogate.fitting",
        "model_config_for",
        "ax_kernel_discovery.surrogate.fitting",
        "candidate_model_config",
    ),
]


@pytest.mark.parametrize(
    ("old", "name", "new", "new_name"), [(o, n, m, n) for o, n, m in MOVED_UP] + RENAMED
)
def test_a_name_moved_up_or_renamed_keeps_its_old_path_with_a_deprecation_warning(
    old: str, name: str, new: str, new_name: str
) -> None:
    moved = getattr(importlib.import_module(new), new_name)
    with pytest.warns(DeprecationWarning, match=rf"{old}\.{name} moved to {new}\.{new_name}"):
        assert getattr(importlib.import_module(old), name) is moved
    with pytest.warns(DeprecationWarning):
        namespace: dict[str, object] = {}
        exec(f"from {old} import {name}", namespace)  # the form scripts use
    assert namespace[name] is moved


def test_one_public_model_config_for() -> None:
    """The public ``model_config_for`` is the library's: a library kernel, validated."""
    from ax_kernel_discovery import library, surrogate

    assert ax_kernel_discovery.model_config_for is library.model_config_for
    assert library.model_config_for is not surrogate.candidate_model_config
    assert "model_config_for" not in surrogate.__all__
    assert (
        "model_config_for"
        not in importlib.import_module("ax_kernel_discovery.surrogate.fitting").__all__
    )


@pytest.mark.parametrize(("old", "name", "new"), MOVED_DOWN)
def test_a_name_moved_down_is_the_same_object_at_its_old_path(
    old: str, name: str, new: str
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert getattr(importlib.import_module(old), name) is getattr(
            importlib.import_module(new), name
        )


def test_an_unknown_name_of_a_module_with_moved_names_is_still_an_attribute_error() -> None:
    validation = importlib.import_module("ax_kernel_discovery.validation")
    with pytest.raises(AttributeError, match="has no attribute 'validate_kernel_codes'"):
        validation.validate_kernel_codes  # noqa: B018
    assert not hasattr(validation, "make_client")


#: Modules that moved into a package (issue 23): (old module, a name it held, new module).
#: The old module is a stub whose ``__getattr__`` serves every name of the new one, with a
#: ``DeprecationWarning``, for one release.
MOVED_MODULES = [
    (
        "ax_kernel_discovery.surrogate_fitting",
        "GUARD_NAME",
        "ax_kernel_discovery.surrogate.fitting",
    ),
    (
        "ax_kernel_discovery.surrogate_admission",
        "CandidateAdmission",
        "ax_kernel_discovery.surrogate.admission",
    ),
    ("ax_kernel_discovery.surrogate_state", "LastChoice", "ax_kernel_discovery.surrogate.state"),
    (
        "ax_kernel_discovery.round_record",
        "RoundRecord",
        "ax_kernel_discovery.surrogate.round_record",
    ),
    ("ax_kernel_discovery.acquisition", "annotations", "ax_kernel_discovery.surrogate.acquisition"),
    ("ax_kernel_discovery.cake", "CAKE_DEFAULTS", "ax_kernel_discovery.baselines.cake"),
    (
        "ax_kernel_discovery.compositional_search",
        "COMPOSITIONAL_DEFAULTS",
        "ax_kernel_discovery.baselines.compositional",
    ),
    ("ax_kernel_discovery.study_report", "BASE_KERNELS", "ax_kernel_discovery.study.report"),
    ("ax_kernel_discovery.study_markdown", "study_markdown", "ax_kernel_discovery.study.markdown"),
    (
        "ax_kernel_discovery.study_diagnostics",
        "BASE_KERNELS",
        "ax_kernel_discovery.study.diagnostics",
    ),
    (
        "ax_kernel_discovery.study_statistics",
        "TIE_TOLERANCE",
        "ax_kernel_discovery.study.statistics",
    ),
    ("ax_kernel_discovery.sweep", "run_configs", "ax_kernel_discovery.runner.sweep"),
    ("ax_kernel_discovery.executors", "EXECUTORS", "ax_kernel_discovery.runner.executors"),
    ("ax_kernel_discovery.report", "Cell", "ax_kernel_discovery.runner.report"),
    ("ax_kernel_discovery.diagnostics", "annotations", "ax_kernel_discovery.runner.diagnostics"),
    ("ax_kernel_discovery.runner.config", "KD_METHODS", "ax_kernel_discovery.runner.run_config"),
    (
        "ax_kernel_discovery.kernels.discovered",
        "annotations",
        "ax_kernel_discovery.surrogate.discovered",
    ),
]


@pytest.mark.parametrize(("old", "name", "new"), MOVED_MODULES)
def test_a_moved_module_keeps_its_old_path_with_a_deprecation_warning(
    old: str, name: str, new: str
) -> None:
    moved = getattr(importlib.import_module(new), name)
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to {new}; import {name}"):
        namespace: dict[str, object] = {}
        exec(f"from {old} import {name}", namespace)  # the form scripts use
    assert namespace[name] is moved
    assert not hasattr(importlib.import_module(old), "no_such_name")


def test_the_packages_keep_the_names_of_the_modules_they_replace() -> None:
    # surrogate.py, baselines.py and study.py became packages of the same name
    from ax_kernel_discovery.baselines import get_method, methods
    from ax_kernel_discovery.study import STUDY, protocol
    from ax_kernel_discovery.surrogate import KernelDiscoverySurrogate, core

    assert KernelDiscoverySurrogate is core.KernelDiscoverySurrogate
    assert get_method is methods.get_method
    assert STUDY is protocol.STUDY
