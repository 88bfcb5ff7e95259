"""Executors: local processes and a local 2-worker Dask cluster run real (Sobol-only) runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from ax_kernel_discovery.runner.executors import DaskExecutor, LocalExecutor, make_executor
from ax_kernel_discovery.runner.sweep import run_task, sweep, sweep_configs

torch.set_num_threads(1)


def _configs(out: Path) -> list[dict]:
    cfgs = sweep_configs(["rover60"], ["sobol"], [0, 1], budget=21, batch=1, out=str(out))
    return [c.model_dump(mode="json") for c in cfgs]


def test_make_executor() -> None:
    assert isinstance(make_executor("local", workers=2), LocalExecutor)
    assert isinstance(make_executor("dask", workers=2), DaskExecutor)
    ex = LocalExecutor(1)
    assert make_executor(ex) is ex
    with pytest.raises(ValueError, match="unknown executor"):
        make_executor("spark")
    with pytest.raises(ValueError, match="workers"):
        make_executor("local", workers=0)
    with pytest.raises(ValueError, match="needs --executor dask"):
        make_executor("local", scheduler_address="tcp://127.0.0.1:8786")


def test_run_task_reports_failures(tmp_path: Path) -> None:
    cfg = _configs(tmp_path)[0] | {"problem_options": {"no_such_option": 1}}
    out = run_task(cfg)
    assert out["status"] == "failed" and "no_such_option" in out["error"]
    assert Path(out["path"]).read_text().startswith("Traceback")


def test_local_processes(tmp_path: Path) -> None:
    with LocalExecutor(workers=2) as ex:
        outs = list(ex.map_unordered(run_task, _configs(tmp_path)))
    assert sorted(o["run_id"] for o in outs) == ["rover60__sobol__seed0", "rover60__sobol__seed1"]
    assert all(o["status"] == "complete" for o in outs)
    for o in outs:
        assert json.loads(Path(o["path"]).read_text())["torch_threads"] == 1


@pytest.mark.slow  # an optional backend; test_local_processes covers the executor protocol
def test_dask_local_cluster(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    summaries = sweep(
        ["rover60"],
        ["sobol"],
        [0, 1],
        budget=21,
        batch=1,
        out=str(tmp_path),
        workers=2,
        executor="dask",
    )
    assert sorted(s["run_id"] for s in summaries) == [
        "rover60__sobol__seed0",
        "rover60__sobol__seed1",
    ]
    assert all(s["status"] == "complete" for s in summaries)
    result = json.loads((tmp_path / "rover60__sobol__seed0.json").read_text())
    assert result["n_evaluations"] == 21 and result["torch_threads"] == 1
    # the same sweep again: both runs are found complete and skipped
    again = sweep(
        ["rover60"],
        ["sobol"],
        [0, 1],
        budget=21,
        batch=1,
        out=str(tmp_path),
        workers=2,
        executor="dask",
    )
    assert all(s["skipped"] for s in again)
