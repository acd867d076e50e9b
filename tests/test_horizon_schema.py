"""The schema of planning over time: horizon, growth, events, migrations, demand scenarios,
reserved quotes, owned hardware and the inventory held — shape, consistency, and that a scenario
using none of them dumps exactly as before."""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from pydantic import ValidationError

from inputs import demo_scenario
from models.common import FINGERPRINT_CONTEXT, Precision, PurchaseKind, Upfront
from models.errors import InputError
from models.horizon import DemandScenario, HeldNodes, Horizon, add_months
from models.loader import load_scenario
from models.offers import Offer, OwnedTerms, ReservedTerms
from models.scenario import Scenario
from solver.cli import main


def quarterly_doc() -> dict[str, Any]:
    """A small valid scenario over four quarters."""
    return {
        "name": "q",
        "zones": [{
            "id": "zone-a", "region": "region-1",
            "offers": [
                {"gpu": "L4", "gpus_per_node": 1, "instance_type": "l4-box",
                 "on_demand": {"price_per_gpu_hour": 1.0, "stock_gpus": 8},
                 "reserved": [
                     {"term_months": 12, "upfront": "none", "price_per_gpu_hour": 0.6,
                      "stock_gpus": 4, "lead_time_weeks": 4},
                     {"term_months": 36, "upfront": "all", "price_per_gpu_hour": 0.45,
                      "stock_gpus": 4}]},
                {"gpu": "H100-SXM", "gpus_per_node": 8,
                 "owned": {"capex_per_node": 240_000, "life_months": 48, "gpu_tdp_w": 700,
                           "node_overhead_w": 2400, "average_utilization": 0.5,
                           "price_per_kwh": 0.1, "pue": 1.25, "hosting_per_node_month": 1000,
                           "stock_gpus": 32, "lead_time_weeks": 12}},
            ],
        }],
        "workloads": [{
            "name": "chat", "model": "Llama-3.1-8B",
            "arrival": {"peak_rps": 4},
            "input_tokens": {"p50": 1000, "p95": 1500, "p99": 2000},
            "output_tokens": {"p50": 200, "p95": 300, "p99": 400},
            "slo": {"ttft_p95_ms": 1000, "tpot_p95_ms": 50},
            "growth": [1.0, 1.5, 2.0, 2.5],
            "events": [{"name": "launch", "from_period": 2, "add_peak_rps": 2}],
            "migrations": [{"from_period": 3, "precision": "fp8", "runtime": "vllm-0.7"}],
        }],
        "horizon": {"start": "2027-01-01", "period_months": 3, "count": 4},
        "inventory": [{"zone": "zone-a", "gpu": "L4", "nodes": 2, "kind": "reserved",
                       "ends": "2027-06-30"},
                      {"zone": "zone-a", "instance_type": "l4-box", "nodes": 1,
                       "running_cost_per_node_month": 50}],
        "demand_scenarios": [{"name": "low", "probability": 0.25, "growth": [1, 0.9, 0.8, 0.7]},
                             {"name": "base", "probability": 0.5},
                             {"name": "high", "probability": 0.25,
                              "growth": {"chat": [1, 1.2, 1.5, 2]}}],
    }


def load_doc(doc: dict[str, Any], tmp_path: Path) -> Any:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_scenario(path)


def problems_of(doc: dict[str, Any], tmp_path: Path) -> list[tuple[str, str]]:
    with pytest.raises(InputError) as err:
        load_doc(doc, tmp_path)
    return [(p.location, p.message) for p in err.value.problems]


def test_a_scenario_without_the_new_keys_dumps_none_of_them() -> None:
    """Fingerprints, scenario.resolved.yaml and plan.json of earlier scenarios stay the same:
    no new key appears in their dumps (and so not in their fingerprint's JSON)."""
    scenario = load_scenario(demo_scenario())
    text = scenario.model_dump_json(context=FINGERPRINT_CONTEXT)
    for key in ("inventory", "horizon", "demand_scenarios", "growth", "events", "migrations",
                "upfront", "assumed", "owned", "from_period"):
        assert f'"{key}"' not in text
    assert not scenario.multi_period
    # the price table's reserved price is a discount on on-demand, its stock an assumption:
    # labelled (issue 20), outside the digest
    full = scenario.model_dump_json()
    assert '"assumed":true' in full and '"assumed":["reserved_price"' in full


