"""kd's log lines appear beside Ax's, in Ax's format, and Ax's one call quiets both.

Each check runs in a fresh interpreter: logging is process-wide state, and what is
checked is what a user who configured nothing sees on stderr.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Ax's stream format: "[INFO 11-27 10:00:00] ax.api.client: ..."
AX_LINE = r"\[{level} \d\d-\d\d \d\d:\d\d:\d\d\] {name}: "


def _stderr(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env={"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stderr


def test_the_round_line_appears_beside_axs_info_lines_and_set_ax_logger_levels_quiets_it() -> None:
    err = _stderr(
        """
        import logging
        import torch
        torch.set_num_threads(1)
        from ax.api import Client
        from ax.api.configs import RangeParameterConfig
        from ax.utils.common.logger import set_ax_logger_levels
        from ax_kernel_discovery import kernel_discovery_generation_strategy

        client = Client(random_seed=0)
        client.configure_experiment(
            parameters=[
                RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
                for i in range(3)
            ]
        )
        client.configure_optimization(objective="-f")
        client.set_generation_strategy(
            kernel_discovery_generation_strategy(
                {"proposals_per_round": 1, "population_size": 5, "background_fits": "off"},
                num_sobol=4, num_restarts=1, raw_samples=16, maxiter=5,
            )
        )

        def ask():
            for i, p in client.get_next_trials(max_trials=4).items():
                client.complete_trial(i, raw_data={"f": sum((v - 0.3) ** 2 for v in p.values())})

        ask()
        ask()  # round 0 of kernel discovery
        set_ax_logger_levels(logging.WARNING)
        ask()  # round 1: quiet
        """
    )
    kd = AX_LINE.format(level="INFO", name=re.escape("ax_kernel_discovery.surrogate.core"))
    assert re.search(kd + r"kernel discovery round 0: chose ", err), err[-3000:]
    assert re.search(AX_LINE.format(level="INFO", name=r"ax\.[\w.]+"), err)  # Ax's own lines
    assert "kernel discovery round 1" not in err, err[-3000:]


def test_every_package_logger_uses_axs_format_and_level() -> None:
    """Loggers of modules that do not use Ax's ``get_logger`` (no ``output_name``) too,
    once a kd surrogate is built (the import alone only adds a ``NullHandler``)."""
    err = _stderr(
        """
        import logging
        import ax_kernel_discovery
        from ax.utils.common.logger import set_ax_logger_levels, set_stderr_log_level

        logging.getLogger("ax_kernel_discovery.surrogate.fitting").info("before: silent")
        ax_kernel_discovery.KernelDiscoverySurrogate()

        log = logging.getLogger("ax_kernel_discovery.surrogate.fitting")
        log.info("first info")
        set_stderr_log_level(logging.WARNING)  # Ax's handler level applies to kd's lines
        log.info("second info")
        log.warning("a warning")
        set_ax_logger_levels(logging.ERROR)
        log.warning("quiet warning")
        logging.getLogger("ax_kernel_discovery.module_imported_later").warning("quiet too")
        """
    )
    name = re.escape("ax_kernel_discovery.surrogate.fitting")
    assert re.search(AX_LINE.format(level="INFO", name=name) + "first info", err), err
    assert re.search(AX_LINE.format(level="WARNING", name=name) + "a warning", err), err
    assert "second info" not in err and "quiet" not in err and "Logging error" not in err
    assert "before: silent" not in err
