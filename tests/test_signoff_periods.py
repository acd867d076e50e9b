"""No plan over periods leaves unverified: ``fleetplan plan`` checks every period's fleet of
every demand scenario with the independent verifier, which reads the inventory held then."""

from __future__ import annotations

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
    period's. It says so now, and ``--json`` gives the period."""
    from solver.outputs.plan_dir import plan_json

    _, plan = quarterly
    path = tmp_path / "plan.json"
    path.write_text(plan_json(plan))
    text = CliRunner().invoke(main, ["check", str(QUARTERLY), "--fleet", str(path)])
    assert ("a plan over periods: the failures below are checked on its first period's fleet "
            "(from 2027-01-01, if demand follows `base`)") in text.output
    as_json = CliRunner().invoke(main, ["check", str(QUARTERLY), "--fleet", str(path), "--json"])
    assert json.loads(as_json.stdout)["period"] == {"start": "2027-01-01",
                                                     "demand_scenario": "base"}


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