def test_the_quarterly_scenario_loads_and_resolves(tmp_path: Path) -> None:
    scenario = load_doc(quarterly_doc(), tmp_path)
    assert scenario.multi_period
    offer = scenario.zones[0].offers[0]
    terms = [(q.term_months, q.upfront, q.price_per_gpu_hour) for q in offer.reserved_quotes]
    assert terms == [(12, Upfront.none, 0.6), (36, Upfront.all, 0.45)]
    # the instance type resolves through the zone's offer: L4, one GPU per node
    held = scenario.inventory[1]
    assert (held.gpu, held.gpus_per_node, held.instance_type) == ("L4", 1, "l4-box")
    # a resolved record reads back as the same scenario
    again = load_doc(json.loads(scenario.model_dump_json(exclude={"sources"})), tmp_path)
    assert again.model_dump(exclude={"sources"}) == scenario.model_dump(exclude={"sources"})


def test_instance_types_resolve_from_the_builtin_price_table(tmp_path: Path) -> None:
    doc = quarterly_doc()
    doc["inventory"] = [{"zone": "zone-a", "instance_type": "p5.48xlarge", "nodes": 1,
                         "running_cost_per_node_month": 3000}]
    held = load_doc(doc, tmp_path).inventory[0]
    assert (held.gpu, held.gpus_per_node) == ("H100-SXM", 8)
    doc["inventory"][0]["instance_type"] = "p5.48xlarg"
    ((where, message),) = problems_of(doc, tmp_path)
    assert where == "inventory[0].instance_type" and "p5.48xlarg" in message


def test_a_workload_in_a_period(tmp_path: Path) -> None:
    chat = load_doc(quarterly_doc(), tmp_path).workload("chat")
    assert chat.in_period(1).arrival is not None
    assert chat.in_period(1).arrival.peak_rps == pytest.approx(6.0)  # 4 × 1.5
    # period 2: 4 × 2.0 + the launch's 2 on the same (flat) shape = 10; × a scenario's 1.5
    assert chat.in_period(2, 1.5).arrival.peak_rps == pytest.approx(4 * 2.0 * 1.5 + 2)
    third = chat.in_period(3)
    assert (third.precision, third.runtime, third.model) == (Precision.fp8, "vllm-0.7",
                                                             "Llama-3.1-8B")
    assert chat.in_period(2).precision is Precision.bf16
    assert (third.growth, third.events, third.migrations) == ((), (), ())


def test_a_workload_launched_later_is_absent_before_its_period(tmp_path: Path) -> None:
    """F4 (a new user): a model launched in Q2 could not have zero demand before (growth > 0,
    peak_rps ≥ 0.001), and Q1 held replicas for it. ``from_period: 2``: the period scenarios
    of quarters 0 and 1 leave it out; from quarter 2 it runs with its growth there (×1.5)."""
    doc = quarterly_doc()
    launch = {**doc["workloads"][0], "name": "launch", "from_period": 2,
              "growth": [1, 1, 1.5, 2]}
    launch.pop("events", None)
    launch.pop("migrations", None)
    doc["workloads"].append(launch)
    sc = load_doc(doc, tmp_path)
    base = DemandScenario(name="base", probability=1.0)
    assert [[w.name for w in sc.in_period(q, base).workloads] for q in range(4)] == [
        ["chat"], ["chat"], ["chat", "launch"], ["chat", "launch"]]
    grown = sc.in_period(2, base).workload("launch")
    assert grown.arrival is not None and grown.arrival.peak_rps == pytest.approx(4 * 1.5)
    assert grown.from_period == 0  # a single-period workload


