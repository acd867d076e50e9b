"""No plan over periods leaves unverified: ``fleetplan plan`` checks every period's fleet of
every demand scenario with the independent verifier, which reads the inventory held then."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from inputs import scenarios_dir
from models.common import PurchaseKind
from models.loader import load_scenario
from models.plan import Plan
from models.scenario import Scenario
from solver.cli import main
from solver.cli import plan as plan_command
from solver.cli.signoff import period_checks
from solver.solve.horizon import plan_horizon
from solver.survivability.verify import verify_plan

QUARTERLY = scenarios_dir() / "quarterly.yaml"


@pytest.fixture(scope="module")
def quarterly() -> tuple[Scenario, Plan]:
    """The quarterly example planned briefly: owned and reserved inventory, orders, three
    demand scenarios; the fleet need not be optimal to be checked."""
    sc = load_scenario(QUARTERLY)
    return sc, plan_horizon(sc, time_limit_s=5)


def _planned(monkeypatch: pytest.MonkeyPatch, plan: Plan) -> None:
    def fake(*_: Any, **__: Any) -> Plan:
        return plan
    monkeypatch.setattr(plan_command, "plan_horizon", fake)


def test_the_quarterly_plan_is_verified(
    quarterly: tuple[Scenario, Plan], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every period of every demand scenario holds, the owned and reserved inventory read as
    pools held (the verifier once said "onprem-dc1 does not sell H100-SXM as owned")."""
    sc, plan = quarterly
    assert len(plan.periods) == 12
    assert any(a.purchase is PurchaseKind.owned for p in plan.periods for a in p.allocations)
    checks = list(period_checks(plan, sc))
    assert len(checks) == 12
    assert all(verify_plan(f, s, t, over_periods=True) == [] for _, f, s, t in checks)
    _planned(monkeypatch, plan)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["plan", str(QUARTERLY), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "plan.json").read_text())["verified"] is True


def _break(plan: Plan, scenario: str, period: int, workload: str) -> Plan:
    """``plan`` with one workload's replicas dropped from one period's fleet."""
    periods = tuple(
        p.model_copy(update={"allocations": tuple(a for a in p.allocations
                                                  if a.workload != workload)})
        if (p.scenario, p.period) == (scenario, period) else p
        for p in plan.periods)
    return plan.model_copy(update={"periods": periods})


