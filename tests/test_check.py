"""The survivability checker and degradation plans: hand-made fleets with known answers,
agreement with the program's own survivability rows, and the ``fleetplan check`` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from models.capacity import CapacityRow, CapacityTable
from models.common import Survivability
from models.loader import load_scenario
from models.plan import Plan
from models.scenario import Scenario
from models.workload import TokenPercentiles, Workload
from solver.cli import main
from solver.survivability.check import CheckReport, CheckRow, LatencyAtLoad, check_fleet
from solver.survivability.degrade import (
    DegradationPlan,
    DegradeAction,
    degradation_plans,
    output_cap_fraction,
)
from solver.survivability.fleet import fleet_from_plan, load_fleet
from tests import fleet_cases as fc

SCENARIOS = Path(__file__).resolve().parents[1] / "inputs" / "scenarios"


def _fake_predict(workload: Workload, row: CapacityRow, rate_rps: float) -> LatencyAtLoad:
    # TTFT 100 ms per rps of per-replica load, TPOT 10 ms per rps: easy to check by hand
    return LatencyAtLoad(
        ttft_p95_ms=100.0 * rate_rps, tpot_p95_ms=10.0 * rate_rps, holds=rate_rps <= row.slo_rps
    )


def _row(report: CheckReport, failure: str, workload: str, slice_name: str) -> CheckRow:
    return next(
        r
        for r in report.rows
        if (r.failure, r.workload, r.slice) == (failure, workload, slice_name)
    )


def _write(tmp_path: Path, doc: object) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def test_hand_made_plan_fleet_known_answers() -> None:
    sc = fc.scenario()
    report = check_fleet(fleet_from_plan(fc.plan(), sc), sc, fc.table(), _fake_predict)
    assert report.ok
    assert report.failures == fc.FAILURE_LABELS
    steady = _row(report, "none", "chat", "day")
    # 12 replicas × 2.0 × 0.7 = 16.8 rps for 12 demand: margin (16.8 − 12) / 12 = +40 %
    assert steady.capacity_rps == pytest.approx(16.8)
    assert steady.margin_pct == pytest.approx(40.0)
    # utilization 12 / (12 × 2.0) = 0.5 → per-replica load 1.0 rps → TTFT 100 ms, TPOT 10 ms
    assert steady.utilization == pytest.approx(0.5)
    assert steady.ttft_p95_ms == pytest.approx(100.0)
    assert steady.tpot_p95_ms == pytest.approx(10.0)
    zone = _row(report, "zone:z1", "chat", "day")
    # 6 surviving replicas × 2.0 × failure utilization 1.0 = 12 rps: holds with 0 % margin
    assert (zone.capacity_rps, zone.replicas, zone.holds, zone.required) == (
        pytest.approx(12.0),
        6,
        True,
        True,
    )
    assert zone.margin_pct == pytest.approx(0.0)
    node = _row(report, "node:z1/H100/reserved", "chat", "day")
    # the worst z1 node holds ⌊8/2⌋ = 4 replicas: (12 − 4) × 2.0 = 16 rps
    assert node.capacity_rps == pytest.approx(16.0)
    assert node.replicas == 8


def test_batch_window_row() -> None:
    sc = fc.scenario()
    report = check_fleet(fleet_from_plan(fc.plan(), sc), sc, fc.table())
    steady = _row(report, "none", "summarize", "window")
    # 3 spot replicas × 1.0 × 0.9 × (1 − 0.1) = 2.43 rps over the 6 window hours;
    # demand 36,000 / (6 × 3600) = 1.6667 rps → margin (2.43 / 1.6667 − 1) = +45.8 %
    assert steady.capacity_rps == pytest.approx(2.43)
    assert steady.demand_rps == pytest.approx(36000 / 21600)
    assert steady.margin_pct == pytest.approx((2.43 / (36000 / 21600) - 1) * 100)
    assert steady.required
    # summarize need not survive: losing z1 (its only zone) shows 0 capacity, not required
    lost = _row(report, "zone:z1", "summarize", "window")
    assert (lost.capacity_rps, lost.holds, lost.required) == (0.0, False, False)
    # a failure it need not survive still counts its surviving spot replicas:
    # losing a z2 node leaves them all, 3 × 1.0 × 0.9 (interruption) × 1.0 (failure util)
    other = _row(report, "node:z2/H100/reserved", "summarize", "window")
    assert other.capacity_rps == pytest.approx(2.7)
    assert report.ok


def test_spot_does_not_count_after_a_failure_a_workload_must_survive() -> None:
    # summarize now asks for N+1 but runs only on 3 spot replicas. After losing any node it must
    # survive, spot counts for nothing: 0 rps of 36,000 / 21,600 = 1.667 (−100 %), even for the
    # z2 node that holds none of it. Losing z2 is not required of N+1: its row keeps the spot
    # replicas (3 × 1.0 × 0.9 = 2.7 rps), as for a workload that need not survive.
    sc = fc.scenario()
    summarize = sc.workload("summarize").model_copy(
        update={"survivability": Survivability.n_plus_1})
    sc = sc.model_copy(update={"workloads": (sc.workloads[0], summarize)})
    report = check_fleet(fleet_from_plan(fc.plan(), sc), sc, fc.table())
    nodes = ("node:z1/H100/reserved", "node:z1/H100/spot", "node:z2/H100/reserved")
    for failure in nodes:
        row = _row(report, failure, "summarize", "window")
        assert (row.capacity_rps, row.required, row.holds) == (0.0, True, False), failure
        assert row.margin_pct == pytest.approx(-100.0)
    zone = _row(report, "zone:z2", "summarize", "window")
    assert (zone.capacity_rps, zone.required, zone.holds) == (pytest.approx(2.7), False, True)
    assert not report.ok
    assert sorted(r.failure for r in report.broken) == list(nodes)


def test_fleet_with_one_node_removed_fails(tmp_path: Path) -> None:
    # z1 keeps one node: 4 tp2 chat replicas. Losing z2 leaves 4 × 2.0 = 8 rps < 12.
    doc = {
        "nodes": [
            {"zone": "z1", "gpu": "H100", "nodes": 1},
            {"zone": "z2", "gpu": "H100", "nodes": 2},
        ],
        "layout": [
            {"workload": "chat", "zone": "z1", "gpu": "H100", "tp": 2, "replicas": 4},
            {"workload": "chat", "zone": "z2", "gpu": "H100", "tp": 2, "replicas": 6},
        ],
    }
    sc = fc.scenario()
    report = check_fleet(load_fleet(_write(tmp_path, doc), sc, fc.table()), sc, fc.table())
    assert not report.ok
    broken = {(r.failure, r.workload, r.slice) for r in report.broken}
    assert ("zone:z2", "chat", "day") in broken
    row = _row(report, "zone:z2", "chat", "day")
    assert row.capacity_rps == pytest.approx(8.0)
    assert row.margin_pct == pytest.approx(-100 / 3)  # (8 − 12) / 12


def test_plan_json_with_a_node_removed_by_hand(tmp_path: Path) -> None:
    plan = fc.plan()
    nodes = (plan.nodes[0].model_copy(update={"nodes": 1, "gpus": 8}), *plan.nodes[1:])
    path = tmp_path / "plan.json"
    path.write_text(plan.model_copy(update={"nodes": nodes}).model_dump_json(), "utf-8")
    sc = fc.scenario()
    fleet = load_fleet(path, sc, fc.table())
    # one 8-GPU node holds 4 of the 6 tp2 replicas
    assert fleet.notes == (
        "chat H100 tp2 reserved in z1: 2 of 6 replicas dropped, no node holds them",
    )
    report = check_fleet(fleet, sc, fc.table())
    assert not report.ok
    assert _row(report, "zone:z2", "chat", "day").capacity_rps == pytest.approx(8.0)


def test_regions_are_reported_not_required() -> None:
    sc = fc.scenario(regions=("r1", "r2"))
    report = check_fleet(fleet_from_plan(fc.plan(), sc), sc, fc.table())
    region = _row(report, "region:r1", "chat", "day")
    assert (region.required, region.holds) == (False, True)  # same as losing z1
    assert report.ok


def test_n_plus_1_does_not_require_zone_loss() -> None:
    sc = fc.scenario(survivability="n_plus_1")
    report = check_fleet(fleet_from_plan(fc.plan(), sc), sc, fc.table())
    assert not _row(report, "zone:z1", "chat", "day").required
    assert _row(report, "node:z1/H100/reserved", "chat", "day").required


def test_output_cap_fraction_hand_computed() -> None:
    # excess = 0.03125 × (1000 − 600) = 12.5 tokens on a mean of 200 → 0.0625;
    # decode share = 200 × 30 / (1000 + 200 × 30) = 6000 / 7000 → f = 0.0535714
    tokens = TokenPercentiles(p50=200, p95=600, p99=1000)
    row = fc.table().rows[0]
    assert output_cap_fraction(tokens, row) == pytest.approx(6000 / 7000 * 0.0625)


_DEGRADE_FLEET = {
    # z1: 1 node, 4 chat tp2. z2: 2 nodes, 4 chat tp2 + 8 summarize tp1 (reserved, laid out in
    # every slice; summarize's volume runs only in its window).
    "nodes": [
        {"zone": "z1", "gpu": "H100", "nodes": 1},
        {"zone": "z2", "gpu": "H100", "nodes": 2},
    ],
    "layout": [
        {"workload": "chat", "zone": "z1", "gpu": "H100", "tp": 2, "replicas": 4},
        {"workload": "chat", "zone": "z2", "gpu": "H100", "tp": 2, "replicas": 4},
        {"workload": "summarize", "zone": "z2", "gpu": "H100", "tp": 1, "replicas": 8},
    ],
}


def _summarize_window(sc: Scenario, hours: tuple[int, ...]) -> Scenario:
    """``sc`` with summarize's daily volume placed in ``hours`` instead of 0–5."""
    chat, summarize = sc.workloads
    assert summarize.batch is not None
    batch = summarize.batch.model_copy(update={"window_hours": hours})
    return sc.model_copy(
        update={"workloads": (chat, summarize.model_copy(update={"batch": batch}))}
    )


