"""The package's architecture: import contracts hold, each name has one import path.

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

#: Import paths that deprecation stubs served until issue 32 (no release ever shipped
#: them): modules that moved into packages, and names that moved up or were renamed.
GONE_MODULES = [
    "ax_kernel_discovery.acquisition",
    "ax_kernel_discovery.cake",
    "ax_kernel_discovery.compositional_search",
    "ax_kernel_discovery.diagnostics",
    "ax_kernel_discovery.executors",
    "ax_kernel_discovery.kernels.discovered",
    "ax_kernel_discovery.report",
    "ax_kernel_discovery.round_record",
    "ax_kernel_discovery.runner.config",
    "ax_kernel_discovery.study_diagnostics",
    "ax_kernel_discovery.study_markdown",
    "ax_kernel_discovery.study_report",
    "ax_kernel_discovery.study_statistics",
    "ax_kernel_discovery.surrogate_admission",
    "ax_kernel_discovery.surrogate_fitting",
    "ax_kernel_discovery.surrogate_state",
    "ax_kernel_discovery.sweep",
    "ax_kernel_discovery._deprecated",
    # issue 53: names that say what the module holds (no stub left behind)
    "ax_kernel_discovery._compat",  # a lock around ast.parse: _ast_lock
    "ax_kernel_discovery.surrogate.new_rows",  # the acquisition function: new_rows_qlognei
    "ax_kernel_discovery.surrogate.rows",  # the trial and arm rows of a fit: trial_rows
]
GONE_NAMES = [
    ("ax_kernel_discovery.validation", "validate_kernel_code"),
    ("ax_kernel_discovery.llm.client", "make_client"),
    ("ax_kernel_discovery.proposers.llm", "proposer_from_config"),
    ("ax_kernel_discovery.proposers.llm", "LOCAL_TIMEOUT_S"),
    ("ax_kernel_discovery.surrogate", "model_config_for"),
    ("ax_kernel_discovery.surrogate.fitting", "model_config_for"),
    # issue 53: the problem class had the name of Ax's own ``ax.benchmark`` class
    ("ax_kernel_discovery.benchmarks", "BenchmarkProblem"),
    ("ax_kernel_discovery.benchmarks.base", "BenchmarkProblem"),
    # issue 49: the criteria are the rules of selection_rules.SELECTION_RULES, by name
    ("ax_kernel_discovery.selection", "score"),
    ("ax_kernel_discovery.selection", "Criterion"),
    ("ax_kernel_discovery.selection", "CRITERIA"),
    ("ax_kernel_discovery.selection", "CRITERION_SUMMARIES"),
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


@pytest.mark.parametrize("old", GONE_MODULES)
def test_no_deprecation_stub_is_left(old: str) -> None:
    # the files, not an import: an editable install of another checkout may still serve them
    path = REPO.joinpath(*old.split("."))
    assert not path.with_suffix(".py").exists() and not (path / "__init__.py").exists()


@pytest.mark.parametrize(("module", "name"), GONE_NAMES)
def test_a_moved_name_has_no_old_path(module: str, name: str) -> None:
    assert not hasattr(importlib.import_module(module), name)


def _modules(package: Path) -> dict[str, tuple[Path, bool]]:
    """Every module of ``package`` by dotted name, and whether it is a package's face."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        face = parts[-1] == "__init__"
        out[".".join(parts[:-1] if face else parts)] = (path, face)
    return out


def _defined_names(path: Path) -> set[str]:
    """The names a module defines at its top level (not those it imports)."""
    names: set[str] = set()
    statements = list(ast.parse(path.read_text()).body)
    while statements:
        node = statements.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.If, ast.Try)):  # definitions under a condition
            statements += [*node.body, *node.orelse, *getattr(node, "finalbody", [])]
            statements += [s for h in getattr(node, "handlers", []) for s in h.body]
    return names


def _imports_from_a_second_path(package: Path) -> list[str]:
    """Every ``from <a module of the package> import name`` where that module does not
    define ``name`` but imports it: a second path to a name. Packages' faces
    (``__init__``) and the kernel-library face (``library``) gather names on purpose."""
    modules = _modules(package)
    defined = {name: _defined_names(path) for name, (path, _) in modules.items()}
    found = []
    for path, _ in modules.values():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or node.level or node.module not in modules:
                continue
            if modules[node.module][1] or node.module == "ax_kernel_discovery.library":
                continue
            found += [
                f"{path.relative_to(package.parent)}:{node.lineno}: {node.module} {a.name}"
                for a in node.names
                if a.name not in defined[node.module] and f"{node.module}.{a.name}" not in modules
            ]
    return found


def test_a_name_has_one_import_path() -> None:
    assert _imports_from_a_second_path(REPO / "ax_kernel_discovery") == []


def test_no_module_of_the_package_serves_names_it_does_not_hold() -> None:
    """No module ``__getattr__`` (the deprecation stubs' mechanism) anywhere."""
    for name, (path, _) in _modules(REPO / "ax_kernel_discovery").items():
        assert "__getattr__" not in _defined_names(path), name


def test_the_library_face_gathers_the_library_names() -> None:
    """``library`` hands on the names of the library file format, the same objects."""
    library = importlib.import_module("ax_kernel_discovery.library")
    library_format = importlib.import_module("ax_kernel_discovery.library_format")
    gathered = [name for name in library.__all__ if name in library_format.__all__]
    assert {"load_kernels", "save_kernels", "LibraryKernel", "get_kernel"} <= set(gathered)
    assert all(getattr(library, n) is getattr(library_format, n) for n in gathered)


def test_one_public_model_config_for() -> None:
    """The public ``model_config_for`` is the library's: a library kernel, validated."""
    from ax_kernel_discovery import library, surrogate

    assert ax_kernel_discovery.model_config_for is library.model_config_for
    assert library.model_config_for is not surrogate.candidate_model_config


def test_the_packages_keep_the_names_of_the_modules_they_replace() -> None:
    # surrogate.py, baselines.py and study.py became packages of the same name
    from ax_kernel_discovery.baselines import get_method, methods
    from ax_kernel_discovery.study import STUDY, protocol
    from ax_kernel_discovery.surrogate import KernelDiscoverySurrogate, core

    assert KernelDiscoverySurrogate is core.KernelDiscoverySurrogate
    assert get_method is methods.get_method
    assert STUDY is protocol.STUDY


def _users_of_the_benchmark_scripts() -> str:
    """The text that may run a top-level ``benchmarks/`` script: the nox sessions, the
    README and docs pages, and the tests."""
    files = [REPO / "noxfile.py", REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    files += sorted((REPO / "tests").rglob("*.py"))
    return "\n".join(path.read_text() for path in files)


def test_every_top_level_benchmark_script_is_run_by_a_session_the_docs_or_a_test() -> None:
    """A script nothing runs is retired (its results keep a line in
    ``benchmarks/results/README.md``): the command line is ``ax-kernel-discovery`` and the
    nox sessions."""
    users = _users_of_the_benchmark_scripts()
    unused = [
        path.name
        for path in sorted((REPO / "benchmarks").glob("*.py"))
        if f"benchmarks/{path.name}" not in users
        and f'benchmark_script("{path.stem}")' not in users
    ]
    assert unused == []


def test_the_examples_are_scripts_of_the_package_not_a_second_command_line() -> None:
    examples = sorted((REPO / "examples").glob("*.py"))
    assert examples and not (REPO / "examples" / "bench_common.py").exists()
    for path in examples:
        assert "ax_kernel_discovery" in path.read_text(), path.name
        assert "from bench_common" not in path.read_text(), path.name
