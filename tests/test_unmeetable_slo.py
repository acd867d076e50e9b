"""An SLO that no configuration meets is named by `validate`, `compare` and `sweep` as `plan`
names it (qa3 F8: `validate` said "valid", and compare and sweep only "infeasible")."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from inputs import scenarios_dir
from solver.cli import main

#: tiny's chat, and a copy of it whose per-token SLO no GPU of tiny meets even at no load
STRICT_TPOT_MS = 0.5


@pytest.fixture
def strict(tmp_path: Path) -> Path:
    data = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text())
    chat = data["workloads"][0]
    data["workloads"].append({**chat, "name": "strict",
                              "slo": {**chat["slo"], "tpot_p95_ms": STRICT_TPOT_MS}})
    path = tmp_path / "strict.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_validate_warns_of_an_slo_nothing_meets(strict: Path) -> None:
    result = CliRunner().invoke(main, ["validate", str(strict), "--json"])
    assert result.exit_code == 0, result.output  # well-formed: plan says infeasible, not bad
    warnings = json.loads(result.stdout)["slo_warnings"]
    assert len(warnings) == 1
    assert warnings[0].startswith("`strict` cannot meet its per-token SLO (slo.tpot_p95_ms 0.5 ms)")
    assert f"warning: {warnings[0]}" in result.stderr
    tiny = CliRunner().invoke(main, ["validate", str(scenarios_dir() / "tiny.yaml"), "--json"])
    assert "slo_warnings" not in json.loads(tiny.stdout) and "warning" not in tiny.stderr


def test_compare_says_which_slo_no_configuration_meets(strict: Path, tmp_path: Path) -> None:
    out = tmp_path / "c.xlsx"
    result = CliRunner().invoke(main, ["compare", str(strict), "--out", str(out)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    at = lines.index("S1 tiny: no fleet meets every requirement:")
    assert lines[at + 1].startswith("  - `strict` cannot meet its per-token SLO "
                                    "(slo.tpot_p95_ms 0.5 ms)")
    assert "raise slo.tpot_p95_ms to at least" in lines[at + 1]
    frame = pd.read_excel(out, sheet_name="Comparison", index_col=0)
    assert "cannot meet its per-token SLO" in frame.loc["What cannot be met"].iloc[0]


def test_sweep_says_which_slo_no_configuration_meets(strict: Path, tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    result = CliRunner().invoke(main, [
        "sweep", str(strict), "--vary", "workloads.strict.slo.tpot_p95_ms=0.5,50",
        "--out", str(out), "--quiet", "--workers", "1"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    at = lines.index("no fleet in 1 variant (1):")
    assert lines[at + 1].startswith("  - `strict` cannot meet its per-token SLO")
    frame = pd.read_csv(out / "sweep.csv")
    assert list(frame["status"]) == ["infeasible", "optimal"]
    assert "slo.tpot_p95_ms 0.5 ms" in frame["diagnosis"][0]
    assert pd.isna(frame["diagnosis"][1])


@pytest.mark.parametrize("how", [[], ["--solver", "cbc"], ["share_nodes=false"]])
def test_a_scenario_whose_only_workload_no_configuration_serves_is_infeasible(
        how: list[str], tmp_path: Path) -> None:
    """With no configuration left at all the program has no columns: HiGHS calls it empty, with
    no status of its rows; the plan was `time_limit` with no fleet, and `plan` then said "this
    is a bug in fleetplan" (exit 3) instead of naming the SLO."""
    data = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text())
    assert len(data["workloads"]) == 1
    data["workloads"][0]["slo"]["tpot_p95_ms"] = STRICT_TPOT_MS
    if how == ["share_nodes=false"]:
        data["policy"]["share_nodes"] = False
        how = []
    path = tmp_path / "only.yaml"
    path.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(main, ["plan", str(path), "--out", str(tmp_path / "out"),
                                       "--quiet", *how])
    assert result.exit_code == 1, result.output
    assert "this is a bug" not in result.output
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert plan["status"] == "infeasible"
    assert plan["diagnosis"][0]["message"].startswith(
        "`chat` cannot meet its per-token SLO (slo.tpot_p95_ms 0.5 ms)")


def _without_node_sizes(path: Path, to: Path) -> Path:
    """A copy of the scenario at ``path`` whose offers sell the catalog's node size."""
    data = yaml.safe_load(path.read_text())
    for zone in data["zones"]:
        for offer in zone["offers"]:
            offer.pop("gpus_per_node", None)
    to.write_text(yaml.safe_dump(data))
    return to


def test_validate_shows_the_node_sizes_the_scenario_sells(tmp_path: Path) -> None:
    """qa4 10: tiny sells L4 and H100-SXM one GPU at a time (`gpus_per_node: 1`); the zones
    line said so, the GPU table below it the catalog's 4 and 8."""
    tiny = scenarios_dir() / "tiny.yaml"
    data = json.loads(CliRunner().invoke(main, ["validate", str(tiny), "--json"]).stdout)
    assert {g["name"]: g["gpus_per_node"] for g in data["gpus"]} == {"L4": [1], "H100-SXM": [1]}
    text = CliRunner().invoke(main, ["validate", str(tiny)]).stdout.splitlines()
    table = text[next(i for i, line in enumerate(text) if line.startswith("GPU types on offer")):]
    header = table[1]
    at = header.index("GPUs per node") + len("GPUs per node")  # right-aligned column
    for gpu in ("L4", "H100-SXM"):
        row = next(line for line in table if line.split()[:1] == [gpu])
        assert row[:at].split()[-1] == "1", row
    catalog = _without_node_sizes(tiny, tmp_path / "catalog.yaml")
    data = json.loads(CliRunner().invoke(main, ["validate", str(catalog), "--json"]).stdout)
    assert {g["name"]: g["gpus_per_node"] for g in data["gpus"]} == {"L4": [4], "H100-SXM": [8]}