def _zone_z1_chat(
    tmp_path: Path, sc: Scenario, table: CapacityTable, doc: object = None
) -> DegradationPlan:
    fleet = load_fleet(_write(tmp_path, doc or _DEGRADE_FLEET), sc, table)
    report = check_fleet(fleet, sc, table)
    plans = {(p.failure, p.workload): p for p in degradation_plans(report, fleet, sc, table)}
    return plans[("zone:z1", "chat")]


def test_degradation_lines_of_a_large_fleet_read_as_numbers(tmp_path: Path) -> None:
    # a new user's ~1,000-GPU fleet: "short 4.56e+03 rps", "+4.55e+03 rps" in check's text
    from solver.cli.check import render_degradation

    sc, table = fc.scenario(), fc.table()
    fleet = load_fleet(_write(tmp_path, _DEGRADE_FLEET), sc, table)
    report = check_fleet(fleet, sc, table)
    plans = degradation_plans(report, fleet, sc, table)
    assert plans
    big = tuple(p.model_copy(update={"shortfall_rps": 4560.4, "steps": tuple(
        s.model_copy(update={"frees_rps": 4553.2}) for s in p.steps)}) for p in plans)
    lines = render_degradation(big, report)
    assert f"  {plans[0].failure} → {plans[0].workload}" in lines[1]
    assert lines[1].endswith(f": short 4,560 rps ({plans[0].slice})"), lines[1]
    assert lines[2].startswith("    1. ") and " +4,553 rps: " in lines[2], lines[2]
    assert not any("e+0" in line for line in lines), lines


