"""The docs run as written: every Python snippet of README.md and docs/, and the settings table.

Each snippet runs on its own, in a fresh namespace (its imports and setup are its own);
the snippets of one page run in order in one temporary folder, the reader's working
folder, so that a file an earlier snippet saved (the README's ``run.json``) is there. The
default suite runs the README's snippets; the slow suite (``nox -s slow``) runs every
page's, each in its own interpreter of a fresh virtual environment with the package
installed from the checkout. A snippet may be marked by an HTML comment on the line
before its fence:

* ``<!-- snippet: slow ... -->``: runs in the slow suite only;
* ``<!-- snippet: llm ... -->``: calls an LLM; it runs with no API key in the
  environment, so the call fails fast and the snippet shows the failure path offline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch

from ax_kernel_discovery.settings_table import TABLE_END, TABLE_FILE, TABLE_START, settings_table
from ax_kernel_discovery.study.holdout import (
    README_END,
    README_START,
    readme_block,
)

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"(?:<!-- snippet: (\w+)[^>]*-->\n)?```python\n(.*?)```", re.S)


@dataclass
class Snippet:
    path: Path
    line: int
    code: str
    marker: str | None


def snippets(path: Path) -> list[Snippet]:
    """The ```python blocks of a Markdown file, with their line and marker."""
    text = path.read_text()
    return [
        Snippet(path, text.count("\n", 0, m.start()) + 1, m.group(2), m.group(1))
        for m in FENCE.finditer(text)
    ]


NO_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AXKD_LLM_MODEL", "AXKD_LLM_API_BASE")


def _run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slow: bool) -> int:
    """Run the page's snippets (``slow``: the slow ones), each in a fresh namespace, in
    order, in ``tmp_path``."""
    for key in NO_KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    ran = 0
    for snippet in snippets(path):
        if (snippet.marker == "slow") != slow:
            continue
        where = f"{path.relative_to(ROOT)}:{snippet.line}"
        namespace: dict[str, object] = {"__name__": "__docs__"}  # on its own
        try:
            exec(compile(snippet.code, where, "exec"), namespace)  # noqa: S102 - our own docs
        except Exception as e:
            raise AssertionError(f"the snippet at {where} failed: {type(e).__name__}: {e}") from e
        ran += 1
    return ran


def test_the_readmes_snippets_run_each_on_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 53 item 7: the default suite runs the README's snippets, each on its own."""
    assert _run(ROOT / "README.md", tmp_path, monkeypatch, slow=False) == len(
        [s for s in snippets(ROOT / "README.md") if s.marker != "slow"]
    )


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment with the package installed from the checkout (the tested
    pins, and the ``sql`` extra the SQL-storage snippet names), as a new user would have it."""
    import subprocess
    import sys

    venv = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        # the [sql] extra: docs/api.md's SQL-storage snippet says it needs it
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "-c",
            str(ROOT / "constraints.txt"),
            f"{ROOT}[sql]",
        ],
        check=True,
        timeout=3600,
    )
    return python


@pytest.mark.slow
@pytest.mark.parametrize(
    "path", [p for p in DOCS if snippets(p)], ids=lambda p: str(p.relative_to(ROOT))
)
def test_every_snippet_runs_on_its_own_in_a_fresh_venv(
    path: Path, tmp_path: Path, fresh_venv: Path
) -> None:
    """Issue 53 item 7: every snippet of README.md and docs/ in its own interpreter of a
    fresh environment, the page's snippets in order in one folder."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in NO_KEYS and k != "PYTHONPATH"}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    for snippet in snippets(path):
        where = f"{path.relative_to(ROOT)}:{snippet.line}"
        code = "import torch\ntorch.set_num_threads(1)\n" + snippet.code
        done = subprocess.run(
            [str(fresh_venv), "-c", code],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        assert done.returncode == 0, f"the snippet at {where} failed:\n{done.stderr[-3000:]}"


def test_the_readme_example_is_the_first_snippet_and_needs_nothing_else() -> None:
    """The README's "A first run" is complete: it runs in a fresh namespace on its own."""
    first = snippets(ROOT / "README.md")[0]
    assert "def my_function" in first.code and "get_next_trials(max_trials=4)" in first.code
    assert first.marker is None


def test_the_settings_table_is_generated_from_the_config() -> None:
    text = (ROOT / TABLE_FILE).read_text()
    start, end = text.index(TABLE_START), text.index(TABLE_END)
    assert text[start + len(TABLE_START) + 1 : end] == settings_table(), (
        f"{TABLE_FILE}'s settings table is out of date: run `python -m "
        f"ax_kernel_discovery.settings_table` and commit {TABLE_FILE}"
    )