def test_a_launch_is_refused_where_it_cannot_hold(tmp_path: Path) -> None:
    """Past the horizon, without one (a single-period plan), every workload launched after
    the first period (periods of nothing), and an event or a migration before the launch:
    each refused, located, with the fix."""
    doc = quarterly_doc()
    late = {**doc["workloads"][0], "name": "late", "from_period": 4}
    late.pop("events", None)
    late.pop("migrations", None)
    doc["workloads"].append(late)
    assert ("workloads[1].from_period", "period 4 is past the horizon's last (3)") in \
        problems_of(doc, tmp_path)
    late["from_period"] = 2
    late["events"] = [{"name": "early", "from_period": 1, "add_peak_rps": 1}]
    late["migrations"] = [{"from_period": 2, "precision": "fp8"}]
    found = dict(problems_of(doc, tmp_path))
    assert found["workloads[1].events[0].from_period"].startswith(
        "period 1 is before the workload's launch (from_period 2)")
    assert found["workloads[1].migrations[0].from_period"].startswith(
        "period 2 is not after the workload's launch (from_period 2)")
    del late["events"], late["migrations"]
    doc["workloads"][0]["from_period"] = 1
    found = dict(problems_of(doc, tmp_path))
    assert found["workloads"].startswith("no workload runs before period 1")
    doc["workloads"][0]["from_period"] = 0
    one = {k: v for k, v in doc.items() if k != "horizon"}
    one["workloads"] = [{k: v for k, v in w.items() if k not in ("growth", "events",
                                                                  "migrations")}
                        for w in doc["workloads"]]
    assert ("workloads[1].from_period", "needs a planning horizon") in problems_of(one, tmp_path)


def test_an_event_with_its_own_shape_moves_the_peak_hour() -> None:
    from models.workload import Workload

    day = [0.5] * 24
    day[18] = 1.0
    launch = [0.0] * 24
    launch[9] = 1.0
    w = Workload.model_validate({
        "name": "w", "model": "m", "arrival": {"peak_rps": 10, "hourly_shape": day},
        "input_tokens": {"p50": 1, "p95": 1, "p99": 1},
        "output_tokens": {"p50": 1, "p95": 1, "p99": 1},
        "slo": {"ttft_p95_ms": 1, "tpot_p95_ms": 1},
        "events": [{"name": "eu", "from_period": 1, "add_peak_rps": 8, "hourly_shape": launch}]})
    hourly = w.in_period(1).hourly_demand_rps()
    assert hourly[9] == pytest.approx(13.0)  # 10 × 0.5 + 8
    assert hourly[18] == pytest.approx(10.0)
    assert w.in_period(0).hourly_demand_rps() == w.hourly_demand_rps()


def test_horizon_dates() -> None:
    h = Horizon(start=dt.date(2027, 1, 31), period_months=3, count=4)
    assert h.period_start(1) == dt.date(2027, 4, 30)
    assert h.end == dt.date(2028, 1, 31)
    assert add_months(dt.date(2027, 11, 30), 3) == dt.date(2028, 2, 29)
    assert h.replan_interval_months == 3


def test_demand_scenario_multipliers() -> None:
    flat = DemandScenario(name="x", probability=1, growth=(1, 2))
    per = DemandScenario(name="y", probability=1, growth={"chat": (1, 3)})
    assert (flat.multiplier("any", 1), per.multiplier("chat", 1), per.multiplier("code", 1)) == (
        2, 3, 1)


def test_owned_cost_per_node_month() -> None:
    owned = OwnedTerms(capex_per_node=240_000, life_months=48, gpu_tdp_w=700,
                       node_overhead_w=2400, average_utilization=0.5, price_per_kwh=0.1,
                       pue=1.25, hosting_per_node_month=1000, stock_gpus=8)
    # power: (700 × 8 + 2400) W = 8 kW × 0.5 × 0.1 $/kWh × 1.25 × 730 h = 365 $/month
    assert owned.power_per_node_month(8, 730) == pytest.approx(365.0)
    # + 240,000 / 48 = 5,000 capital + 1,000 hosting
    assert owned.cost_per_node_month(8, 730) == pytest.approx(6365.0)
    assert owned.running_per_node_month(8, 730) == pytest.approx(1365.0)