def test_degradation_pauses_batch_first(tmp_path: Path) -> None:
    # summarize's window moved into the day: it runs when chat is short, so it is paused
    sc = _summarize_window(fc.scenario(), (8, 9, 10, 11, 12, 13))
    p = _zone_z1_chat(tmp_path, sc, fc.table())
    # after losing z1: 4 × 2.0 = 8 rps for 12 → short 4 rps by day
    assert (p.slice, p.shortfall_rps) == ("day", pytest.approx(4.0))
    assert [s.action for s in p.steps] == [
        DegradeAction.pause_batch,
        DegradeAction.cap_output,
        DegradeAction.shed_by_quota,
    ]
    # 1. summarize's 8 z2 GPUs: ⌈4 / 2.0⌉ = 2 chat tp2 replicas (4 GPUs) cover the 4 rps
    assert p.steps[0].frees_rps == pytest.approx(4.0)
    assert p.steps[0].frees_gpus == 4
    assert p.steps[0].detail == "pause summarize: 4 GPUs become chat replicas"
    # 2. (8 + 4) rps × f / (1 − f), f = 6/7 × 0.0625
    f = 6 / 7 * 0.0625
    assert p.steps[1].frees_rps == pytest.approx(12 * f / (1 - f))
    # 3. nothing left to shed
    assert p.steps[2].frees_rps == 0.0
    assert "never silently truncate context or swap models" in p.never


def test_degradation_outside_the_batch_window_uses_idle_gpus(tmp_path: Path) -> None:
    # summarize's window is 0–5 (night); chat is short by day, when summarize's GPUs are idle
    # anyway: they are taken as idle GPUs, not "paused" (a user read "pause nightly-summaries"
    # in an evening its 02–07 h window does not touch).
    p = _zone_z1_chat(tmp_path, fc.scenario(), fc.table())
    assert p.slice == "day"
    step = p.steps[0]
    assert step.action is DegradeAction.use_idle_batch_gpus
    assert (step.frees_rps, step.frees_gpus) == (pytest.approx(4.0), 4)
    assert step.detail == (
        "summarize (window hours 0–5) does not run in day: its GPUs are idle there; "
        "4 of them become chat replicas"
    )
    assert "pause" not in step.detail


def test_degradation_step_that_frees_nothing_says_why(tmp_path: Path) -> None:
    # chat runs only on L4 (z1); summarize's H100 GPUs in z2 carry no chat configuration, so
    # pausing it frees nothing for chat: said as "nothing to pause", not "0 GPUs become …"
    table = CapacityTable(
        rows=tuple(r for r in fc.table().rows if r.workload != "chat" or r.gpu == "L4")
    )
    doc = {
        "nodes": [
            {"zone": "z1", "gpu": "L4", "nodes": 1},
            {"zone": "z2", "gpu": "H100", "nodes": 2},
        ],
        "layout": [
            {"workload": "chat", "zone": "z1", "gpu": "L4", "tp": 1, "replicas": 4},
            {"workload": "summarize", "zone": "z2", "gpu": "H100", "tp": 1, "replicas": 8},
        ],
    }
    sc = _summarize_window(fc.scenario(), tuple(range(24)))
    chat, summarize = sc.workloads
    p = _zone_z1_chat(tmp_path, sc, table, doc)
    step = p.steps[0]
    assert step.action is DegradeAction.pause_batch
    assert (step.frees_rps, step.frees_gpus) == (0.0, 0)
    assert step.detail == (
        "nothing to pause for chat: chat has no configuration on H100 that fits and holds its SLO"
    )
    # a GPU type chat may not use is named as such
    only_l4 = chat.model_copy(update={"allowed_gpus": ("L4",)})
    sc = sc.model_copy(update={"workloads": (only_l4, summarize)})
    step = _zone_z1_chat(tmp_path, sc, table, doc).steps[0]
    assert step.detail == "nothing to pause for chat: chat may not run on H100"


def test_degradation_names_a_batch_workload_with_nothing_left_to_pause(tmp_path: Path) -> None:
    # fresh-s24 F8: a batch workload all of whose GPUs are in the lost zone (or that runs none
    # in the short slice) was reported as "no low-priority batch workload to pause", which a
    # planner with a nightly batch pool read as the scenario having none
    doc = {
        "nodes": [
            {"zone": "z1", "gpu": "H100", "nodes": 2},
            {"zone": "z2", "gpu": "H100", "nodes": 1},
        ],
        "layout": [
            {"workload": "chat", "zone": "z1", "gpu": "H100", "tp": 2, "replicas": 4},
            {"workload": "summarize", "zone": "z1", "gpu": "H100", "tp": 1, "replicas": 8},
            {"workload": "chat", "zone": "z2", "gpu": "H100", "tp": 2, "replicas": 4},
        ],
    }
    sc = _summarize_window(fc.scenario(), (8, 9, 10, 11, 12, 13))
    p = _zone_z1_chat(tmp_path, sc, fc.table(), doc)
    assert (p.slice, p.shortfall_rps) == ("day", pytest.approx(4.0))
    step = p.steps[0]
    assert step.action is DegradeAction.pause_batch
    assert (step.frees_rps, step.frees_gpus) == (0.0, 0)
    assert step.detail == (
        "nothing to pause: summarize (batch) has no GPUs left in day after this failure")


