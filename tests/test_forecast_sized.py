"""benchmarks/forecast_sized.py: quarterly.yaml with a forecast of growing daily peaks pasted
in loads as a scenario, its growth rising as the history does."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from benchmarks.forecast_sized import forecast_sized
from models.loader import load_scenario

pytest.importorskip("statsmodels")


def test_the_forecast_sized_scenario_loads_and_grows(tmp_path: Path) -> None:
    """At 0.12 % a day chat grows about 11 % a quarter (e^(0.0012 × 91)): each period's growth
    is above the last; three demand scenarios; the batch workload keeps its own."""
    scenario = load_scenario(forecast_sized(tmp_path, 0.0012))
    chat = next(w for w in scenario.workloads if w.name == "chat")
    growth = list(chat.growth)
    assert len(growth) == 4 and all(b / a > 1.08 for a, b in itertools.pairwise(growth))
    assert [d.name for d in scenario.demand_scenarios] == ["low", "base", "high"]
    batch = next(w for w in scenario.workloads if w.name == "nightly-summaries")
    assert list(batch.growth) == [1.0, 1.0, 1.25, 1.25]