def test_upfront_shares() -> None:
    def quote(**kw: Any) -> ReservedTerms:
        return ReservedTerms(price_per_gpu_hour=1, stock_gpus=1, **kw)

    assert quote().paid_upfront_share == 0
    assert quote(upfront="all").paid_upfront_share == 1
    assert quote(upfront="partial").paid_upfront_share == 0.5
    assert quote(upfront="partial", upfront_share=0.3).paid_upfront_share == 0.3
    with pytest.raises(ValueError, match="upfront_share"):
        quote(upfront="none", upfront_share=0.3)


def test_the_cheapest_quote_prices_the_offer() -> None:
    offer = Offer.model_validate({"gpu": "L4", "reserved": [
        {"term_months": 12, "price_per_gpu_hour": 0.6, "stock_gpus": 1},
        {"term_months": 36, "price_per_gpu_hour": 0.4, "stock_gpus": 1}]})
    cheapest = offer.terms(PurchaseKind.reserved)
    assert isinstance(cheapest, ReservedTerms) and cheapest.term_months == 36
    with pytest.raises(ValueError, match="two reserved quotes of 12 months"):
        Offer.model_validate({"gpu": "L4", "reserved": [
            {"term_months": 12, "price_per_gpu_hour": 0.6, "stock_gpus": 1},
            {"term_months": 12, "price_per_gpu_hour": 0.5, "stock_gpus": 1}]})


def test_inventory_lines_name_gpus_as_check_fleet_does(tmp_path: Path) -> None:
    """Was: `gpu: H100` or `gpu: p5.48xlarge` in a scenario's inventory → "unknown GPU",
    though `check --fleet` and an offer take both (issue 16 item 1, qa3 F14)."""
    doc = quarterly_doc()
    doc["inventory"] = [
        {"zone": "zone-a", "gpu": "H100", "nodes": 1, "running_cost_per_node_month": 3000},
        {"zone": "zone-a", "gpu": "p5.48xlarge", "nodes": 2, "running_cost_per_node_month": 3000},
        {"zone": "zone-a", "gpu": "l4", "instance_type": "l4-box", "nodes": 1,
         "purchase": "reserved", "ends": "2027-06-30"}]
    held = load_doc(doc, tmp_path).inventory
    assert [(h.gpu, h.gpus_per_node, h.nodes) for h in held] == [
        ("H100-SXM", 8, 1), ("H100-SXM", 8, 2), ("L4", 1, 1)]
    doc["inventory"][0]["gpu"] = "H100-SMX"
    ((where, message),) = problems_of(doc, tmp_path)
    assert (where, message) == ("inventory[0].gpu", "unknown GPU `H100-SMX`")


def test_inventory_purchase_is_named_as_in_check_fleet(tmp_path: Path) -> None:
    """`purchase:` as a `check --fleet` inventory and plan.json name it; `kind:` (the first
    name of the key) reads the same; both on one line are refused with the fix."""
    doc = quarterly_doc()
    line = {"zone": "zone-a", "gpu": "L4", "nodes": 2, "ends": "2027-06-30"}
    doc["inventory"] = [{**line, "purchase": "reserved"}, {**line, "kind": "reserved"}]
    first, second = load_doc(doc, tmp_path).inventory
    assert first == second and first.purchase.value == "reserved"
    doc["inventory"] = [{**line, "purchase": "reserved", "kind": "owned"}]
    found = problems_of(doc, tmp_path)
    assert any(where.startswith("inventory[0]") and "give `purchase` only" in message
               for where, message in found), found


def test_held_nodes_shape() -> None:
    with pytest.raises(ValueError, match="end date"):
        HeldNodes(zone="z", gpu="L4", nodes=1, purchase="reserved")
    with pytest.raises(ValueError, match="by `gpu` or by `instance_type`"):
        HeldNodes(zone="z", nodes=1)
    held = HeldNodes(zone="z", gpu="L4", nodes=1, purchase="reserved", ends=dt.date(2027, 6, 30))
    assert held.held_through(dt.date(2027, 4, 1), dt.date(2027, 7, 1))
    assert not held.held_through(dt.date(2027, 7, 1), dt.date(2027, 10, 1))