def test_every_setting_is_described() -> None:
    from ax_kernel_discovery import KernelDiscoveryConfig

    missing = [n for n, f in KernelDiscoveryConfig.model_fields.items() if not f.description]
    assert missing == []


def test_no_formatter_damage_in_snippets() -> None:
    """A subscript or call split over lines by a formatter (``history[\\n    -1\\n]``)."""
    damaged = [
        f"{s.path.relative_to(ROOT)}:{s.line}"
        for p in DOCS
        for s in snippets(p)
        if re.search(r"[\[(]\n\s+-?\w+\n\s*[\])]", s.code)
    ]
    assert damaged == []


def test_the_readme_is_read_in_five_minutes() -> None:
    """The two commands, what kd does, the example, then how well it works; the long
    explanations live in docs/, and no stale quality numbers stay behind."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 210  # with the generated result table and the two examples
    order = [
        "nox -s demo",
        "**What it does.**",
        "## A first run",
        "def my_function",
        "## How well it works",
        README_START,
        "## What it did: kd's cards in Ax's analyses",
    ]
    positions = [text.index(marker) for marker in order]
    assert positions == sorted(positions)
    section = text.split("## How well it works", 1)[1].split("\n## ", 1)[0]
    outside = section.split(README_START)[0] + section.split(README_END)[1]
    assert not re.search(r"\d\.\d", outside), "quality numbers belong to the generated table"
    assert "docs/img/kd_scores.png" in text and (ROOT / "docs" / "img" / "kd_scores.png").is_file()
    for moved in ("docs/configuration.md", "docs/install.md", "docs/api.md", "docs/concepts.md"):
        assert f"]({moved}" in text and (ROOT / moved).is_file()


def test_the_readme_result_table_is_generated_from_the_run_files() -> None:
    """Issue 31 item 5: the README's numbers come from the hold-out study's run files
    (``python -m ax_kernel_discovery.study.holdout README.md`` rewrites them)."""
    text = (ROOT / "README.md").read_text()
    table = text.split(README_START, 1)[1].split(README_END, 1)[0].strip()
    expected = readme_block(ROOT / "benchmarks" / "results")
    assert table == expected.strip(), (
        "README.md's result table is out of date: run `python -m "
        "ax_kernel_discovery.study.holdout README.md` and commit README.md"
    )


def _generated_text(benchmark_script: Any) -> str:
    """What the project's generators print: the study report, the hold-out study's README
    table and the benchmark tables the docs quote (``benchmarks/acqf_twins.py``,
    ``benchmarks/llm_study_tables.py``)."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        benchmark_script("acqf_twins").main([])
        benchmark_script("llm_study_tables").main([])
    holdout = readme_block(ROOT / "benchmarks" / "results")
    return out.getvalue() + (ROOT / "docs" / "results.md").read_text() + holdout


def test_quoted_study_numbers_come_from_a_generated_table(benchmark_script: Any) -> None:
    """Issue 31 item 5: a study number quoted in README.md or docs/ by hand (a W/T/L count,
    a t-interval, a p-value) must be one a generator prints from the committed run files
    (to the digits quoted), so that a stale number fails here."""
    generated = _generated_text(benchmark_script)
    counts = set(re.findall(r"(?<![\d/.])\d+/\d+/\d+(?![\d/])", generated))
    values = [float(x) for x in re.findall(r"-?\d+\.\d+", generated)]

    def printed(quoted: str) -> bool:
        digits = len(quoted.split(".")[1])
        return any(round(v, digits) == float(quoted) for v in values)

    stale: list[str] = []
    for path in DOCS:
        if path.name == "results.md":  # generated itself
            continue
        text = path.read_text()
        where = str(path.relative_to(ROOT))
        stale += [
            f"{where}: {c}"
            for c in re.findall(r"(?<![\d/.])\d+/\d+/\d+(?![\d/])", text)
            if c not in counts
        ]
        quoted = [x for pair in re.findall(r"\[(-?\d+\.\d+), (-?\d+\.\d+)\]", text) for x in pair]
        quoted += re.findall(r"\bp ?= ?(0\.\d+)", text)
        stale += [f"{where}: {q}" for q in quoted if not printed(q)]
    assert not stale, f"numbers no generator prints (stale?): {stale}"


