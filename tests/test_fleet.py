"""Reading fleets (plan.json, inventories) and laying replicas out."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from models.common import PurchaseKind
from models.errors import InputError
from models.plan import SolveStatus
from solver.survivability.fleet import load_fleet
from tests import fleet_cases as fc

R, S = PurchaseKind.reserved, PurchaseKind.spot


def _write(tmp_path: Path, doc: object, name: str = "fleet.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def test_load_fleet_from_plan_json(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(fc.plan().model_dump_json(), encoding="utf-8")
    fleet = load_fleet(path, fc.scenario(), fc.table())
    assert [(g.workload, g.zone, g.purchase, g.slice, g.replicas) for g in fleet.replicas] == [
        ("chat", "z1", R, None, 6),
        ("chat", "z2", R, None, 6),
        ("summarize", "z1", S, "night", 3),
    ]
    assert sum(n.gpus for n in fleet.nodes) == 16 + 16 + 8
    assert fleet.gpus_per_node("z1", "H100", R) == 8


def test_inventory_with_layout(tmp_path: Path) -> None:
    doc = {
        "name": "owned",
        "nodes": [
            {"zone": "z1", "gpu": "H100", "nodes": 1},
            {"zone": "z1", "gpu": "H100", "purchase": "on_demand", "nodes": 1},
        ],
        "layout": [{"workload": "chat", "zone": "z1", "gpu": "H100", "tp": 2, "replicas": 6}],
    }
    fleet = load_fleet(_write(tmp_path, doc), fc.scenario(), fc.table())
    # 4 tp2 replicas fill the reserved node, the other 2 go on the on-demand node
    assert [(g.purchase, g.replicas, g.slo_rps) for g in fleet.replicas] == [
        (PurchaseKind.on_demand, 2, 2.0),
        (R, 4, 2.0),
    ]
    assert not fleet.laid_out_by_fleetplan


def test_greedy_layout_known_answer(tmp_path: Path) -> None:
    # z1: 2 reserved H100 nodes + 1 spot node; z2: 1 reserved node.
    # chat needs ⌈12 / 0.7 / 2.0⌉ = 9 tp2 replicas (cheapest: tp2 at 1.0 $/Mtok), spread 16:8
    # over z1:z2 → 6 + 3. summarize needs ⌈(36000 / 21600) / 0.9 / 1.0⌉ = 2 tp1 → z1 reserved.
    # z1 reserved has 16 − 12 − 2 = 2 GPUs left, z2 has 8 − 6 = 2. Spares, one replica per
    # workload per round, chat (zone_loss) first: round 1 chat tp2 → z2 (thinnest: 4/2 < 7/2),
    # summarize tp1 → z1 reserved (1 GPU left); round 2 chat tp2 fits nowhere, its next config
    # tp1 takes z1's last reserved GPU; summarize then fills the 8 spot GPUs.
    doc = {
        "nodes": [
            {"zone": "z1", "gpu": "H100", "nodes": 2},
            {"zone": "z2", "gpu": "H100", "nodes": 1},
            {"zone": "z1", "gpu": "H100", "purchase": "spot", "nodes": 1},
        ]
    }
    fleet = load_fleet(_write(tmp_path, doc), fc.scenario(), fc.table())
    got = [(g.workload, g.zone, g.tp, g.purchase, g.replicas) for g in fleet.replicas]
    assert got == [
        ("chat", "z1", 1, R, 1),
        ("chat", "z1", 2, R, 6),
        ("chat", "z2", 2, R, 4),
        ("summarize", "z1", 1, R, 3),
        ("summarize", "z1", 1, S, 8),
    ]
    assert fleet.laid_out_by_fleetplan
    # every owned GPU is used: z1 reserved 1 + 12 + 3 = 16, z2 8, spot 8
    assert sum(g.replicas * g.tp for g in fleet.replicas) == 32


def test_greedy_layout_is_deterministic(tmp_path: Path) -> None:
    doc = {
        "nodes": [
            {"zone": "z2", "gpu": "H100", "nodes": 3},
            {"zone": "z1", "gpu": "H100", "nodes": 2},
        ]
    }
    path = _write(tmp_path, doc)
    assert load_fleet(path, fc.scenario(), fc.table()) == load_fleet(
        path, fc.scenario(), fc.table()
    )


def test_bad_inventory_names_are_located(tmp_path: Path) -> None:
    doc = {
        "nodes": [
            {"zone": "z3", "gpu": "H100", "nodes": 1},
            {"zone": "z1", "gpu": "H10", "nodes": 1},
        ]
    }
    with pytest.raises(InputError) as err:
        load_fleet(_write(tmp_path, doc), fc.scenario(), fc.table())
    text = err.value.render()
    assert "nodes[0].zone: unknown zone `z3`" in text
    assert "nodes[1].gpu: unknown GPU `H10` — did you mean `H100`?" in text


def test_an_instance_type_mistyped_as_a_gpu_gets_the_closest_instance_types(
    tmp_path: Path,
) -> None:
    """qa4 14: `gpu: p5.48xl` listed the catalog's GPU names only, though `gpu:` also takes
    instance types (`p5.48xlarge`): the closest instance types are suggested, with what they
    hold, as a GPU name gets the closest GPU names."""
    from inputs import demo_scenario
    from models.loader import load_scenario

    demo = load_scenario(demo_scenario())
    doc = {"nodes": [{"zone": "use1-az1", "gpu": "p5.48xl", "nodes": 1}]}
    with pytest.raises(InputError) as err:
        load_fleet(_write(tmp_path, doc), demo)
    assert ("nodes[0].gpu: unknown GPU `p5.48xl` — did you mean the instance type "
            "`p5.48xlarge` (8 × H100-SXM)") in err.value.render()


def test_layout_that_does_not_fit(tmp_path: Path) -> None:
    doc = {
        "nodes": [{"zone": "z1", "gpu": "H100", "nodes": 1}],
        "layout": [{"workload": "chat", "zone": "z1", "gpu": "H100", "tp": 2, "replicas": 5}],
    }
    with pytest.raises(InputError, match=r"only 4 of 5 tp2 replicas fit"):
        load_fleet(_write(tmp_path, doc), fc.scenario(), fc.table())


def test_layout_with_infeasible_config(tmp_path: Path) -> None:
    doc = {
        "nodes": [{"zone": "z1", "gpu": "H100", "nodes": 1}],
        "layout": [{"workload": "chat", "zone": "z1", "gpu": "H100", "tp": 8, "replicas": 1}],
    }
    with pytest.raises(InputError, match=r"use one of: H100 tp2 bf16, H100 tp1 bf16, L4 tp1"):
        load_fleet(_write(tmp_path, doc), fc.scenario(), fc.table())


def test_interactive_on_spot_in_layout(tmp_path: Path) -> None:
    doc = {
        "nodes": [{"zone": "z1", "gpu": "H100", "purchase": "spot", "nodes": 1}],
        "layout": [
            {
                "workload": "chat",
                "zone": "z1",
                "gpu": "H100",
                "tp": 2,
                "replicas": 1,
                "purchase": "spot",
            }
        ],
    }
    with pytest.raises(InputError, match="interactive pools never run on spot"):
        load_fleet(_write(tmp_path, doc), fc.scenario(), fc.table())


def test_unknown_key_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nodes\[0\].count: unknown key `count`"):
        load_fleet(
            _write(tmp_path, {"nodes": [{"zone": "z1", "gpu": "H100", "count": 1}]}),
            fc.scenario(),
            fc.table(),
        )
    with pytest.raises(InputError, match="file not found"):
        load_fleet(tmp_path / "nope.yaml", fc.scenario(), fc.table())


def test_plan_of_another_scenario(tmp_path: Path) -> None:
    plan = fc.plan()
    allocs = (plan.allocations[0].model_copy(update={"workload": "chatt"}),)
    path = tmp_path / "plan.json"
    path.write_text(
        plan.model_copy(update={"allocations": allocs}).model_dump_json(), encoding="utf-8"
    )
    with pytest.raises(InputError, match=r"allocations\[0\].workload: unknown workload `chatt`"):
        load_fleet(path, fc.scenario(), fc.table())


def test_idle_gpus_are_noted(tmp_path: Path) -> None:
    # 4 L4 GPUs in z1: chat's L4 tp1 (0.3 rps) fits, so the greedy layout uses them all;
    # with an explicit layout of 1 replica, 3 GPUs stay idle.
    nodes = [{"zone": "z1", "gpu": "L4", "purchase": "on_demand", "nodes": 1}]
    fleet = load_fleet(_write(tmp_path, {"nodes": nodes}), fc.scenario(), fc.table())
    assert fleet.notes == ()
    assert [(g.workload, g.replicas) for g in fleet.replicas] == [("chat", 4)]
    layout = [{"workload": "chat", "zone": "z1", "gpu": "L4", "tp": 1, "replicas": 1}]
    fleet = load_fleet(
        _write(tmp_path, {"nodes": nodes, "layout": layout}), fc.scenario(), fc.table()
    )
    assert fleet.notes == ("3 of 4 L4 on_demand GPUs in z1 carry no replica",)


def test_plan_status_is_noted(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    plan = fc.plan().model_copy(update={"status": SolveStatus.infeasible})
    path.write_text(plan.model_dump_json(), encoding="utf-8")
    fleet = load_fleet(path, fc.scenario(), fc.table())
    assert fleet.notes == ("the plan's status is infeasible: it is not a complete fleet",)


def test_inventory_nodes_named_by_instance_type(tmp_path: Path) -> None:
    """``check --fleet`` inventories may name nodes as the provider sells them: p5.48xlarge
    holds 8 H100-SXM (the built-in price table), so two of them are 16 GPUs."""
    from inputs import demo_scenario
    from models.loader import load_scenario

    demo = load_scenario(demo_scenario())
    doc = {"nodes": [{"zone": "use1-az1", "instance_type": "p5.48xlarge", "nodes": 2}]}
    fleet = load_fleet(_write(tmp_path, doc), demo)
    assert [(n.gpu, n.nodes, n.gpus) for n in fleet.nodes] == [("H100-SXM", 2, 16)]
    doc["nodes"][0]["instance_type"] = "p5.48xlarg"
    with pytest.raises(InputError) as err:
        load_fleet(_write(tmp_path, doc), demo)
    assert "nodes[0].instance_type: unknown instance type `p5.48xlarg`" in err.value.render()


def test_owned_nodes_carry_replicas_as_reserved_ones_do(tmp_path: Path) -> None:
    """Owned nodes are paid for: the greedy layout fills them first. They carried no replica
    (`check --fleet` said every workload FAILS -100 % on an owned on-prem fleet)."""
    nodes = [{"zone": "z1", "gpu": "H100", "nodes": 2}, {"zone": "z2", "gpu": "H100", "nodes": 1}]
    reserved = load_fleet(_write(tmp_path, {"nodes": nodes}, "r.yaml"), fc.scenario(), fc.table())
    owned_doc = {"nodes": [{**n, "purchase": "owned"} for n in nodes]}
    owned = load_fleet(_write(tmp_path, owned_doc, "o.yaml"), fc.scenario(), fc.table())
    placed = sum(g.replicas * g.tp for g in owned.replicas)
    assert placed == 24  # every owned GPU carries a replica
    assert {g.purchase for g in owned.replicas} == {PurchaseKind.owned}
    assert [(g.workload, g.zone, g.tp, g.replicas) for g in owned.replicas] == [
        (g.workload, g.zone, g.tp, g.replicas) for g in reserved.replicas]
    assert owned.notes == ()


def test_layout_without_purchase_fills_owned_nodes_first(tmp_path: Path) -> None:
    """A layout line without `purchase` said "0 GPUs left" on owned nodes; it fills owned, then
    reserved."""
    doc = {
        "nodes": [
            {"zone": "z1", "gpu": "H100", "nodes": 1},
            {"zone": "z1", "gpu": "H100", "purchase": "owned", "nodes": 1},
        ],
        "layout": [{"workload": "chat", "zone": "z1", "gpu": "H100", "tp": 2, "replicas": 6}],
    }
    fleet = load_fleet(_write(tmp_path, doc), fc.scenario(), fc.table())
    assert [(g.purchase, g.replicas) for g in fleet.replicas] == [
        (PurchaseKind.owned, 4), (R, 2)]


def test_inventory_gpus_named_as_a_scenario_takes_them(tmp_path: Path) -> None:
    """The README says GPUs may be named H100 or p5.48xlarge; the inventory refused both."""
    from inputs import demo_scenario
    from models.loader import load_scenario

    demo = load_scenario(demo_scenario())
    doc = {
        "nodes": [
            {"zone": "use1-az1", "gpu": "H100", "nodes": 1},
            {"zone": "use1-az2", "gpu": "p5.48xlarge", "nodes": 2},
        ],
        "layout": [{"workload": "chat", "zone": "use1-az1", "gpu": "h100-sxm5", "tp": 2,
                    "replicas": 4}],
    }
    fleet = load_fleet(_write(tmp_path, doc), demo)
    assert [(n.zone, n.gpu, n.gpus) for n in fleet.nodes] == [
        ("use1-az1", "H100-SXM", 8), ("use1-az2", "H100-SXM", 16)]
    assert [(g.zone, g.gpu, g.tp, g.replicas) for g in fleet.replicas] == [
        ("use1-az1", "H100-SXM", 2, 4)]
    doc["nodes"][0]["gpu"] = "H10"
    with pytest.raises(InputError, match=r"nodes\[0\]\.gpu: unknown GPU `H10`"):
        load_fleet(_write(tmp_path, doc), demo)


def test_a_scenario_inventory_line_reads_as_a_fleet_line(tmp_path: Path) -> None:
    """A scenario's inventory said `kind:` where a fleet inventory says `purchase:`; a line
    copied from one to the other was "unknown key `kind`". Both read `kind` as `purchase`."""
    nodes = [{"zone": "z1", "gpu": "H100", "nodes": 2, "kind": "owned"}]
    fleet = load_fleet(_write(tmp_path, {"nodes": nodes}), fc.scenario(), fc.table())
    assert {(n.zone, n.purchase) for n in fleet.nodes} == {("z1", PurchaseKind.owned)}
    nodes[0]["purchase"] = "reserved"
    with pytest.raises(InputError, match="give `purchase` only"):
        load_fleet(_write(tmp_path, {"nodes": nodes}), fc.scenario(), fc.table())