def test_degradation_sheds_what_is_left(tmp_path: Path) -> None:
    doc = {
        "nodes": [
            {"zone": "z1", "gpu": "H100", "nodes": 1},
            {"zone": "z2", "gpu": "H100", "nodes": 1},
        ],
        "layout": [
            {"workload": "chat", "zone": "z1", "gpu": "H100", "tp": 2, "replicas": 4},
            {"workload": "chat", "zone": "z2", "gpu": "H100", "tp": 2, "replicas": 4},
        ],
    }
    sc = fc.scenario()
    fleet = load_fleet(_write(tmp_path, doc), sc, fc.table())
    report = check_fleet(fleet, sc, fc.table())
    p = next(
        p
        for p in degradation_plans(report, fleet, sc, fc.table())
        if (p.failure, p.workload) == ("zone:z1", "chat")
    )
    f = 6 / 7 * 0.0625
    cap = 8 * f / (1 - f)
    assert p.steps[0].frees_rps == 0.0
    assert p.steps[2].frees_rps == pytest.approx(4.0 - cap)  # shed by quota of tenant support
    assert "tenant support" in p.steps[2].detail


def test_cli_check_exit_codes_and_json(tmp_path: Path) -> None:
    # tiny: chat 4 rps, H100-SXM tp1 holds ≈12.8 rps; needs no survival → exit 0.
    good = _write(tmp_path, {"nodes": [{"zone": "zone-a", "gpu": "H100-SXM", "nodes": 1}]})
    runner = CliRunner()
    res = runner.invoke(
        main, ["check", str(SCENARIOS / "tiny.yaml"), "--fleet", str(good), "--json"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["ok"] is True
    assert out["failures"] == ["none", "node:zone-a/H100-SXM/reserved", "zone:zone-a"]
    assert out["replicas"][0]["replicas"] == 1
    steady = next(r for r in out["rows"] if r["failure"] == "none")
    assert steady["ttft_p95_ms"] is not None and steady["latency_holds"] is True
    # no GPU chat can use (L4 needs tp2 on 1-GPU nodes): steady state fails → exit 1
    bad = _write(tmp_path, {"nodes": [{"zone": "zone-a", "gpu": "L4", "nodes": 2}]})
    res = runner.invoke(main, ["check", str(SCENARIOS / "tiny.yaml"), "--fleet", str(bad)])
    assert res.exit_code == 1
    assert "FAIL" in res.output and "never silently truncate context" in res.output


def test_period_options_on_a_fleet_without_periods_are_refused(tmp_path: Path) -> None:
    """--period and --demand-scenario pick a cell of a plan over periods; on an inventory they
    would have been ignored, the check seeming to answer the question asked."""
    fleet = _write(tmp_path, {"nodes": [{"zone": "zone-a", "gpu": "H100-SXM", "nodes": 1}]})
    res = CliRunner().invoke(main, ["check", str(SCENARIOS / "tiny.yaml"), "--fleet",
                                    str(fleet), "--period", "1"])
    assert res.exit_code == 2
    assert f"--period: {fleet} is an inventory, with no periods or demand scenarios" \
        in res.output


def test_an_inventory_line_without_purchase_is_warned_of_with_the_default_taken(
        tmp_path: Path) -> None:
    """fresh-s22 F7: a `check --fleet` line without `purchase` is reserved, the same line in a
    scenario's `inventory` owned; a line copied between them changed kind without a word. The
    default stays (fleets written for check read as they were); check warns, naming the file,
    each line and the field, the default taken and the other file's."""
    fleet = _write(tmp_path, {"nodes": [
        {"zone": "zone-a", "gpu": "H100-SXM", "nodes": 1},
        {"zone": "zone-a", "gpu": "L4", "nodes": 1, "purchase": "owned"},
        {"zone": "zone-a", "gpu": "L4", "nodes": 1}]})
    res = CliRunner().invoke(main, ["check", str(SCENARIOS / "tiny.yaml"), "--fleet", str(fleet)])
    warning = (f"warning: {fleet} nodes[0], nodes[2]: no `purchase`, so read as `purchase: "
               "reserved` (the default of a check or simulate inventory; a scenario's "
               "`inventory` reads the same line as `owned`) — write `purchase: owned` or "
               "`purchase: reserved` on each")
    assert warning in res.stderr.splitlines(), res.output
    assert warning not in res.stdout
    out = json.loads(CliRunner().invoke(main, ["check", str(SCENARIOS / "tiny.yaml"), "--fleet",
                                               str(fleet), "--json"]).stdout)
    assert warning in out["notes"]
    # every line stating its kind (`kind:` too, a scenario inventory's first name for it): none
    fleet = _write(tmp_path, {"nodes": [
        {"zone": "zone-a", "gpu": "H100-SXM", "nodes": 1, "kind": "reserved"},
        {"zone": "zone-a", "gpu": "L4", "nodes": 1, "purchase": "owned"}]})
    res = CliRunner().invoke(main, ["check", str(SCENARIOS / "tiny.yaml"), "--fleet", str(fleet)])
    assert "no `purchase`" not in res.output


def test_the_verdict_names_the_failing_cells_not_a_count_of_slice_rows(tmp_path: Path) -> None:
    """Was "FAIL: 48 required rows fail" under a table showing two FAILS cells (a flat day's
    24 hourly slices each): the verdict names the cells as the table's rows and says in how
    many slices each fails."""
    doc = yaml.safe_load((SCENARIOS / "tiny.yaml").read_text(encoding="utf-8"))
    chat = doc["workloads"][0]
    chat["survivability"] = "n_plus_1"
    chat["arrival"]["hourly_shape"] = [0.25] * 12 + [1.0] * 12  # peak over the afternoon
    doc["policy"]["time_blocks"] = [{"name": "am", "hours": list(range(12))},
                                    {"name": "pm", "hours": list(range(12, 24))}]
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(doc), encoding="utf-8")
    fleet = _write(tmp_path, {"nodes": [{"zone": "zone-a", "gpu": "H100-SXM", "nodes": 1}]})
    res = CliRunner().invoke(main, ["check", str(scenario), "--fleet", str(fleet)])
    assert res.exit_code == 1, res.output
    verdict = res.output.strip().splitlines()[-1]
    slices = json.loads(CliRunner().invoke(
        main, ["check", str(scenario), "--fleet", str(fleet), "--json"]).output)["rows"]
    n = len({r["slice"] for r in slices})
    assert n > 1
    assert verdict == (f"FAIL: 1 required cell of the table fails: chat under one H100-SXM "
                       f"reserved node in zone-a lost ({n} slices of {n})"), verdict
    assert "One H100-SXM reserved node in zone-a lost" in res.output  # the row it names


def test_cli_check_says_what_none_and_failure_rows_count(tmp_path: Path) -> None:
    """`none` counts at the target utilization, failure rows at the failure utilization: the
    demo showed chat `none holds +10%` and `zone:usw2-az1 holds +57%`, unexplained."""
    fleet = _write(tmp_path, {"nodes": [{"zone": "zone-a", "gpu": "H100-SXM", "nodes": 1}]})
    scenario = yaml.safe_load((SCENARIOS / "tiny.yaml").read_text(encoding="utf-8"))
    scenario.setdefault("policy", {})["failure_utilization"] = 0.9
    path = tmp_path / "tiny-90.yaml"
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    res = CliRunner().invoke(main, ["check", str(path), "--fleet", str(fleet)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("margin = "))
    assert lines[at - 1].startswith("Zone zone-a lost")  # right under the matrix
    assert "target utilization with no failure" in lines[at]
    assert "at the failure utilization (90% of the SLO-holding rate) in failure rows" in lines[
        at + 1]


def test_check_builds_rows_for_the_gpus_sold_and_the_fleet_s_own(tmp_path: Path) -> None:
    """Was: rows for every GPU of the catalog (the README walk-through's `check chat.yaml`
    built 34 rows in 45 s for a fleet of L40S, on the 2 GPUs it sells). tiny without
    `allowed_gpus`, its zone selling L4 only: an inventory of H100-SXM nodes, which no zone
    sells, is checked on their rows all the same."""
    from solver.cli.check import run_check

    scenario = yaml.safe_load((SCENARIOS / "tiny.yaml").read_text(encoding="utf-8"))
    del scenario["workloads"][0]["allowed_gpus"]
    offers = scenario["zones"][0]["offers"]
    scenario["zones"][0]["offers"] = [o for o in offers if o["gpu"] == "L4"]
    path = tmp_path / "tiny-l4.yaml"
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    fleet = _write(tmp_path, {"nodes": [{"zone": "zone-a", "gpu": "H100-SXM", "nodes": 1}]})
    result = run_check(path, fleet)
    assert len(result.scenario.gpus) > 2  # the catalog's
    assert {r.gpu for r in result.table.rows} == {"H100-SXM", "L4"}
    # one node of the catalog's 8 GPUs, a TP1 replica on each
    assert [(g.gpu, g.tp, g.replicas) for g in result.fleet.replicas] == [("H100-SXM", 1, 8)]
    assert result.report.ok and result.exit_code == 0


def test_cli_check_bad_fleet_is_a_clean_error(tmp_path: Path) -> None:
    bad = _write(tmp_path, {"nodes": [{"zone": "zone-b", "gpu": "H100-SXM", "nodes": 1}]})
    res = CliRunner().invoke(main, ["check", str(SCENARIOS / "tiny.yaml"), "--fleet", str(bad)])
    assert res.exit_code == 2
    assert "nodes[0].zone: unknown zone `zone-b`" in res.output
    assert "Traceback" not in res.output


def test_a_failure_not_required_is_marked_so_and_json_says_who_laid_out_the_replicas(
        tmp_path: Path) -> None:
    """Was: the matrix showed `fails` beside a failure the workload need not survive with no
    word that it is not required, and `--json` said `laid_out_by_fleetplan: false` of a plan
    fleetplan made (it means: check did not lay the replicas out itself). A new user's findings."""
    tiny = str(SCENARIOS / "tiny.yaml")  # chat asks to survive nothing
    one_node = {"nodes": [{"zone": "zone-a", "gpu": "H100-SXM", "nodes": 1}]}
    runner = CliRunner()
    res = runner.invoke(main, ["check", tiny, "--fleet", str(_write(tmp_path, one_node))])
    assert res.exit_code == 0, res.output
    lost = next(x for x in res.output.splitlines() if x.startswith("Zone zone-a lost"))
    assert lost.endswith("fails -100% (not required)"), lost
    assert "FAILS" not in lost
    assert any(x.startswith("FAILS: a failure the workload must survive") and
               "fails (not required): beyond what its survivability asks" in x
               for x in res.output.splitlines())
    assert "(replicas laid out by check: the inventory gives no layout)" in res.output

    def who(fleet: Path) -> tuple[bool, str]:
        out = runner.invoke(main, ["check", tiny, "--fleet", str(fleet), "--json"])
        data = json.loads(out.output)
        return data["laid_out_by_fleetplan"], data["replicas_laid_out_by"]

    assert who(_write(tmp_path, one_node)) == (True, "check")
    laid = one_node | {"layout": [{"workload": "chat", "zone": "zone-a", "gpu": "H100-SXM",
                                   "tp": 1, "replicas": 1}]}
    assert who(_write(tmp_path, laid)) == (False, "inventory")
    planned = tmp_path / "out"
    assert runner.invoke(main, ["plan", tiny, "--out", str(planned), "--quiet"]).exit_code == 0
    assert who(planned / "plan.json") == (False, "plan")  # kept as it was; the new key says it


def test_a_scenario_or_contract_given_as_the_fleet_is_named_with_where_it_goes(
        tmp_path: Path) -> None:
    """Was: `check --fleet scenario.yaml` gave one unknown-key error per scenario section
    (zones, workloads, policy: "did you mean `nodes`?") and never said the file is a scenario
    (a new user's finding). Now one problem: the file, what it is, and where it goes."""
    tiny = str(SCENARIOS / "tiny.yaml")
    runner = CliRunner()
    for args in (["check", "--fleet", tiny], ["check", tiny, "--fleet", tiny]):
        res = runner.invoke(main, args)
        assert res.exit_code == 2, res.output
        assert "1 problem in the input" in res.output
        assert f"{tiny}: this is a scenario" in res.output
        assert f"pass it as SCENARIO, the first argument (`fleetplan check {tiny} --fleet" in (
            res.output)
        assert "unknown key" not in res.output and "Traceback" not in res.output
    contract = _write(tmp_path, {"version": 1, "scenario": "tiny", "plan_fingerprint": "x",
                                 "rows": []})
    res = runner.invoke(main, ["check", tiny, "--fleet", str(contract)])
    assert res.exit_code == 2, res.output
    assert "this is a capacity contract" in res.output and "--contract" in res.output
    # a fleet with a key a scenario also has is still read as a fleet
    with_policy = _write(tmp_path, {"nodes": [{"zone": "zone-b", "gpu": "H100-SXM",
                                               "nodes": 1}], "policy": {}})
    res = runner.invoke(main, ["check", tiny, "--fleet", str(with_policy)])
    assert res.exit_code == 2 and "this is a scenario" not in res.output


# --- plans the program produces ----------------------------------------------------------------

REAL = ("tiny", "twenty_rps", "doc_qa", "demo")


@pytest.fixture(scope="module")
def real_plans() -> dict[str, tuple[Scenario, CapacityTable, Plan]]:
    """Each example scenario planned once (the demo with a short time limit: any plan the
    program returns must be checkable, proven optimal or not)."""
    from solver.capacity.table import build_capacity_table
    from solver.solve.strategy import plan_scenario

    out = {}
    for name in REAL:
        sc = load_scenario(SCENARIOS / f"{name}.yaml")
        table = build_capacity_table(sc)
        out[name] = (sc, table, plan_scenario(sc, table, time_limit_s=10.0, gap=0.05))
    return out


@pytest.mark.parametrize("name", REAL)
def test_checker_agrees_with_plan_survivability(
    name: str, real_plans: dict[str, tuple[Scenario, CapacityTable, Plan]]
) -> None:
    sc, table, plan = real_plans[name]
    assert plan.allocations, f"{name}: the program returned no fleet ({plan.status})"
    report = check_fleet(fleet_from_plan(plan, sc), sc, table)
    volume = {w.name for w in sc.workloads if w.batch is not None}
    compared = 0
    for prow in plan.survivability:
        if prow.workload in volume:
            continue  # the checker rates a volume over its whole window (verify_plan re-checks)
        if prow.failure.startswith("node:"):
            mine = [
                r
                for r in report.rows
                if r.failure.startswith(prow.failure + "/")
                and r.workload == prow.workload
                and r.slice == prow.slice
                and not r.failure.endswith("/spot")
            ]
        else:
            mine = [
                r
                for r in report.rows
                if (r.failure, r.workload, r.slice) == (prow.failure, prow.workload, prow.slice)
            ]
        assert mine, f"{name}: no checker row for {prow}"
        worst = min(mine, key=lambda r: r.capacity_rps)
        assert worst.capacity_rps == pytest.approx(prow.capacity_rps, rel=1e-6, abs=1e-9)
        assert worst.demand_rps == pytest.approx(prow.demand_rps, rel=1e-6, abs=1e-9)
        assert worst.holds == prow.holds
        compared += 1
    assert compared > 0
    # a plan the program calls feasible survives everything it was planned to survive
    assert report.ok == all(r.holds for r in plan.survivability)
    assert report.ok, [(r.failure, r.workload, r.slice) for r in report.broken]


@pytest.mark.parametrize("name", ["twenty_rps", "doc_qa"])
def test_cli_catches_a_real_plan_with_a_node_removed(
    name: str, real_plans: dict[str, tuple[Scenario, CapacityTable, Plan]], tmp_path: Path
) -> None:
    sc, _, plan = real_plans[name]
    path = tmp_path / "plan.json"
    path.write_text(plan.model_dump_json(), encoding="utf-8")
    runner = CliRunner()
    res = runner.invoke(
        main, ["check", str(SCENARIOS / f"{name}.yaml"), "--fleet", str(path), "--json"]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["verification"] == []
    # remove one node, by hand, from the pool with the most nodes
    i = max(range(len(plan.nodes)), key=lambda k: (plan.nodes[k].nodes, -k))
    n = plan.nodes[i]
    per_node = n.gpus // n.nodes
    nodes = list(plan.nodes)
    nodes[i] = n.model_copy(update={"nodes": n.nodes - 1, "gpus": n.gpus - per_node})
    path.write_text(plan.model_copy(update={"nodes": tuple(nodes)}).model_dump_json(), "utf-8")
    res = runner.invoke(
        main, ["check", str(SCENARIOS / f"{name}.yaml"), "--fleet", str(path), "--json"]
    )
    assert res.exit_code == 1, res.output
    out = json.loads(res.output)
    assert out["ok"] is False and out["broken"]
    assert any("dropped, no node holds them" in note for note in out["notes"])
    assert any(v.startswith("nodes: ") and "do not fit" in v for v in out["verification"])
    assert sc.name == out["scenario"]


def test_cli_check_shows_the_intact_fleet_on_the_failure_rows_basis(tmp_path: Path) -> None:
    """qa4 11: chat showed +7 % with no failure and +49 % after losing a node it does not use,
    read as an error. The margins are right for their verdicts (target utilization intact,
    failure utilization after a failure); the row under *No failure* puts the intact fleet at
    the failure utilization, which no failure row of an interactive workload exceeds."""
    from inputs import demo_scenario
    from models.loader import load_scenario

    fleet = _write(tmp_path, {"nodes": [{"zone": "use1-az1", "gpu": "H100-SXM", "nodes": 2},
                                        {"zone": "use1-az6", "gpu": "H100-SXM", "nodes": 2},
                                        {"zone": "use1-az2", "gpu": "L40S", "nodes": 2}]})
    demo = load_scenario(demo_scenario())
    res = CliRunner().invoke(main, ["check", "--fleet", str(fleet), "--json"])
    report = json.loads(res.stdout)
    lines = CliRunner().invoke(main, ["check", "--fleet", str(fleet)]).output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("No failure "))
    shown = lines[at + 1].split()
    assert shown[:4] == ["No", "failure,", "at", "100%"]
    for k, name in enumerate(report["workloads"]):
        wl = demo.workload(name)
        rows = [r for r in report["rows"] if r["workload"] == name]
        worst = min((r for r in rows if r["failure"] == "none"), key=lambda r: r["margin_pct"])
        intact = worst["capacity_rps"] / wl.utilization * demo.policy.failure_utilization
        expected = (intact - worst["demand_rps"]) / worst["demand_rps"]
        assert shown[4 + k] == f"{expected:+.0%}", name
        if wl.batch is None:  # each failure's worst slice: never above the intact fleet's
            for failure in {r["failure"] for r in rows} - {"none"}:
                least = min(r["margin_pct"] for r in rows if r["failure"] == failure)
                assert least <= expected * 100 + 1e-6, (name, failure)
    assert any(line.startswith("One L40S") for line in lines)  # a failure sparing chat's H100s
    assert 'compare them with "No failure, at 100%"' in "\n".join(lines)


def test_a_plan_workbook_given_as_the_fleet_says_to_give_the_plan_json(tmp_path: Path) -> None:
    """Was 14 problems "sheet `Summary`: unknown sheet" (read as a scenario workbook) for the
    plan.xlsx a new user passed to --fleet: one problem names the plan.json beside it."""
    runner = CliRunner()
    out = tmp_path / "out"
    planned = runner.invoke(main, ["plan", str(SCENARIOS / "tiny.yaml"), "--out", str(out)])
    assert planned.exit_code == 0, planned.output
    res = runner.invoke(main, ["check", str(SCENARIOS / "tiny.yaml"),
                               "--fleet", str(out / "plan.xlsx")])
    assert res.exit_code == 2, res.output
    assert "unknown sheet" not in res.output
    assert "a plan's workbook (plan.xlsx, written by `fleetplan plan`)" in res.output
    assert "give the plan.json written beside it" in res.output
    # the plan.json it names is the fleet check reads
    assert runner.invoke(main, ["check", str(SCENARIOS / "tiny.yaml"),
                                "--fleet", str(out / "plan.json")]).exit_code == 0


def test_an_inventory_against_a_scenario_over_periods_is_checked_at_a_periods_demand(
        tmp_path: Path) -> None:
    """A new user checked the nodes they hold against their quarterly scenario (chat growing
    ×2 by its first quarter): check used chat's `peak_rps` as written (12 req/s), its growth
    and events ignored, said "OK" and named no demand; --period and --demand-scenario were
    refused for an inventory. The inventory is now checked against the first period's demand
    (`base`), or the period and demand scenario named, and says which."""
    from inputs import scenarios_dir

    doc = yaml.safe_load((scenarios_dir() / "quarterly.yaml").read_text(encoding="utf-8"))
    chat = next(w for w in doc["workloads"] if w["name"] == "chat")
    chat["growth"] = [2.0, 2.3, 2.6, 3.0]
    sc = tmp_path / "q.yaml"
    sc.write_text(yaml.safe_dump(doc), encoding="utf-8")
    inv = tmp_path / "inv.yaml"
    inv.write_text("nodes:\n"
                   "  - {zone: use1-az1, instance_type: p5.48xlarge, nodes: 2}\n"
                   "  - {zone: use1-az2, gpu: H100, nodes: 2}\n", encoding="utf-8")

    def chat_demand(*options: str) -> tuple[float, dict[str, object], str]:
        result = CliRunner().invoke(main, ["check", str(sc), "--fleet", str(inv), "--json",
                                           *options])
        assert result.exit_code in (0, 1), result.output
        data = json.loads(result.stdout)
        (demand,) = {r["demand_rps"] for r in data["rows"]
                     if r["workload"] == "chat" and r["failure"] == "none"
                     and r["slice"] == "evening"}
        return demand, data["demand_of"], result.stdout

    demand, of, _ = chat_demand()
    assert demand == pytest.approx(12 * 2.0)
    assert of == {"period": 0, "start": "2027-01-01", "demand_scenario": "base"}
    demand, of, _ = chat_demand("--period", "2027-10-01", "--demand-scenario", "high")
    assert demand == pytest.approx(12 * 3.0 * 2.0)  # its growth × high's ×2 in period 3
    assert of == {"period": 3, "start": "2027-10-01", "demand_scenario": "high"}
    shown = CliRunner().invoke(main, ["check", str(sc), "--fleet", str(inv), "--period", "1"])
    assert ("an inventory against a scenario over periods: checked against the demand of "
            "period 1 (from 2027-04-01) if demand follows `base`") in shown.output
    wrong = CliRunner().invoke(main, ["check", str(sc), "--fleet", str(inv), "--period", "7"])
    assert wrong.exit_code == 2 and "the scenario's horizon has no period `7`" in wrong.output
    # simulate reads the inventory at the same period's workloads and demand
    trace = tmp_path / "trace.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
        f"2023-11-16 18:15:{i // 4:02d}.{(i % 4) * 25:02d}0000,1000,100\n" for i in range(200)),
        encoding="utf-8")
    replay = CliRunner().invoke(main, ["simulate", str(sc), "--fleet", str(inv), "--trace",
                                       str(trace), "--workload", "chat", "--period", "3",
                                       "--demand-scenario", "high", "--json"])
    assert replay.exit_code in (0, 1), replay.output
    assert json.loads(replay.stdout)["demand_of"] == {"period": 3, "start": "2027-10-01",
                                                      "demand_scenario": "high"}