def _registry_tables() -> Any:
    """docs/_ext/registry_tables.py, which renders the docs' registry lists."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "registry_tables", ROOT / "docs" / "_ext" / "registry_tables.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REGISTRY_DIRECTIVE = re.compile(r"```\{kd-registry\} (\w+)\n```")


def test_every_registry_is_rendered_in_the_docs_with_all_its_names() -> None:
    """Issue 53 item 1: each list that has a registry (leaves, warps, proposers,
    criteria, problems, methods) is a ``{kd-registry}`` table in docs/, made from the
    registry: every name of the registry is in it."""
    tables = _registry_tables()
    used = {m.group(1) for p in DOCS for m in REGISTRY_DIRECTIVE.finditer(p.read_text())}
    assert used == set(tables.TABLES)
    for name, names in tables.registries().items():
        table = tables.TABLES[name]()
        rows = [line.split("|")[1].strip() for line in table.splitlines()[2:]]
        assert rows == [f"`{n}`" for n in names], name


def _hand_lists(text: str, names: set[str]) -> list[str]:
    """Where ``text`` types a list of ``names`` by hand: a paragraph, table row or list
    item that names half of them or more (at least 3) in backticks, or a table or list
    whose rows start with 3 or more of them."""
    text = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    enough = max(3, -(-len(names) // 2))
    found: list[str] = []
    rows: list[str] = []
    paragraph: set[str] = set()
    for i, line in enumerate([*text.splitlines(), ""], 1):
        named = set(re.findall(r"`([^`]+)`", line)) & names
        item = re.match(r"\s*(\||[-*] |\d+\. )", line)
        if item and len(named) >= enough:
            found.append(f"line {i}: {sorted(named)}")
        if not item:
            paragraph |= named
        start = re.match(r"\s*(?:\||[-*]|\d+\.)\s*`([^`]+)`", line)
        if start and start.group(1) in names:
            rows.append(start.group(1))
        if not line.strip():
            if len(paragraph) >= enough:
                found.append(f"the paragraph ending at line {i - 1}: {sorted(paragraph)}")
            if len(rows) >= 3:
                found.append(f"the rows ending at line {i - 1}: {rows}")
            rows, paragraph = [], set()
    return found


def test_no_list_of_registry_names_is_typed_by_hand() -> None:
    """Issue 53 item 1: README.md and docs/ name a registry's entries one by one in prose
    where needed, but a list or table of them is the generated one (``{kd-registry}``);
    the public names are listed by the generated API reference, not in docs/api.md."""
    import ax_kernel_discovery

    registries = {
        **_registry_tables().registries(),
        "public names": tuple(ax_kernel_discovery.__all__),
    }
    found = [
        f"{path.relative_to(ROOT)}: {name}: {where}"
        for path in DOCS
        if path.name != "results.md"  # the study report, generated from the run files
        for name, names in registries.items()
        for where in _hand_lists(path.read_text(), set(names))
    ]
    assert found == [], "\n".join(found)


def test_the_hand_list_check_finds_a_hand_list() -> None:
    leaves = set(_registry_tables().registries()["leaves"])
    assert _hand_lists(
        "Leaves: `rbf`, `matern52`, `rq`,\n`sl`, `bock`, `poly2` and\n`linear`.\n", leaves
    )
    assert _hand_lists("| `rbf` | a |\n| `rq` | b |\n| `bock` | c |\n", leaves)
    assert _hand_lists("- `rbf`: a\n- `rq`: b\n  more\n- `sl`: c\n", leaves)
    assert not _hand_lists("`rbf`, `sl` and `rq`.\n\n`bock` later.\n", leaves)