@pytest.mark.parametrize(("edit", "where", "words"), [
    (lambda d: d["workloads"][0].update(growth=[1, 2]), "workloads[0].growth", "2 growth values"),
    (lambda d: d["workloads"][0]["events"][0].update(from_period=4),
     "workloads[0].events[0].from_period", "past the horizon"),
    (lambda d: d["workloads"][0]["migrations"][0].update(model="Llama-9"),
     "workloads[0].migrations[0].model", "unknown model"),
    # a runtime the calibration has no costs for: a new user's `runtime: sglang` validated and
    # its periods were planned on the GPU's bare factors, no runtime's costs, nothing said
    (lambda d: d["workloads"][0]["migrations"][0].update(runtime="sglang"),
     "workloads[0].migrations[0].runtime",
     "unknown runtime `sglang`: the runtime catalog has no fixed costs for it"),
    (lambda d: d["demand_scenarios"][0].update(probability=0.5), "demand_scenarios",
     "sum to 1.25"),
    (lambda d: d["demand_scenarios"][1].update(name="low"), "demand_scenarios[1].name",
     "duplicate"),
    (lambda d: d["demand_scenarios"][2].update(growth={"chta": [1, 1, 1, 1]}),
     "demand_scenarios[2].growth.chta", "unknown workload"),
    (lambda d: d["inventory"][0].update(zone="zone-b"), "inventory[0].zone", "unknown zone"),
    (lambda d: d["zones"][0]["offers"][0]["reserved"][0].update(term_months=2),
     "zones[0].offers[0].reserved[0].term_months", "no whole period"),
    (lambda d: d["inventory"][0].update(gpu="H100-SXM"), "inventory[0].price_per_gpu_hour",
     "no reserved quote"),
    (lambda d: d["inventory"][1].pop("running_cost_per_node_month") and d["inventory"][1].update(
        instance_type="p4d.24xlarge"), "inventory[1].running_cost_per_node_month",
     "no `owned` terms"),
    # the GPU by its catalog name: the loader locates it (Scenario's own check is not reached)
    (lambda d: d["inventory"][1].pop("running_cost_per_node_month") and d["inventory"][1].update(
        instance_type=None, gpu="L4"), "inventory[1].running_cost_per_node_month",
     "no `owned` terms"),
    (lambda d: d.pop("horizon"), "workloads[0].growth", "needs a planning horizon"),
])
def test_inconsistent_planning_inputs_are_located(
    edit: Any, where: str, words: str, tmp_path: Path
) -> None:
    doc = copy.deepcopy(quarterly_doc())
    edit(doc)
    found = problems_of(doc, tmp_path)
    assert any(loc == where and words in message for loc, message in found), found


def test_an_owned_line_built_in_code_without_a_running_cost_is_refused_by_the_scenario(
        tmp_path: Path) -> None:
    """Was: a Scenario built in code (not read from a file) with an owned line that states no
    running cost, in a zone whose offer for its GPU has no ``owned`` terms, validated, and
    planning it stopped at a bare ``assert`` in solver/solve/horizon.py. The scenario now
    refuses it, naming the line and the fix; an owned line the zone's owned terms price (H100-SXM
    in zone-a), or that states its running cost, is accepted."""
    sc = load_doc(quarterly_doc(), tmp_path)
    fields = {name: getattr(sc, name) for name in type(sc).model_fields}
    unpriced = HeldNodes(zone="zone-a", gpu="L4", gpus_per_node=1, nodes=1)
    with pytest.raises(ValidationError, match=r"inventory\[2\] \(1 owned L4 node\(s\) in zone-a\)"
                       r": no running cost.*running_cost_per_node_month"):
        Scenario(**{**fields, "inventory": (*sc.inventory, unpriced)})
    priced = unpriced.model_copy(update={"running_cost_per_node_month": 50.0})
    by_terms = HeldNodes(zone="zone-a", gpu="H100-SXM", gpus_per_node=8, nodes=1)
    ok = Scenario(**{**fields, "inventory": (*sc.inventory, priced, by_terms)})
    assert len(ok.inventory) == 4


