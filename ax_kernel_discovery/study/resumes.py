"""Every resumed run of a study folder, listed from the result files themselves.

A run that was stopped and continued from its checkpoint records one entry per session in
its result file (``sessions``: when it started, the evaluations it began and ended with,
and whether it ``resumed``). :func:`resumed_runs` reads them; :func:`resumes_block` is the
list a round's ``RUNS.md`` shows between markers (:data:`RESUMES_START`), rewritten by
``python -m ax_kernel_discovery.study.resumes <RUNS.md> ...`` so that no resume is missed
by hand (a test compares every round's list with its files).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "RESUMES_END",
    "RESUMES_START",
    "resumed_runs",
    "resumes_block",
    "study_runs_files",
    "write_resumes",
]

RESUMES_START = (
    "<!-- resumed runs: generated from the result files by "
    "`python -m ax_kernel_discovery.study.resumes` -->"
)
RESUMES_END = "<!-- end of resumed runs -->"


def _sessions(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    timings = record.get("timings") or {}
    sessions = record.get("sessions") or timings.get("sessions") or []
    return [s for s in sessions if isinstance(s, Mapping)]


def resumed_runs(folder: str | Path) -> list[dict[str, Any]]:
    """The runs under ``folder`` (searched recursively) that were resumed at least once.

    Returns:
        One entry per resumed run, sorted by path: ``path`` (relative to ``folder``),
        ``run`` (problem, method, seed), ``resumes`` (the number of resumed sessions) and
        ``at`` (the evaluations each resumed session began with).
    """
    root = Path(folder)
    out = []
    for path in sorted(root.rglob("*.json")):
        if "checkpoints" in path.parts:
            continue
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(record, dict) or "problem" not in record:
            continue
        resumed = [s for s in _sessions(record) if s.get("resumed")]
        if resumed:
            out.append(
                {
                    "path": path.relative_to(root).as_posix(),
                    "run": f"{record['problem']} {record.get('method')} seed {record.get('seed')}",
                    "resumes": len(resumed),
                    "at": [s.get("n_start") for s in resumed],
                }
            )
    return out


def resumes_block(folder: str | Path) -> str:
    """The list of :func:`resumed_runs` for a ``RUNS.md``: one line per resumed run."""
    runs = resumed_runs(folder)
    if not runs:
        return "No run under this folder was resumed (every result file records one session)."
    lines = [
        f"{len(runs)} runs were resumed from their checkpoints (each result file records its "
        "sessions):",
        "",
    ]
    for r in runs:
        at = ", ".join(str(n) for n in r["at"])
        times = "once" if r["resumes"] == 1 else f"{r['resumes']} times"
        lines.append(f"- `{r['path']}` ({r['run']}): resumed {times}, at {at} evaluations")
    return "\n".join(lines)


def write_resumes(runs_md: str | Path, folder: str | Path | None = None) -> bool:
    """Rewrite the block between ``runs_md``'s markers (appended when it has none) with
    :func:`resumes_block` of ``folder`` (default: the folder of ``runs_md``); ``True``
    when the file changed."""
    path = Path(runs_md)
    block = resumes_block(folder if folder is not None else path.parent)
    text = path.read_text()
    if RESUMES_START in text:
        start = text.index(RESUMES_START) + len(RESUMES_START)
        end = text.index(RESUMES_END)
        new = text[:start] + "\n" + block + "\n" + text[end:]
    else:
        new = (
            text.rstrip("\n")
            + "\n\n## Resumed runs\n\n"
            + f"{RESUMES_START}\n{block}\n{RESUMES_END}\n"
        )
    path.write_text(new)
    return new != text


def study_runs_files(results: Path) -> list[Path]:
    """The ``RUNS.md`` of every study folder under ``results``: the hold-out rounds', the
    cost protocol's (its tuning runs) and the 400-evaluation tier's (``long400b``)."""
    tiers = [results / "cost" / "RUNS.md", results / "long400b" / "RUNS.md"]
    return sorted(results.glob("holdout*/RUNS.md")) + [p for p in tiers if p.is_file()]


if __name__ == "__main__":  # pragma: no cover - the command the markers name
    given = [Path(a) for a in sys.argv[1:]]
    for target in given or study_runs_files(Path("benchmarks/results")):
        changed = write_resumes(target)
        print(f"{target}: {'rewritten' if changed else 'unchanged'}")
