"""A forecast-sized plan over periods: ``inputs/scenarios/quarterly.yaml`` with the growth and
demand scenarios ``fleetplan forecast`` gives for a year of daily peaks that grow (the input of
the second-pass cliff, benchmarks/results/over-periods.md, "Over periods").

The history: for chat, code-completion and agent, 365 daily peaks ending 2026-12-31 at the
scenario's ``peak_rps``, growing ``--rate`` a day (code-completion 0.7 ×, agent 1.4 × that),
with a weekly wave of ±6 % and 4 % noise (seed 16); nightly-summaries keeps its own growth.
Writes ``history.csv`` and ``forecast_sized.yaml`` to ``--out``::

    .venv/bin/python benchmarks/forecast_sized.py --out /tmp/fs
    nice -n 19 .venv/bin/fleetplan plan /tmp/fs/forecast_sized.yaml --time-limit 120 --no-replay
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from models.horizon import Horizon  # noqa: E402
from solver.studies.forecast import forecast, read_history, scenario_block  # noqa: E402

SCENARIO = ROOT / "inputs" / "scenarios" / "quarterly.yaml"
#: Growth of each workload's daily peak relative to ``--rate`` [1].
RATE_FACTORS = {"chat": 1.0, "code-completion": 0.7, "agent": 1.4}


def history_lines(peaks_rps: dict[str, float], rate_per_day: float, days: int = 365,
                  end: dt.date = dt.date(2026, 12, 31)) -> list[str]:
    """The history CSV's lines: each workload's daily peak [req/s], ending at ``peaks_rps``."""
    rng = np.random.default_rng(16)
    lines = ["date,workload,peak_rps"]
    for name, rps in peaks_rps.items():
        rate = rate_per_day * RATE_FACTORS[name]
        for i in range(days):
            day = end - dt.timedelta(days=days - 1 - i)
            wave = 0.06 * math.sin(2 * math.pi * i / 7)  # weekly
            value = rps * math.exp(rate * (i - days + 1) + wave + rng.normal(0, 0.04))
            lines.append(f"{day.isoformat()},{name},{value:.4f}")
    return lines


def forecast_sized(out: Path, rate_per_day: float) -> Path:
    """Write the history and the scenario with its forecast pasted in; the scenario's path."""
    scenario: dict[str, Any] = yaml.safe_load(SCENARIO.read_text())
    peaks = {w["name"]: float(w["arrival"]["peak_rps"]) for w in scenario["workloads"]
             if w["name"] in RATE_FACTORS}
    out.mkdir(parents=True, exist_ok=True)
    history = out / "history.csv"
    history.write_text("\n".join(history_lines(peaks, rate_per_day)) + "\n")
    horizon = Horizon(**scenario["horizon"])
    block = scenario_block(forecast(read_history(history, list(peaks)), horizon, peaks),
                           horizon)
    scenario["name"] = "forecast-sized"
    scenario["demand_scenarios"] = block["demand_scenarios"]
    growth: dict[str, list[float]] = block["growth"]  # type: ignore[assignment]
    for w in scenario["workloads"]:
        w["growth"] = growth.get(w["name"], w.get("growth"))
    path = out / "forecast_sized.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False, width=100))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="directory to write to")
    parser.add_argument("--rate", type=float, default=0.0012,
                        help="daily growth of chat's peak [1/day]")
    args = parser.parse_args()
    print(forecast_sized(args.out, args.rate))


if __name__ == "__main__":
    main()
