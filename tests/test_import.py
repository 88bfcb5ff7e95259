"""Importing the package changes nothing global (issue 49 item 6).

Each check runs in a fresh interpreter: what is checked is the state of a process before
and after ``import ax_kernel_discovery``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env={"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_leaves_the_environment_logging_and_axs_node_encoding_as_they_were() -> None:
    out = _run(
        """
        import json, logging, os
        from ax.generation_strategy.generation_node import GenerationNode
        from ax.generation_strategy.generator_spec import GeneratorSpec
        from ax.adapter.registry import Generators
        from ax.storage.json_store.encoder import object_to_json
        from ax.storage.json_store.registry import CORE_ENCODER_REGISTRY

        logging.disable(logging.DEBUG)  # a user's own setting, kept through the import
        node = GenerationNode(
            name="Sobol", generator_specs=[GeneratorSpec(generator_enum=Generators.SOBOL)]
        )
        env = dict(os.environ)
        before = object_to_json(node)
        import ax_kernel_discovery
        from ax_kernel_discovery.log import PACKAGE_LOGGER

        logger = logging.getLogger(PACKAGE_LOGGER)
        print(json.dumps({
            "env_added": sorted(set(os.environ) - set(env)),
            "env_changed": sorted(k for k in env if os.environ.get(k) != env[k]),
            "disabled": logging.root.manager.disable,
            "same_node_json": object_to_json(node) == before,
            "handlers": [type(h).__name__ for h in logger.handlers],
            "propagate": logger.propagate,
        }))
        """
    )
    assert out["env_added"] == [] and out["env_changed"] == []
    assert out["disabled"] == 10  # logging.DEBUG, as the user set it
    assert out["same_node_json"]  # a node without a kd surrogate: Ax's own JSON
    assert out["handlers"] == ["NullHandler"] and out["propagate"]


def test_a_failing_import_still_restores_loggings_disabled_state() -> None:
    """The quiet section around Ax's first import ends in a ``finally``."""
    out = _run(
        """
        import builtins, json, logging
        real_import = builtins.__import__

        def failing(name, *args, **kwargs):
            if name == "ax_kernel_discovery.strategy":
                raise ImportError("simulated")
            return real_import(name, *args, **kwargs)

        builtins.__import__ = failing
        try:
            import ax_kernel_discovery
        except ImportError:
            pass
        builtins.__import__ = real_import
        print(json.dumps({"disabled": logging.root.manager.disable}))
        """
    )
    assert out["disabled"] == 0  # logging.NOTSET: nothing left disabled


def test_building_a_surrogate_routes_kds_log_lines_to_axs_handler() -> None:
    out = _run(
        """
        import json, logging
        from ax_kernel_discovery import KernelDiscoverySurrogate
        from ax_kernel_discovery.log import PACKAGE_LOGGER, AxStreamHandler

        KernelDiscoverySurrogate()
        logger = logging.getLogger(PACKAGE_LOGGER)
        print(json.dumps({"routed": any(isinstance(h, AxStreamHandler) for h in logger.handlers)}))
        """
    )
    assert out["routed"]
