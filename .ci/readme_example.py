"""Run the README's first Python block, as a user who installed the wheel would.

Usage: ``python .ci/readme_example.py README.md`` from a folder outside the clone, with the
installed package (not the source tree) on the path. Prints the block's wall time.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path


def first_python_block(readme: Path) -> str:
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), flags=re.S)
    if not blocks:
        raise SystemExit(f"{readme}: no ```python block")
    return blocks[0]


if __name__ == "__main__":
    code = first_python_block(Path(sys.argv[1]))
    import ax_kernel_discovery

    source = Path(ax_kernel_discovery.__file__).resolve()
    if "site-packages" not in source.parts:
        raise SystemExit(f"ax_kernel_discovery was imported from {source}, not an installed wheel")
    t0 = time.perf_counter()
    exec(compile(code, "README.md (first python block)", "exec"), {"__name__": "__main__"})
    print(f"README's first example ran in {time.perf_counter() - t0:.0f} s from the wheel")