def test_an_offer_is_located_at_the_files_own_index_beside_a_price_table(
        tmp_path: Path) -> None:
    """A new user's zones[0] had one offer (offers[0]) and validate said
    ``zones[0].offers[1]``: the price table's offers come first in the merged zone. Problems
    name the file's own index, and an offer from the price table names the table."""
    doc = quarterly_doc()
    doc.pop("inventory")
    doc["price_tables"] = [{"path": "builtin:aws", "zones": ["use1-az1"],
                            "gpus": ["A10G", "L4", "L40S", "H100-SXM"],
                            "reserved": {"discount_vs_on_demand": 0.4, "commitment_months": 2}}]
    h100 = doc["zones"][0]["offers"][1]
    h100.pop("owned")
    h100["on_demand"] = {"price_per_gpu_hour": 12.29, "stock_gpus": 16}
    h100["reserved"] = [{"term_months": 2, "price_per_gpu_hour": 7.6, "stock_gpus": 16}]
    doc["zones"] = [{"id": "use1-az1", "region": "us-east-1", "offers": [h100]}]
    found = problems_of(doc, tmp_path)
    assert sorted(loc for loc, _ in found) == [
        "price_tables[0] (A10G in use1-az1).reserved.term_months",
        "price_tables[0] (L4 in use1-az1).reserved.term_months",
        "price_tables[0] (L40S in use1-az1).reserved.term_months",
        "zones[0].offers[0].reserved[0].term_months"], found


def test_validate_exits_2_on_a_bad_horizon(tmp_path: Path) -> None:
    doc = quarterly_doc()
    doc["workloads"][0]["growth"] = [1, 2, 3]
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2
    assert "workloads[0].growth" in result.output and "3 growth values for 4" in result.output


def test_the_quarterly_example_validates() -> None:
    """inputs/scenarios/quarterly.yaml (README, "Quarterly procurement"): the demo's workloads
    over four quarters with an owned inventory, a reservation named by instance type, quotes,
    a launch, a migration and three demand scenarios."""
    from inputs import scenarios_dir

    sc = load_scenario(scenarios_dir() / "quarterly.yaml")
    assert sc.horizon is not None and sc.horizon.count == 4
    assert [s.name for s in sc.demand_scenarios] == ["low", "base", "high"]
    assert [(h.zone, h.gpu, h.gpus_per_node, h.purchase.value) for h in sc.inventory] == [
        ("onprem-dc1", "H100-SXM", 8, "owned"), ("use1-az1", "H100-SXM", 8, "reserved")]
    chat = sc.workload("chat")
    assert (chat.in_period(3).model, chat.in_period(2).model) == ("Qwen2.5-72B",
                                                                  "Llama-3.1-70B")
    assert sc.workload("agent").in_period(2).arrival.peak_rps == pytest.approx(1.5 * 1.4 + 1)


def test_a_growth_at_or_below_zero_names_its_period_value_and_fix(tmp_path: Path) -> None:
    """A new user's negative growth said only "growth multipliers must be > 0", with no fix
    and no word of which of the four it was; a demand scenario's said less still. Each names the
    period and value, and the fix says what a multiplier is."""
    doc = quarterly_doc()
    doc["workloads"][0]["growth"] = [1.0, 1.5, -2.0, 2.5]
    doc["demand_scenarios"][0]["growth"] = [1, 0.9, 0, 0.7]
    doc["demand_scenarios"][2]["growth"] = {"chat": [1, 1.2, -1.5, 2]}
    with pytest.raises(InputError) as err:
        load_doc(doc, tmp_path)
    found = {p.location: p for p in err.value.problems}
    assert found["workloads[0].growth"].message.endswith("per planning period): [2] is -2")
    assert found["demand_scenarios[0].growth"].message.endswith("): [2] is 0")
    assert found["demand_scenarios[2].growth"].message.endswith("): chat[2] is -1.5")
    for p in found.values():
        assert "0.9 a 10 % fall" in p.fix, p