def test_a_margin_under_one_percent_shows_its_decimal_and_sign() -> None:
    """A new user's quarterly check: a zone loss left code-completion 0.134 of 27.46 req/s
    short, and the matrix read "fails -0% (not required)" beside another cell's "holds +0%",
    as if a margin of 0 both held and failed. Under 1 % the margin has one decimal."""
    from solver.cli.check import render_matrix

    def row(failure: str, capacity: float, demand: float, holds: bool) -> CheckRow:
        return CheckRow(failure=failure, failure_kind="zone", workload="w", slice="day",
                        required=False, capacity_rps=capacity, demand_rps=demand, replicas=1,
                        utilization=None, ttft_p95_ms=None, tpot_p95_ms=None,
                        latency_holds=None, holds=holds,
                        margin_pct=(capacity - demand) / demand * 100)

    report = CheckReport(scenario="s", fleet="f", failures=("zone:a", "zone:b", "zone:c"),
                         workloads=("w",),
                         rows=(row("zone:a", 27.326, 27.46, False),  # −0.49 %
                               row("zone:b", 27.58, 27.46, True),  # +0.44 %
                               row("zone:c", 30.0, 27.46, True)))  # +9.25 %
    text = "\n".join(render_matrix(report))
    assert "fails -0.5% (not required)" in text
    assert "holds +0.4%" in text
    assert "holds +9%" in text
    assert "-0%" not in text and "+0%" not in text