def _fastest_tp(warning: str) -> int:
    """The TP degree of the configuration an SLO warning names (``… (H100-SXM TP4 (4 GPUs))``)."""
    return int(warning.split(" TP", 1)[1].split(" ", 1)[0])


def test_the_slo_hint_names_a_configuration_the_sold_nodes_hold(
        strict: Path, tmp_path: Path) -> None:
    """qa4 10: on 1-GPU nodes the hint named `H100-SXM TP4 (4 GPUs)` as the fastest, which no
    node tiny sells can hold; with the catalog's 8-GPU nodes it may name a wider TP."""
    def warning(path: Path) -> str:
        (found,) = json.loads(CliRunner().invoke(
            main, ["validate", str(path), "--json"]).stdout)["slo_warnings"]
        return str(found)

    assert _fastest_tp(warning(strict)) == 1
    assert _fastest_tp(warning(_without_node_sizes(strict, tmp_path / "wide.yaml"))) > 1


def test_an_slo_only_wider_nodes_meet_is_named_when_the_plan_is_infeasible(
        tmp_path: Path) -> None:
    """A per-token SLO that TP2+ meets but TP1 does not: the capacity table has H100 rows (TP2
    and up) that tiny's 1-GPU nodes cannot hold, so the plan is infeasible; its diagnosis named
    `chat`'s demand shortfall (as though the GPUs were short), now the SLO and the fix."""
    from models.loader import load_scenario
    from solver.capacity.slo_floor import slo_floor

    tiny = scenarios_dir() / "tiny.yaml"
    narrow = slo_floor(sc := load_scenario(tiny), sc.workloads[0]).tpot
    wide_sc = load_scenario(_without_node_sizes(tiny, tmp_path / "wide.yaml"))
    wide = slo_floor(wide_sc, wide_sc.workloads[0]).tpot
    assert narrow is not None and wide is not None and wide.tp > 1 and wide.ms < narrow.ms
    data = yaml.safe_load(tiny.read_text())
    data["workloads"][0]["slo"]["tpot_p95_ms"] = round((wide.ms + narrow.ms) / 2, 2)
    path = tmp_path / "between.yaml"
    path.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(main, ["plan", str(path), "--out", str(tmp_path / "out"),
                                       "--quiet"])
    assert result.exit_code == 1, result.output
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert plan["status"] == "infeasible"
    assert plan["diagnosis"][0]["message"].startswith("`chat` cannot meet its per-token SLO")
    assert "TP1 (1 GPU)" in plan["diagnosis"][0]["message"]
    assert all(d["requirement"] == "slo" for d in plan["diagnosis"])


def test_capacity_says_which_candidates_no_sold_node_holds(tmp_path: Path) -> None:
    """Fresh-clone trial: `capacity tiny.yaml` listed H100-SXM TP2/TP4/TP8 and L4 TP2/TP4 as
    candidates beside TP1 with nothing saying tiny's 1-GPU nodes hold none of them (the plan
    never uses them); with the catalog's node sizes every one is placeable."""
    tiny = scenarios_dir() / "tiny.yaml"
    lines = CliRunner().invoke(main, ["capacity", str(tiny)]).stdout.splitlines()
    shown = {line.split(" (", 1)[0].strip() for line in lines if "not placeable" in line}
    assert shown == {"not placeable: H100-SXM TP2, TP4, TP8", "not placeable: L4 TP2, TP4"}
    assert ("  not placeable: L4 TP2, TP4 (the zones sell L4 in 1-GPU nodes)") in lines
    wide = _without_node_sizes(tiny, tmp_path / "wide.yaml")
    assert "not placeable" not in CliRunner().invoke(main, ["capacity", str(wide)]).stdout


def test_an_slo_written_in_seconds_is_asked_about(tmp_path: Path) -> None:
    """`ttft_p95_ms: 1.5` (1.5 s meant) gave only "raise slo.ttft_p95_ms to at least 25.1 ms":
    an SLO under 100 ms that read as seconds would be met asks whether it was given in
    seconds, with the value in milliseconds; one seconds would not meet either does not."""
    data = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text())
    data["workloads"][0]["slo"] = {"ttft_p95_ms": 1.5, "tpot_p95_ms": 0.05}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    warnings = json.loads(CliRunner().invoke(main, ["validate", str(path), "--json"])
                          .stdout)["slo_warnings"]
    assert len(warnings) == 2
    assert warnings[0].endswith("; given in seconds? the field is in milliseconds: 0.05 s is "
                                "50 ms")
    assert warnings[1].endswith("; given in seconds? the field is in milliseconds: 1.5 s is "
                                "1500 ms")
    data["workloads"][0]["slo"]["tpot_p95_ms"] = 0.001  # 1 ms: no per-token step is that fast
    path.write_text(yaml.safe_dump(data))
    warnings = json.loads(CliRunner().invoke(main, ["validate", str(path), "--json"])
                          .stdout)["slo_warnings"]
    assert "seconds" not in warnings[0] and "seconds" in warnings[1]