def test_a_broken_period_exits_3_and_writes_nothing(
    quarterly: tuple[Scenario, Plan], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A later period of a scenario other than the one shown loses the agent's replicas: the
    plan command names the period and the row, exits 3 and writes no plan."""
    _, plan = quarterly
    _planned(monkeypatch, _break(plan, "high", 2, "agent"))
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["plan", str(QUARTERLY), "--out", str(out)])
    assert result.exit_code == 3, result.output
    assert "high period 2 (2027-07-01): demand: agent" in result.stderr
    assert "no plan was written" in result.stderr
    assert not (out / "plan.json").exists()


def test_the_inventory_is_read_as_pools_held(quarterly: tuple[Scenario, Plan]) -> None:
    """Owned nodes held where no owned hardware is for sale are a pool of the zone all the same
    (references), within its stock (the nodes held); dropping one from the first quarter's
    fleet is an early release the verifier names."""
    sc, plan = quarterly
    _, fleet, one, table = next(iter(period_checks(plan, sc)))  # 2027-01-01: nothing ordered
    zones = tuple(z.model_copy(update={"offers": tuple(o.model_copy(update={"owned": None})
                                                       for o in z.offers)})
                  for z in one.zones)
    held_only = one.model_copy(update={"zones": zones})
    assert verify_plan(fleet, held_only, table, over_periods=True) == []
    unknown = verify_plan(fleet, held_only.model_copy(update={"inventory": ()}), table,
                          over_periods=True)
    assert any("zone onprem-dc1 does not sell H100-SXM as owned" in row for row in unknown)
    owned = next(n for n in fleet.nodes if n.purchase is PurchaseKind.owned)
    fewer = owned.model_copy(update={"nodes": owned.nodes - 1, "gpus": owned.gpus - 8,
                                     "cost_per_month": owned.cost_per_month / 2})
    short = fleet.model_copy(update={"nodes": tuple(fewer if n is owned else n
                                                    for n in fleet.nodes)})
    rows = verify_plan(short, one, table, over_periods=True)
    assert any(row.startswith("inventory: 16 owned H100-SXM GPUs held in onprem-dc1, the plan "
                              "keeps 8") for row in rows), rows


def test_check_verifies_a_plan_over_periods_period_by_period(
    quarterly: tuple[Scenario, Plan], tmp_path: Path
) -> None:
    """``fleetplan check`` on the quarterly plan.json verifies each period as ``plan`` signs it
    off (it once compared the first period's fleet with the whole scenario: every inventory
    line, committed prices against the offer), and names the period of a broken row."""
    from solver.outputs.plan_dir import plan_json

    _, plan = quarterly
    for name, fleet in (("ok", plan), ("broken", _break(plan, "high", 2, "agent"))):
        path = tmp_path / f"{name}.json"
        path.write_text(plan_json(fleet))
        result = CliRunner().invoke(main, ["check", str(QUARTERLY), "--fleet", str(path),
                                           "--json"])
        assert result.exit_code in (0, 1), result.output
        findings = json.loads(result.stdout)["verification"]
        if name == "ok":
            assert findings == []
        else:
            assert findings and all(f.startswith("high period 2 (2027-07-01): ")
                                    for f in findings)
            assert any("demand: agent" in f for f in findings)


def test_check_says_which_periods_fleet_its_matrix_is(
    quarterly: tuple[Scenario, Plan], tmp_path: Path
) -> None:
    """qa4 F8: on a plan over periods the failure matrix is the first period's fleet of the
    demand scenario shown; the screen said nothing, so a planner could read it as every
    period's. It says so now (every cell is checked below it), and ``--json`` gives the
    period."""
    from solver.outputs.plan_dir import plan_json

    _, plan = quarterly
    path = tmp_path / "plan.json"
    path.write_text(plan_json(plan))
    text = CliRunner().invoke(main, ["check", str(QUARTERLY), "--fleet", str(path)])
    assert ("a plan over periods: the matrix below is the fleet and demand of period 0 (from "
            "2027-01-01) if demand follows `base`") in text.output
    # its cells, each on its own capacity table, took a new user's loaded machine 9 minutes:
    # a line on stderr says what runs (none with --json)
    assert text.stderr.startswith(f"checking {path}, a plan over periods: each period × demand "
                                  "scenario cell on its own capacity table…")
    as_json = CliRunner().invoke(main, ["check", str(QUARTERLY), "--fleet", str(path), "--json"])
    assert "checking" not in as_json.stderr
    assert json.loads(as_json.stdout)["period"] == {"start": "2027-01-01",
                                                     "demand_scenario": "base", "period": 0}
    # --period alone: that period under the scenario shown (simulate's default too), not
    # the first demand scenario listed (`low`, which the matrix showed)
    later = CliRunner().invoke(main, ["check", str(QUARTERLY), "--fleet", str(path), "--json",
                                      "--period", "3"])
    assert json.loads(later.stdout)["period"] == {"start": "2027-10-01",
                                                   "demand_scenario": "base", "period": 3}


def test_check_checks_every_period_of_every_demand_scenario(
    quarterly: tuple[Scenario, Plan], tmp_path: Path
) -> None:
    """A plan claims survivability in every period and demand scenario, and ``check`` tested
    only the first period's fleet of the scenario shown: a later period of another scenario
    with the agent's replicas gone passed (exit 0). Every cell is checked now, on its own
    fleet and demand, with a verdict per cell; --period and --demand-scenario pick one."""
    from solver.outputs.plan_dir import plan_json

    _, plan = quarterly
    path = tmp_path / "broken.json"
    path.write_text(plan_json(_break(plan, "high", 2, "agent")))

    def check(*options: str) -> Any:
        return CliRunner().invoke(main, ["check", str(QUARTERLY), "--fleet", str(path),
                                         *options])

    every = check("--json")
    assert every.exit_code == 1, every.output
    cells = json.loads(every.stdout)["cells"]
    assert len(cells) == 12
    assert [(c["demand_scenario"], c["period"]) for c in cells if not c["ok"]] == [("high", 2)]
    failing = next(c for c in cells if not c["ok"])
    assert failing["start"] == "2027-07-01"
    assert {b["workload"] for b in failing["broken"]} == {"agent"}
    text = check()
    assert text.exit_code == 1
    assert ("FAIL: 1 of the 12 period × demand scenario cells checked fail: high period 2 "
            "(2027-07-01)") in text.output
    one_text = check("--period", "2", "--demand-scenario", "high")
    assert ("FAIL: the one period × demand scenario cell checked fails: high period 2 "
            "(2027-07-01)") in one_text.output  # was "1 of the 1 … cell checked fail"
    assert "OK: every required survival holds in the one period × demand scenario cell " \
        "checked" in check("--period", "1", "--demand-scenario", "high").output
    one = check("--period", "2", "--demand-scenario", "high", "--json")
    assert one.exit_code == 1
    doc = json.loads(one.stdout)
    assert doc["period"] == {"start": "2027-07-01", "demand_scenario": "high", "period": 2}
    assert len(doc["cells"]) == 1 and not doc["ok"]
    assert any(r["workload"] == "agent" for r in doc["broken"])
    # a period by its start date, every demand scenario of it: the break is not there
    assert check("--period", "2027-04-01").exit_code == 0
    assert check("--period", "2", "--demand-scenario", "base").exit_code == 0
    wrong = check("--demand-scenario", "hihg")
    assert wrong.exit_code == 2 and "did you mean `high`?" in wrong.output
    late = check("--period", "7")
    assert late.exit_code == 2 and "give one of 0 (or 2027-01-01)" in late.output


def test_the_sign_off_reads_the_tables_the_plan_was_made_with(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan command hands the planner's capacity tables to the sign-off: building them
    again per period and demand scenario took 31 of quarterly_q2.yaml's 92 s under load. A
    period's scenario differs from the planner's block only in the inventory held through it,
    which the table does not read, so each is found in the planner's cache (planned here in
    1 ms: the fallback fleet)."""
    from solver.capacity import table
    from solver.cli import signoff

    sc = load_scenario(QUARTERLY)
    tables = table.cached_tables(sc.gpus_sold_or_held())
    plan = plan_horizon(sc, time_limit_s=1e-3, table_for=tables)

    def refused(*_: object) -> None:
        raise AssertionError("a capacity table was built again")

    monkeypatch.setattr(table, "build_capacity_table", refused)
    checks = list(signoff.period_checks(plan, sc, tables))
    assert len(checks) == 12
    assert all(verify_plan(f, s, t, over_periods=True) == [] for _, f, s, t in checks)


def test_simulate_replays_the_period_and_demand_scenario_named(
    quarterly: tuple[Scenario, Plan], tmp_path: Path
) -> None:
    """``simulate`` on a plan over periods replayed the first period's fleet whatever period a
    planner meant: --period and --demand-scenario pick the period's own replicas (here the
    agent's, dropped from `high` period 2 only)."""
    from solver.outputs.plan_dir import plan_json

    _, plan = quarterly
    path = tmp_path / "broken.json"
    path.write_text(plan_json(_break(plan, "high", 2, "agent")))
    trace = tmp_path / "trace.csv"  # 60 requests, one a second, 600 tokens in, 50 out
    trace.write_text("time_s,input_tokens,output_tokens\n"
                     + "".join(f"{k},600,50\n" for k in range(60)))

    def simulate(*options: str) -> Any:
        return CliRunner().invoke(main, ["simulate", str(QUARTERLY), "--fleet", str(path),
                                         "--trace", str(trace), "--workload", "agent",
                                         "--json", *options])

    gone = simulate("--period", "2027-07-01", "--demand-scenario", "high")
    assert gone.exit_code == 2 and "no replicas of `agent` run in slice" in gone.output
    kept = simulate("--period", "2", "--demand-scenario", "base")
    assert kept.exit_code in (0, 1), kept.output
    doc = json.loads(kept.stdout)
    assert doc["period"] == {"period": 2, "start": "2027-07-01", "demand_scenario": "base"}
    period = next(p for p in plan.periods if (p.scenario, p.period) == ("base", 2))
    assert len(doc["replicas"]) == sum(a.replicas for a in period.allocations
                                       if a.workload == "agent"
                                       and a.slice in (None, doc["slice"]))


def test_the_contract_lists_the_configurations_of_later_periods(
    quarterly: tuple[Scenario, Plan], tmp_path: Path
) -> None:
    """contract.yaml listed the first period's configurations only, so chat's after its
    migration to Qwen2.5-72B (period 3) were never contract-checked: each later period's are
    listed now, fingerprinted against that period's workloads, and a change to the migration
    expires them (and only them), named by period."""
    import yaml

    from models.horizon import DemandScenario
    from solver.outputs.contract import period_scenario
    from solver.outputs.plan_dir import write_plan_outputs
    from solver.program.periods import Period, block_scenario
    from solver.solve.horizon import first_period_scenario

    sc, plan = quarterly
    # the contract's period scenario is the planner's (outputs may not import the program)
    high = next(d for d in sc.demand_scenarios if d.name == "high")
    assert period_scenario(sc, 3, "high") == block_scenario(
        sc, high, Period(3, dt.date(2027, 10, 1), dt.date(2028, 1, 1), 3.0), dated=True)
    assert period_scenario(sc, 2) == block_scenario(
        sc, DemandScenario(name="base", probability=1.0),
        Period(2, dt.date(2027, 7, 1), dt.date(2027, 10, 1), 3.0), dated=True)
    out = tmp_path / "out"
    out.mkdir()
    write_plan_outputs(plan, sc, out, first_period_scenario(plan, sc))
    contract = yaml.safe_load((out / "contract.yaml").read_text())
    assert [p["period"] for p in contract["periods"]] == [1, 2, 3]
    assert {r["model"] for r in contract["rows"] if r["workload"] == "chat"} == {"Llama-3.1-70B"}
    last = contract["periods"][2]
    assert last["start"] == "2027-10-01"
    chat = [r for r in last["rows"] if r["workload"] == "chat"]
    assert chat and {(r["model"], r["runtime"]) for r in chat} == {("Qwen2.5-72B", "vllm-0.7")}
    ok = CliRunner().invoke(main, ["check", str(QUARTERLY), "--contract",
                                   str(out / "contract.yaml")])
    assert ok.exit_code == 0, ok.output
    changed = tmp_path / "q.yaml"
    changed.write_text(QUARTERLY.read_text().replace(
        "model: Qwen2.5-72B, runtime: vllm-0.7", "model: Qwen2.5-72B, runtime: vllm-0.6"))
    result = CliRunner().invoke(main, ["check", str(changed), "--contract",
                                       str(out / "contract.yaml"), "--json"])
    assert result.exit_code == 1, result.output
    expired = json.loads(result.stdout)["expired"]
    assert expired and all((e["workload"], e["period"]) == ("chat", 3) for e in expired)
    assert all("runtime changed from vllm-0.7 to vllm-0.6" in e["reasons"] for e in expired)


def test_the_workbook_contract_sheet_lists_every_period_as_contract_yaml_does(
    quarterly: tuple[Scenario, Plan], tmp_path: Path
) -> None:
    """plan.xlsx's *Capacity contract* showed the first period's rows only, so procurement
    reading the workbook never saw chat's Qwen2.5-72B rows after its migration (period 3),
    which contract.yaml lists: the sheet has contract.yaml's rows of every period, each led by
    its period and first day."""
    import openpyxl
    import yaml

    from solver.outputs.plan_dir import write_plan_outputs
    from solver.solve.horizon import first_period_scenario

    sc, plan = quarterly
    out = tmp_path / "out"
    out.mkdir()
    write_plan_outputs(plan, sc, out, first_period_scenario(plan, sc))
    contract = yaml.safe_load((out / "contract.yaml").read_text())
    want = [(0, "2027-01-01", r["workload"], r["model"], r["tp"]) for r in contract["rows"]]
    want += [(p["period"], p["start"], r["workload"], r["model"], r["tp"])
             for p in contract["periods"] for r in p["rows"]]
    ws = openpyxl.load_workbook(out / "plan.xlsx")["Capacity contract"]
    rows = list(ws.iter_rows(values_only=True))
    titles = rows[0]
    assert titles[:2] == ("Period", "From")
    col = {t: i for i, t in enumerate(titles)}
    got = [(r[col["Period"]], r[col["From"]].date().isoformat(), r[col["Workload"]],
            r[col["Model"]], int(r[col["Configuration"]].split(" TP")[1].split()[0]))
           for r in rows[1:]]
    assert got == want
    assert ("Qwen2.5-72B" in {m for p, _, w, m, _ in got if p == 3 and w == "chat"})


def test_the_outputs_read_the_tables_the_plan_was_planned_with(
    quarterly: tuple[Scenario, Plan], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fleetplan plan`` over periods hands the outputs the capacity tables it planned and
    signed off with: the workbook's first period and the contract's later periods build none
    again (they built every one again: 2.5–3 s a plan of quarterly.yaml), and contract.yaml
    is the same file."""
    import solver.capacity.table as capacity_table
    from solver.capacity.table import cached_tables
    from solver.outputs.plan_dir import write_plan_outputs
    from solver.solve.horizon import first_period_scenario

    sc, plan = quarterly
    shown = first_period_scenario(plan, sc)
    alone = tmp_path / "alone"
    alone.mkdir()
    write_plan_outputs(plan, sc, alone, shown)
    tables = cached_tables(sc.gpus_sold_or_held())
    assert list(period_checks(plan, sc, tables))  # the sign-off fills the cache, as in plan
    built: list[str] = []
    real = capacity_table.build_capacity_table

    def counted(*args: Any, **kw: Any) -> Any:
        built.append(args[0].name)
        return real(*args, **kw)

    monkeypatch.setattr(capacity_table, "build_capacity_table", counted)
    handed = tmp_path / "handed"
    handed.mkdir()
    write_plan_outputs(plan, sc, handed, shown, None, tables)
    assert built == []
    assert (handed / "contract.yaml").read_text() == (alone / "contract.yaml").read_text()


def test_inventory_nodes_of_their_own_size_are_verified_at_that_size(tmp_path: Path) -> None:
    """Owned 3-GPU nodes held in a zone whose offer sells 8-GPU nodes (on demand only, so the
    owned pool's size is the inventory's): the plan holds them as 3 nodes of 3 GPUs, and the
    verifier reads that size. It read the zone offer's 8, so `plan` exited 3 ("gpus 9 != nodes
    3 × 8 GPUs per node", a bug in fleetplan) on a scenario that validates (trust sweep,
    benchmarks/results/trust.md)."""
    doc = {
        "name": "inv3",
        "zones": [{"id": z, "region": "r1", "offers": [
            {"gpu": "H100-SXM", "gpus_per_node": 8, "price_source": "hand",
             "on_demand": {"price_per_gpu_hour": 4.0, "stock_gpus": 16}}]}
            for z in ("za", "zb")],
        "inventory": [{"zone": "za", "gpu": "H100-SXM", "gpus_per_node": 3, "nodes": 3,
                       "purchase": "owned", "running_cost_per_node_month": 100}],
        "workloads": [{"name": "chat", "model": "Llama-3.1-8B", "precision": "bf16",
                       "class": "interactive", "arrival": {"peak_rps": 8.0},
                       "input_tokens": {"p50": 1000, "p95": 1500, "p99": 2000},
                       "output_tokens": {"p50": 200, "p95": 300, "p99": 400},
                       "slo": {"ttft_p95_ms": 1000, "tpot_p95_ms": 50},
                       "survivability": "n_plus_1"}],
        "policy": {"as_of": "2026-12-01",
                   "time_blocks": [{"name": "day", "hours": list(range(24))}]},
    }
    path = tmp_path / "inv3.yaml"
    path.write_text(json.dumps(doc), encoding="utf-8")
    out = tmp_path / "plan"
    result = CliRunner().invoke(main, ["plan", str(path), "--out", str(out), "--quiet",
                                       "--time-limit", "20"])
    assert result.exit_code == 0, result.output
    plan = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    assert plan["verified"] is True
    owned = [n for n in plan["nodes"] if n["purchase"] == "owned"]
    assert [(n["zone"], n["nodes"], n["gpus"]) for n in owned] == [("za", 3, 9)]
    checked = CliRunner().invoke(main, ["check", str(path), "--fleet", str(out / "plan.json"),
                                        "--json"])
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.output)["verification"] == []
