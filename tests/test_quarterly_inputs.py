"""The README's quarterly commands run on a fresh clone: the sample history and the next
quarter's scenario ship under inputs/scenarios/, the history is what :func:`sample_history`
writes (its figures are illustrative, not measured), and the three commands succeed."""

from __future__ import annotations

import json
import math
import os
import random
import re
import shlex
from datetime import date, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from inputs import scenarios_dir
from models.loader import load_scenario
from solver.cli import main

ROOT = Path(__file__).resolve().parents[1]
HISTORY = scenarios_dir() / "quarterly_history.csv"
NEXT_QUARTER = scenarios_dir() / "quarterly_q2.yaml"
#: Last day of the sample history: the day before quarterly.yaml's horizon starts.
LAST_DAY = date(2026, 12, 31)
DAYS = 184
#: Per workload of quarterly.yaml: growth per day (about its base growth over Q1→Q2: chat
#: 1.15, code completion 1.10, agent 1.20 a quarter) and its weekend level (IDE traffic drops
#: at weekends, chat and agents less). ILLUSTRATIVE figures, not measured.
SHAPES = {"chat": (math.log(1.15) / 91, 0.85), "code-completion": (math.log(1.10) / 91, 0.45),
          "agent": (math.log(1.20) / 91, 0.90)}
#: Relative day-to-day noise (log scale, standard deviation) and its seed.
NOISE, SEED = 0.04, 2027


def sample_history() -> str:
    """inputs/scenarios/quarterly_history.csv: the busiest second of each day of the last 26
    weeks of 2026 for quarterly.yaml's interactive workloads, growing at ``SHAPES``' rate to
    end at the scenario's ``peak_rps`` on weekdays, lower at weekends, with ``NOISE``."""
    peaks = {w.name: w.arrival.peak_rps for w in load_scenario(
        scenarios_dir() / "quarterly.yaml").workloads if w.arrival is not None}
    rng = random.Random(SEED)
    lines = ["date,workload,peak_rps"]
    for name, (rate, weekend) in SHAPES.items():
        for back in range(DAYS - 1, -1, -1):
            day = LAST_DAY - timedelta(days=back)
            level = weekend if day.weekday() >= 5 else 1.0
            value = peaks[name] * level * math.exp(-rate * back + rng.gauss(0.0, NOISE))
            lines.append(f"{day.isoformat()},{name},{value:.3f}")
    return "\n".join(lines) + "\n"


def test_the_shipped_history_is_the_documented_one() -> None:
    """Its figures come from the formula above, nothing else (regenerate: write
    ``sample_history()`` to the file)."""
    assert HISTORY.read_text() == sample_history()


def _readme_commands() -> list[list[str]]:
    """The console lines of the README's quarterly section, as argument lists."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quarterly procurement", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```console\n(.*?)```", section, re.S)
    assert block is not None
    out = []
    for line in block.group(1).splitlines():
        if line.startswith("$ fleetplan "):
            out.append(shlex.split(line[2:].split("#", 1)[0])[1:])
    return out


def test_the_readme_names_the_shipped_files() -> None:
    commands = _readme_commands()
    assert [c[0] for c in commands] == ["forecast", "plan", "plan"]
    for args in commands:
        for a in args:
            if a.startswith("inputs/"):
                assert (ROOT / a).is_file(), f"README names {a}, which is not shipped"


@pytest.mark.skipif(os.environ.get("FLEETPLAN_SLOW") != "1",
                    reason="plans quarterly.yaml twice (~1 min); set FLEETPLAN_SLOW=1")
def test_the_readme_commands_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From the repository root as the README runs them (short time limits): the forecast
    prints the scenario keys, the plan writes its orders, and the re-plan keeps the orders the
    first placed before 2027-04-01 as held nodes."""
    pytest.importorskip("statsmodels")
    monkeypatch.chdir(ROOT)
    runner = CliRunner()
    outputs: list[Path] = []
    for args in _readme_commands():
        if args[0] == "plan":
            args = [*args, "--time-limit", "20"]
            out = tmp_path / Path(args[args.index("--out") + 1]).name
            args[args.index("--out") + 1] = str(out)
            if "--existing" in args:
                args[args.index("--existing") + 1] = str(outputs[-1] / "plan.json")
            outputs.append(out)
        result = runner.invoke(main, args)
        assert result.exit_code == 0, result.output
        if args[0] == "forecast":
            assert "demand_scenarios:" in result.output and "chat:" in result.output
    first = json.loads((outputs[0] / "plan.json").read_text())
    placed = [o for o in first["orders"]
              if o["scenario"] is None and o["order_by"] < "2027-04-01"]
    assert placed, "the Q1 plan orders nothing before 2027-04-01: nothing for the re-plan to keep"
    resolved = load_scenario(outputs[1] / "scenario.resolved.yaml")
    own = load_scenario(NEXT_QUARTER)
    assert len(resolved.inventory) == len(own.inventory) + len(placed)
