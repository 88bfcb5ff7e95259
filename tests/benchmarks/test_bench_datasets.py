"""The bundled benchmark data: checksums, resolution order, overrides and status."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest

import ax_kernel_discovery
from ax_kernel_discovery.benchmarks import get_problem
from ax_kernel_discovery.benchmarks.datasets import (
    CT_SLICE_FULL,
    DATA_FILES,
    bundled_file,
    data_dir,
    data_file,
    data_status,
    override_dir,
    sha256_of,
)
from ax_kernel_discovery.benchmarks.rover import Rover

PACKAGE_DATA = Path(ax_kernel_discovery.__file__).parent / "benchmarks" / "data"


def test_four_files_are_bundled_with_their_published_checksums() -> None:
    assert set(DATA_FILES) == {
        "rover_obstacle_centers.txt",
        "dna.scale.gz",
        "ct_slice_sample.csv.gz",
        "humanoid_v1_ars_lin_policy_plus.npz",
    }
    for name, info in DATA_FILES.items():
        path = bundled_file(name)
        assert path == PACKAGE_DATA / name
        assert hashlib.sha256(path.read_bytes()).hexdigest() == info.sha256 == sha256_of(path)


def test_readme_gives_source_licence_and_checksum_of_each_file() -> None:
    readme = (PACKAGE_DATA / "README.md").read_text()
    for name, info in DATA_FILES.items():
        row = next(line for line in readme.splitlines() if line.startswith(f"| `{name}`"))
        assert info.sha256 in row and info.licence.split(",")[0] in row


def test_no_setting_reads_the_bundled_files() -> None:
    assert override_dir() is None
    assert data_dir() == PACKAGE_DATA
    assert data_file("dna.scale.gz") == PACKAGE_DATA / "dna.scale.gz"
    rover = Rover(n_waypoints=30)
    np.testing.assert_allclose(
        rover.domain.low + 0.025, np.loadtxt(PACKAGE_DATA / "rover_obstacle_centers.txt")
    )
    assert [r.status for r in data_status()] == ["ok"] * 4
    assert {r.origin for r in data_status()} == {"package"}


@pytest.mark.parametrize("name", ["rover100", "rover60", "lasso_dna", "svm", "humanoid"])
def test_get_problem_works_with_no_setting(name: str) -> None:
    options = {"max_steps": 5} if name == "humanoid" else {}
    problem = get_problem(name, **options)
    x = problem.lower + 0.5 * (problem.upper - problem.lower)
    assert np.isfinite(problem.evaluate_one(x))


def test_a_user_folder_overrides_file_by_file(tmp_path: Path, monkeypatch) -> None:
    env_dir, arg_dir = tmp_path / "env", tmp_path / "arg"
    env_dir.mkdir()
    arg_dir.mkdir()
    np.savetxt(env_dir / "rover_obstacle_centers.txt", [[0.5, 0.5]])
    np.savetxt(arg_dir / "rover_obstacle_centers.txt", [[0.2, 0.2], [0.8, 0.8]])
    monkeypatch.setenv("AXKD_DATA_DIR", str(env_dir))
    assert data_dir() == env_dir
    assert data_file("rover_obstacle_centers.txt") == env_dir / "rover_obstacle_centers.txt"
    assert len(Rover(n_waypoints=30).domain.low) == 1
    # the explicit folder wins over the environment
    assert len(Rover(n_waypoints=30, data_dir=arg_dir).domain.low) == 2
    # files the user's folder lacks still come from the package
    assert data_file("dna.scale.gz") == PACKAGE_DATA / "dna.scale.gz"
    status = {r.name: r for r in data_status()}
    assert status["rover_obstacle_centers.txt"].status == "mismatch"
    assert status["rover_obstacle_centers.txt"].origin == "AXKD_DATA_DIR"
    assert status["dna.scale.gz"].status == "ok" and status["dna.scale.gz"].origin == "package"
    assert data_status(arg_dir)[0].origin == "data_dir argument"


def test_a_copy_of_a_bundled_file_in_a_user_folder_checks_ok(tmp_path: Path) -> None:
    shutil.copy(PACKAGE_DATA / "dna.scale.gz", tmp_path)
    status = {r.name: r for r in data_status(tmp_path)}
    assert status["dna.scale.gz"].path == tmp_path / "dna.scale.gz"
    assert status["dna.scale.gz"].status == "ok"


def test_missing_user_folder_is_an_error_naming_its_setting(tmp_path: Path, monkeypatch) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(FileNotFoundError, match="does not exist") as info:
        data_dir(missing)
    assert "data_dir argument" in str(info.value)
    monkeypatch.setenv("AXKD_DATA_DIR", str(missing))
    with pytest.raises(FileNotFoundError, match="from AXKD_DATA_DIR"):
        Rover()


def test_unknown_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not bundled"):
        data_file("mopta08_elf64.bin", tmp_path)
    with pytest.raises(FileNotFoundError, match="bundled: rover_obstacle_centers.txt"):
        bundled_file("other.csv")


def test_full_ct_slice_file_in_a_user_folder_is_listed(tmp_path: Path) -> None:
    (tmp_path / "slice_localization_data.csv").write_text("patientId\n")
    rows = data_status(tmp_path)
    assert rows[-1].name == "slice_localization_data.csv" and rows[-1].status == "user file"
    assert "slice_localization_data.csv" in CT_SLICE_FULL and "AXKD_DATA_DIR" in CT_SLICE_FULL
