"""A measured row's rate against what the GPU's datasheet allows (solver/capacity/measured.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from inputs import scenarios_dir
from models.loader import load_scenario
from solver.capacity.measured import implausible_measurements, physics_ceilings
from solver.cli import main

SCENARIOS = scenarios_dir()


def _twenty_rps(tmp_path: Path, rows: dict[str, object] | None = None,
                workload: dict[str, object] | None = None) -> Path:
    """twenty_rps with its measured row and workload changed as given, written to tmp_path."""
    doc = yaml.safe_load((SCENARIOS / "twenty_rps.yaml").read_text(encoding="utf-8"))
    doc["workloads"][0].update(workload or {})
    header, row = (SCENARIOS / "twenty_rps_measured.csv").read_text(encoding="utf-8").split()
    cells = dict(zip(header.split(","), row.split(","), strict=True))
    cells.update({k: str(v) for k, v in (rows or {}).items()})
    (tmp_path / "rows.csv").write_text(",".join(cells) + "\n" + ",".join(cells.values()) + "\n",
                                       encoding="utf-8")
    doc["measured_csv"] = "rows.csv"
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def test_the_ceilings_are_the_datasheet_arithmetic() -> None:
    """Llama-3.1-70B FP8 on two H100-SXM: 2 × 1,979 TFLOPS over 2 × 68.5 G linear parameters
    (70.6 G less the untied 128,256 × 8,192 embedding and head) × 1,800 tokens a request is
    16.0 req/s; 72 sequences over a 35 GB-a-GPU weight read at 3,350 GB/s, 300 outputs a
    request, is 23 req/s."""
    sc = load_scenario(SCENARIOS / "twenty_rps.yaml")
    compute_rps, hbm_rps = physics_ceilings(sc, sc.measured[0])
    assert compute_rps == pytest.approx(2 * 1979e12 / (2 * 68.5e9 * 1800), rel=0.01)
    assert hbm_rps == pytest.approx(72 / (35.3e9 / 3350e9) / 300, rel=0.03)


def test_the_shipped_worked_example_is_above_the_compute_ceiling() -> None:
    """Issue 2's worked example (18 req/s of 1,500 + 300 tokens on a TP2 H100 FP8 replica of a
    70B model) needs 112 % of the replica's dense FP8 peak: said, and the row still used."""
    sc = load_scenario(SCENARIOS / "twenty_rps.yaml")
    (warning,) = implausible_measurements(sc)
    assert warning.startswith("measured[0] (twenty-rps on H100-SXM TP2, 2026-10-15): "
                              "tested_peak_rps 18 is above what the replica's compute")
    assert "16.1 req/s (112% of it)" in warning and "the row is used as given" in warning


@pytest.mark.parametrize(("rows", "workload", "says"), [
    ({"tested_peak_rps": 10}, {}, None),
    # half the prompt from the prefix cache: 1,050 tokens through the layers, 27 req/s
    ({}, {"prefix_cache_hit_rate": 0.5}, None),
    # four sequences an iteration at ≥ 10.5 ms: 1.3 req/s of 300-token outputs
    ({"max_stable_sequences": 4, "tested_peak_rps": 2}, {}, "HBM bandwidth (4 sequences"),
])
def test_each_ceiling_and_the_cache(tmp_path: Path, rows: dict[str, object],
                                    workload: dict[str, object], says: str | None) -> None:
    sc = load_scenario(_twenty_rps(tmp_path, rows, workload))
    warnings = implausible_measurements(sc)
    if says is None:
        assert warnings == []
    else:
        (warning,) = warnings
        assert says in warning


def test_validate_prints_it_as_a_warning(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["validate", "--json", str(_twenty_rps(tmp_path))])
    assert result.exit_code == 0, result.output
    (warning,) = [w for w in json.loads(result.stdout)["measured_warnings"]
                  if "above what" in w]
    assert "above what the replica's compute" in warning
    assert f"warning: {warning}" in result.stderr