def test_a_launch_round_trips_through_plan_replan_validate_and_template(tmp_path: Path) -> None:
    """tiny.yaml over two quarters with a copy of chat, `launch`, from quarter 1: the plan's
    workbook (its Periods table read every workload in every period: KeyError) gives `launch`
    0 demand and 0 capacity in quarter 0; scenario.resolved.yaml keeps `from_period` and
    validates; a re-plan (--existing) plans it from the same quarter; validate says it; the
    scenario workbook, which has no place for it, names it and writes nothing."""
    import openpyxl

    from inputs import scenarios_dir

    doc = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text(encoding="utf-8"))
    doc["horizon"] = {"start": "2027-01-01", "period_months": 3, "count": 2}
    doc["workloads"].append({**doc["workloads"][0], "name": "launch", "from_period": 1})
    path = tmp_path / "launch.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    runner = CliRunner()
    said = runner.invoke(main, ["validate", str(path)])
    assert said.exit_code == 0, said.output
    assert ("launch: launches in period 1 (2027-04-01): no demand and no replicas before"
            in said.stdout)

    def planned(out: Path, *more: str) -> list[list[str]]:
        result = runner.invoke(main, ["plan", str(path), "--out", str(out), "--quiet", *more])
        assert result.exit_code == 0, result.output
        p = json.loads((out / "plan.json").read_text(encoding="utf-8"))
        return [[w["workload"] for w in q["workloads"]] for q in p["periods"]]

    assert planned(tmp_path / "q1") == [["chat"], ["chat", "launch"]]
    sheet = openpyxl.load_workbook(tmp_path / "q1" / "plan.xlsx")["Schedule"]
    rows = [[c.value for c in r] for r in sheet.iter_rows()]
    head = next(i for i, r in enumerate(rows) if "launch demand [req/s]" in r)
    col = rows[head].index("launch demand [req/s]")
    assert [(r[1], r[col], r[col + 1]) for r in rows[head + 1:head + 3]] == [
        (0, 0.0, 0.0), (1, 4.0, pytest.approx(13.4, abs=0.1))]
    resolved = tmp_path / "q1" / "scenario.resolved.yaml"
    assert yaml.safe_load(resolved.read_text(encoding="utf-8"))["workloads"][1][
        "from_period"] == 1
    assert runner.invoke(main, ["validate", str(resolved)]).exit_code == 0
    assert planned(tmp_path / "q2", "--existing", str(tmp_path / "q1" / "plan.json")) == [
        ["chat"], ["chat", "launch"]]
    book = runner.invoke(main, ["template", "--from", str(path), "--out",
                                str(tmp_path / "s.xlsx")])
    assert book.exit_code == 2
    assert "workloads[1].from_period: the scenario workbook has no place for it" in book.output
    assert not (tmp_path / "s.xlsx").exists()


def test_a_plan_date_after_the_horizon_is_refused(tmp_path: Path) -> None:
    """A new user's `policy.as_of: 2028-06-01` (a year typed wrong) on a horizon ending
    2027-12-31 validated, and the plan ran to "infeasible" naming every quote's lead time —
    every period had ended before the plan was made. Refused at `policy.as_of`; a plan made
    inside the last period (under way) still loads."""
    doc = quarterly_doc()  # 2027-01-01, four quarters: the day after the last is 2028-01-01
    doc["policy"] = {"as_of": "2028-01-01"}
    ((where, message),) = problems_of(doc, tmp_path)
    assert where == "policy.as_of"
    assert "2028-01-01 is on or after the horizon's end" in message
    doc["policy"] = {"as_of": "2027-12-31"}
    assert load_doc(doc, tmp_path).policy.as_of == "2027-12-31"
