"""The README's "Bring your own measurements" walk-through prints what the commands print.

Its transcript had drifted from the commands' output (old column titles, `1400.0` for
`1,400.0`, a workloads line the plan no longer prints): a planner comparing their terminal with
the README saw a different tool. Here its import-bench sweep is written as `vllm bench serve`
writes it (tests/bench_files.py; the served rates and P95s are the README table's, the
sequences in flight 80/140/200/260), its `chat.yaml` is taken from the README as printed, and
the commands it shows are run as written.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from solver.cli import main
from tests import bench_files as bf

README = Path(__file__).resolve().parents[1] / "README.md"
IMPORT = "$ fleetplan import-bench "
PLAN = "$ fleetplan plan chat.yaml --out out"


def _console_after(text: str, command_start: str, after: str = "") -> tuple[str, list[str]]:
    """The first command line starting ``command_start`` (below the line starting ``after``) in
    a console block, and the lines shown after it up to the block's end."""
    lines = text.splitlines()
    first = next(k for k, line in enumerate(lines) if line.startswith(after))
    i = next(k for k in range(first, len(lines)) if lines[k].startswith(command_start))
    end = next(k for k in range(i + 1, len(lines)) if lines[k].startswith("```"))
    return lines[i], lines[i + 1:end]


def _loads(table: list[str]) -> list[bf.Load]:
    """The README table's rows as tested loads: offered, served, TTFT and per-token P95."""
    in_flight = iter((80, 140, 200, 260))
    out = []
    for row in table:
        cells = row.split()
        out.append(bf.Load(float(cells[0]), float(cells[2]), float(cells[3].replace(",", "")),
                           float(cells[4]), peak_in_flight=next(in_flight)))
    return out


def _run(command: str, cwd: Path) -> str:
    args = []
    for word in shlex.split(command.removeprefix("$ fleetplan ")):
        matched = sorted(str(p.name) for p in cwd.glob(word)) if "*" in word else [word]
        args += matched
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_import_bench_walk_through_prints_what_the_readme_shows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = README.read_text(encoding="utf-8")
    scenario = text.split("```yaml\n# chat.yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "chat.yaml").write_text(scenario, encoding="utf-8")
    command, shown = _console_after(text, IMPORT)
    rows = [line for line in shown if line.split()[1:2] == ["req/s"]]
    assert len(rows) == 4
    for x in _loads(rows):
        bf.write_json(tmp_path / f"vllm-rate{x.load:g}.json", bf.vllm_new(x))
    monkeypatch.chdir(tmp_path)
    assert _run(command, tmp_path).splitlines() == shown
    plan_command, plan_shown = _console_after(text, PLAN, after=IMPORT)
    printed = _run(plan_command, tmp_path).splitlines()
    table = [line for line in plan_shown if line != "…"]
    start = printed.index(table[0])
    assert printed[start:start + len(table)] == table
