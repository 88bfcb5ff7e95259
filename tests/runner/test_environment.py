"""Where a run ran: the source commit is recorded for this project's checkout only."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ax_kernel_discovery.runner import environment
from ax_kernel_discovery.runner.environment import source_commit

ROOT = Path(__file__).resolve().parents[2]


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def _repo(path: Path, name: str, track_package: bool) -> Path:
    """A git repository at ``path`` with a pyproject of project ``name`` and a copy of
    the package's module layout (tracked or not), committed."""
    path.mkdir(parents=True)
    _git(path, "init", "-q")
    (path / "pyproject.toml").write_text(f'[project]\nname = "{name}"\nversion = "0"\n')
    module = path / "site" / "ax_kernel_discovery" / "runner" / "environment.py"
    if track_package:
        module = path / "ax_kernel_discovery" / "runner" / "environment.py"
    module.parent.mkdir(parents=True)
    (module.parents[1] / "__init__.py").write_text("")
    module.write_text("")
    _git(path, "add", "pyproject.toml", *(["ax_kernel_discovery"] if track_package else []))
    _git(path, "commit", "-q", "-m", "c")
    return module


def test_the_commit_is_this_checkouts_and_no_other_repositorys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 52 item 18: a package installed inside another project's repository (a
    virtual environment in it), or another project with a package of that name, records
    no commit; it recorded the enclosing repository's."""
    own = source_commit()
    if own is not None:  # run from a git checkout of this project
        assert own["commit"] == _git(ROOT, "rev-parse", "HEAD")
    installed = _repo(tmp_path / "user_project", "someone-elses-project", track_package=False)
    monkeypatch.setattr(environment, "__file__", str(installed))
    assert source_commit() is None
    other = _repo(tmp_path / "namesake", "not-ax-kernel-discovery", track_package=True)
    monkeypatch.setattr(environment, "__file__", str(other))
    assert source_commit() is None
    ours = _repo(tmp_path / "clone", "ax-kernel-discovery", track_package=True)
    monkeypatch.setattr(environment, "__file__", str(ours))
    assert source_commit() == {
        "commit": _git(tmp_path / "clone", "rev-parse", "HEAD"),
        "dirty": False,
    }
