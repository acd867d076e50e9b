"""The demo and the two worked examples with their workloads linked to the shared traces hold
every SLO in trace replay at the planned peak, intact and after every failure they must survive.

Links (docs/replay.md, "The examples against the shared traces"): ``doc_qa`` → the Azure code
trace (prompts of 2,048 tokens on average, as the example's documents), ``twenty_rps`` → the
Azure conversation trace, the demo's ``chat`` / ``code-completion`` / ``agent`` → the traces
their lengths were profiled from. Each is planned by ``fleetplan plan`` with the replay loop on;
skipped when ../shared/data is absent; the demo (a minute of solving) only with FLEETPLAN_SLOW=1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from inputs import demo_scenario
from solver.cli import main

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "data" / "traces"
SCENARIOS = ROOT / "inputs" / "scenarios"
CONV, CODE = "AzureLLMInferenceTrace_conv.csv", "AzureLLMInferenceTrace_code.csv"
MOONCAKE = "mooncake_conversation_trace.jsonl"
LINKS = {
    "doc_qa": {"doc-qa": CODE},
    "twenty_rps": {"twenty-rps": CONV},
    "demo": {"chat": CONV, "code-completion": CODE, "agent": MOONCAKE},
}


def _linked(name: str, tmp_path: Path) -> Path:
    """The scenario with its workloads naming the shared traces, written to ``tmp_path``."""
    for trace in LINKS[name].values():
        if not (TRACES / trace).is_file():
            pytest.skip(f"shared trace {trace} not present")
    source = demo_scenario() if name == "demo" else SCENARIOS / f"{name}.yaml"
    doc: dict[str, Any] = yaml.safe_load(Path(source).read_text())
    for wl in doc["workloads"]:
        if wl["name"] in LINKS[name]:
            wl["arrival"]["trace"] = {"path": str(TRACES / LINKS[name][wl["name"]])}
    for key in ("measured_csv",):  # paths relative to the scenario: made absolute
        if key in doc:
            doc[key] = str(Path(source).parent / doc[key])
    for table in doc.get("price_tables", []):
        if not str(table["path"]).startswith("builtin:"):
            table["path"] = str(Path(source).parent / table["path"])
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _holds_everywhere(name: str, tmp_path: Path, *extra: str) -> dict[str, Any]:
    """The linked scenario's plan.json, after checking that it holds everywhere."""
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["plan", str(_linked(name, tmp_path)), "--out", str(out),
                                    *extra])
    assert res.exit_code == 0, res.output
    assert "trace replay holds every SLO" in res.output
    plan: dict[str, Any] = json.loads((out / "plan.json").read_text())
    assert plan["verified"] is True
    last = max(c["round"] for c in plan["replay"])
    checks = [c for c in plan["replay"] if c["round"] == last]
    assert all(c["holds"] for c in checks)
    # a round that missed by an order of magnitude is called out, in the terminal and report
    gross = {(c["round"], c["workload"]) for c in plan["replay"]
             if max((c[k] or 0) / c[s] for k, s in (("ttft_p95_ms", "ttft_slo_ms"),
                                                     ("tpot_p95_ms", "tpot_slo_ms"))) >= 10}
    report = (out / "report.md").read_text()
    for round_, workload in gross:
        assert f"warning: round {round_}: {workload} missed by " in res.output
        assert f"**Warning:** round {round_}: {workload} missed by " in report
    assert {c["workload"] for c in checks} == set(LINKS[name])
    # every required failure was replayed: each pool serving a workload that asks for N+1
    # lost its fullest node, each zone it runs in for zone loss
    scenario = yaml.safe_load(_linked(name, tmp_path).read_text())
    for wl in scenario["workloads"]:
        if wl["name"] not in LINKS[name]:
            continue
        failures = {c["failure"] for c in checks if c["workload"] == wl["name"]}
        assert "none" in failures
        peak = {c["slice"] for c in checks if c["workload"] == wl["name"]}
        pools = {(a["zone"], a["gpu"]) for a in plan["allocations"]
                 if a["workload"] == wl["name"] and a["replicas"] > 0
                 and a["purchase"] != "spot" and a["slice"] in (None, *peak)}
        asks = wl.get("survivability", "none")
        if asks in ("n_plus_1", "zone_loss"):
            nodes = {tuple(f.split(":", 1)[1].split("/")[:2]) for f in failures
                     if f.startswith("node:")}
            assert nodes == pools
        if asks == "zone_loss":
            zones = {f.split(":", 1)[1] for f in failures if f.startswith("zone:")}
            assert zones == {z for z, _ in pools}
    return plan


@pytest.mark.parametrize("name", ["doc_qa", "twenty_rps"])
def test_worked_example_holds_in_replay(name: str, tmp_path: Path) -> None:
    _holds_everywhere(name, tmp_path)


@pytest.mark.skipif(os.environ.get("FLEETPLAN_SLOW") != "1",
                    reason="plans the demo with the replay loop (about a minute); "
                           "set FLEETPLAN_SLOW=1")
def test_demo_holds_in_replay_and_is_the_same_plan_twice(tmp_path: Path) -> None:
    """qa3 F7: two runs of the linked demo gave 206,112 and 219,428 USD/month. Every round
    proven within a time limit it does not reach (the first solve takes 20-35 s, each re-plan a
    few), the loop's plan is the same from run to run: same fleet, cost, status and checks."""
    runs = []
    for k in range(2):
        (tmp_path / str(k)).mkdir()
        runs.append(_holds_everywhere("demo", tmp_path / str(k), "--time-limit", "180"))
    for plan in runs:
        assert plan["status"] != "time_limit"

    def timeless(plan: dict[str, Any]) -> dict[str, Any]:
        solver = {k: v for k, v in plan["solver"].items() if k not in ("seconds", "stages")}
        return {**{k: v for k, v in plan.items() if k != "solver"}, "solver": solver}

    assert timeless(runs[0]) == timeless(runs[1])
