"""benchmarks/user_pays.py: kd's default strategy against Ax's own in one process (smoke run)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest


def test_cpu_seconds_count_a_child_process(benchmark_script: Callable[[str], ModuleType]) -> None:
    up = benchmark_script("user_pays")
    main0, workers0 = up.cpu_seconds()
    busy = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
    child = subprocess.Popen([sys.executable, "-c", busy])
    child.wait()  # reaped: counted in this process's children's times
    main1, workers1 = up.cpu_seconds()
    assert workers1 - workers0 >= 0.25
    assert main1 >= main0


def test_smoke_run_writes_its_tables_data_and_plot(
    benchmark_script: Callable[[str], ModuleType],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    up = benchmark_script("user_pays")
    kd_config = {
        "start_kernels": None,
        "proposals_per_round": 0,
        "fit_maxiter": 5,
        "background_fits": "off",  # no worker to start: the test stays fast
    }
    data = up.main(
        ["--smoke", "--profile", "--kd-config", json.dumps(kd_config), "--out", str(tmp_path)]
    )
    printed = capsys.readouterr().out
    assert {p.name for p in tmp_path.iterdir()} == {
        "user_pays.json",
        "user_pays.txt",
        "user_pays.png",
        "checkpoints",  # both clients after the last round (--resume)
    }
    assert json.loads((tmp_path / "user_pays.json").read_text()) == json.loads(
        json.dumps(data, default=str)
    )
    written = (tmp_path / "user_pays.txt").read_text()
    assert written.strip() in printed  # the output as printed
    (result,) = data["results"]
    assert (result["dim"], result["same_initial_design"]) == (5, True)
    rounds = result["rounds"]
    assert [r["n"] for r in rounds] == [5, 7]  # 5 initial trials, then q = 2 per round
    for r in rounds:
        for m in ("kd", "ax"):
            call = r[m]
            assert call["wall"] > 0
            assert call["cpu"] == pytest.approx(call["cpu_main"] + call["cpu_workers"])
            assert 0 < call["fit"] + call["acquisition"] <= call["wall"]
        assert r["ratio_wall"] == r["kd"]["wall"] / r["ax"]["wall"]
        assert r["ratio_cpu"] == r["kd"]["cpu"] / r["ax"]["cpu"]
        assert r["kd"]["record"]["n"] == r["n"]  # kd's round record of this call
        assert sum(r["ax"]["iterations"].values()) > 0  # Ax's own MLL fit, counted
    total = result["total"]
    assert total["kd"]["wall"] == pytest.approx(sum(r["kd"]["wall"] for r in rounds))
    assert total["ratio_cpu"] == total["kd"]["cpu"] / total["ax"]["cpu"]
    assert f"**{total['ratio_wall']:.2f}**" in written
    phases = result["profile"]["phases"]
    assert [p["round"] for p in phases] == [1, 2]
    assert phases[1]["fit_worker"] == 0.0  # background_fits off: every fit in this process
    members = result["profile"]["members"]
    assert {"RBF", "Matern52", "RQ", "BOCK", "SL"} <= set(members)
    assert all(m["iterations"] > 0 for name, m in members.items() if name != up.AX_MODEL)
    assert "kd's rounds by phase" in written


def test_designs_that_differ_are_refused(
    benchmark_script: Callable[[str], ModuleType], tmp_path: Path
) -> None:
    up = benchmark_script("user_pays")
    # another Sobol seed for Ax's side only: the initial trials differ
    original = up.new_client

    def other_seed(problem, method, args):  # type: ignore[no-untyped-def]
        if method == "ax":
            args = type(args)(**{**vars(args), "seed": args.seed + 1})
        return original(problem, method, args)

    up.new_client = other_seed
    with pytest.raises(AssertionError, match="initial designs differ"):
        up.main(["--smoke", "--rounds", "0", "--out", str(tmp_path)])


def test_a_killed_run_resumes_at_its_first_unmeasured_round(
    benchmark_script: Callable[[str], ModuleType], tmp_path: Path
) -> None:
    up = benchmark_script("user_pays")
    kd_config = {"start_kernels": None, "proposals_per_round": 0, "background_fits": "off"}
    argv = ["--smoke", "--rounds", "4", "--kd-config", json.dumps(kd_config)]
    argv += ["--out", str(tmp_path)]
    saved = up.save_client
    calls = []

    def killed_in_round_4(client, path):  # type: ignore[no-untyped-def]
        calls.append(path)
        if len(calls) == 3:  # round 4 measured and in the JSON, not yet checkpointed
            raise KeyboardInterrupt
        saved(client, path)

    up.save_client = killed_in_round_4
    with pytest.raises(KeyboardInterrupt):
        up.main([*argv, "--checkpoint-every", "2"])  # after rounds 2 and 4 only
    up.save_client = saved
    assert len(calls) == 3  # both clients after round 2, none after rounds 1 and 3
    stopped = json.loads((tmp_path / "user_pays.json").read_text())
    ns = [r["n"] for r in stopped["results"][0]["rounds"]]
    assert not stopped["complete"] and ns == [5, 7, 9, 11]
    with pytest.raises(SystemExit, match="other settings"):
        up.main([*argv[:2], "5", *argv[3:], "--resume"])  # another number of rounds
    data = up.main([*argv, "--resume"])  # another checkpoint interval: allowed
    assert data is not None and data["complete"]
    (result,) = data["results"]
    # rounds 3 and 4 again (the checkpoints held rounds 1-2)
    assert [r["n"] for r in result["rounds"]] == [5, 7, 9, 11] and result["complete"]
    assert [s["started_at"] for s in data["sessions"]] == [
        [],
        [{"problem": "branin100@5", "round": 3}],
    ]
    records = [r["kd"]["record"] for r in result["rounds"]]
    assert [rec["n"] for rec in records] == [5, 7, 9, 11]
    assert [rec["round"] for rec in records] == [0, 1, 2, 3]  # kd's history went on
    written = (tmp_path / "user_pays.txt").read_text()
    assert "session 1:" in written and "session 2:" in written and "resumed at" in written
    assert up.main([*argv, "--resume"])["complete"]  # a complete run: nothing to do


def test_a_run_killed_before_its_first_checkpoint_starts_over(
    benchmark_script: Callable[[str], ModuleType],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    up = benchmark_script("user_pays")
    kd_config = {"start_kernels": None, "proposals_per_round": 0, "background_fits": "off"}
    argv = ["--smoke", "--kd-config", json.dumps(kd_config), "--out", str(tmp_path)]
    saved = up.save_client

    def killed(client, path):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt  # the first checkpoint: after the last round

    up.save_client = killed
    with pytest.raises(KeyboardInterrupt):
        up.main([*argv, "--checkpoint-every", "0"])
    up.save_client = saved
    stopped = json.loads((tmp_path / "user_pays.json").read_text())
    assert [r["n"] for r in stopped["results"][0]["rounds"]] == [5, 7]
    data = up.main([*argv, "--resume"])
    (result,) = data["results"]
    assert [r["n"] for r in result["rounds"]] == [5, 7] and result["complete"]
    assert [s["started_at"] for s in data["sessions"]] == [[], []]  # started over
    assert [r["kd"]["record"]["round"] for r in result["rounds"]] == [0, 1]
    with pytest.raises(SystemExit):
        up.main([*argv, "--checkpoint-every", "-1"])
    assert "--checkpoint-every must be 0 or more, not -1" in capsys.readouterr().err