def test_a_failing_layout_check_made_itself_says_another_may_hold(tmp_path: Path) -> None:
    """A new user's inventory of 40 H100 nodes in two zones (no `layout:`) FAILED zone loss
    for chat under check's greedy layout (replicas spread in proportion to each zone's GPUs),
    while `plan` with the same nodes as the scenario's inventory held every required failure
    with 8 of them idle: the verdict read as "these nodes cannot survive". Said, where check
    laid the replicas out; not where the inventory gives its own layout."""
    bad = {"nodes": [{"zone": "zone-a", "gpu": "L4", "nodes": 2}]}  # steady state fails
    runner = CliRunner()
    tiny = str(SCENARIOS / "tiny.yaml")
    res = runner.invoke(main, ["check", tiny, "--fleet", str(_write(tmp_path, bad))])
    assert res.exit_code == 1
    hint, verdict = res.output.rstrip().splitlines()[-2:]  # the verdict stays the last line
    assert verdict.startswith("FAIL: ")
    assert hint.startswith("check laid these replicas out itself") and "layout:" in hint
    assert "fleetplan plan" in hint
    laid = {"nodes": [{"zone": "zone-a", "gpu": "H100-SXM", "nodes": 1}],
            "layout": [{"workload": "chat", "zone": "zone-a", "gpu": "H100-SXM", "tp": 1,
                        "replicas": 1}]}
    res = runner.invoke(main, ["check", tiny, "--fleet", str(_write(tmp_path, laid))])
    assert "check laid these replicas out itself" not in res.output
