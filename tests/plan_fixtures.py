"""Hand-made scenarios and capacity tables for the fleet-program tests.

Every figure is chosen so the optimum can be computed by hand; capacity rows carry exact replica
rates (the capacity model is not involved). :func:`h100_scenario_yaml` writes small scenario files
for the tests that plan and replay through the capacity model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from models.capacity import CapacityRow, CapacityTable
from models.catalog import GpuType, LlmSpec
from models.common import CapacitySource, Precision, PurchaseKind
from models.offers import Offer, OnDemandTerms, ReservedTerms, SpotTerms, Zone
from models.policy import Policy, TimeBlock
from models.scenario import Scenario
from models.workload import Workload
from solver.program.build import build_program
from solver.program.data import build_program_data
from solver.program.keys import ReplicaKey
from solver.program.values import start_from_replicas
from solver.program.variables import Program

MODEL = LlmSpec(
    name="m8b", layers=32, hidden_size=4096, attention_heads=32, kv_heads=8, head_dim=128,
    ffn_size=14336, vocab_size=128256, total_params_b=8.0, active_params_b=8.0,
    max_context_tokens=131072, source="test",
)


def gpu(name: str = "H100", gpus_per_node: int = 8) -> GpuType:
    """A GPU type; only its name and node size matter to the program."""
    return GpuType(name=name, memory_gib=80.0, hbm_bandwidth_gb_per_s=3350, bf16_tflops=989,
                   link_bandwidth_gb_per_s=450, gpus_per_node=gpus_per_node, source="test")


def offer(
    gpu_name: str = "H100",
    reserved: tuple[float, int] | None = None,
    on_demand: tuple[float, int] | None = None,
    spot: tuple[float, int, float] | None = None,
    gpus_per_node: int | None = None,
) -> Offer:
    """An offer from (price per GPU-hour, stock GPUs[, spot interruption rate]) tuples."""
    return Offer(
        gpu=gpu_name,
        gpus_per_node=gpus_per_node,
        reserved=None if reserved is None else ReservedTerms(
            price_per_gpu_hour=reserved[0], stock_gpus=reserved[1]),
        on_demand=None if on_demand is None else OnDemandTerms(
            price_per_gpu_hour=on_demand[0], stock_gpus=on_demand[1]),
        spot=None if spot is None else SpotTerms(
            price_per_gpu_hour=spot[0], stock_gpus=spot[1], interruption_rate_per_hour=spot[2]),
    )


def zone(zone_id: str, *offers: Offer, region: str = "r1") -> Zone:
    """A zone selling the given offers."""
    return Zone(id=zone_id, region=region, offers=offers)


def workload(
    name: str = "chat",
    peak_rps: float | None = 20.0,
    shape: Sequence[float] | None = None,
    cls: str = "interactive",
    survivability: str = "none",
    utilization: float | None = None,
    batch: tuple[float, Sequence[int]] | None = None,
    tenant: str = "default",
    tokens: tuple[int, int] = (1000, 200),
) -> Workload:
    """A workload; ``batch`` = (daily requests, window hours) replaces the peak rate."""
    raw: dict[str, Any] = {
        "name": name, "model": "m8b", "class": cls, "tenant": tenant,
        "input_tokens": {"p50": tokens[0], "p95": tokens[0], "p99": tokens[0]},
        "output_tokens": {"p50": tokens[1], "p95": tokens[1], "p99": tokens[1]},
        "slo": {"ttft_p95_ms": 1000, "tpot_p95_ms": 50},
        "survivability": survivability,
        "target_utilization": utilization,
    }
    if batch is not None:
        raw["batch"] = {"daily_requests": batch[0], "window_hours": list(batch[1])}
    else:
        arrival: dict[str, Any] = {"peak_rps": peak_rps}
        if shape is not None:
            arrival["hourly_shape"] = list(shape)
        raw["arrival"] = arrival
    return Workload.model_validate(raw)


def blocks(*spec: tuple[str, Sequence[int]]) -> tuple[TimeBlock, ...]:
    """Time blocks from (name, hours) pairs."""
    return tuple(TimeBlock(name=n, hours=tuple(h)) for n, h in spec)


ALL_DAY = blocks(("day", range(24)))


def scenario(
    workloads: Sequence[Workload],
    zones: Sequence[Zone],
    gpus: Sequence[GpuType] = (),
    time_blocks: tuple[TimeBlock, ...] = ALL_DAY,
    budget: float | None = None,
    failure_utilization: float = 1.0,
    name: str = "hand",
) -> Scenario:
    """A resolved scenario from hand-made parts (GPU types default to those the zones sell)."""
    if not gpus:
        names = sorted({o.gpu for z in zones for o in z.offers})
        gpus = [gpu(n) for n in names]
    return Scenario(
        name=name, gpus=tuple(gpus), models=(MODEL,), zones=tuple(zones),
        workloads=tuple(workloads),
        policy=Policy(time_blocks=time_blocks, monthly_budget=budget,
                      failure_utilization=failure_utilization),
    )


def row(
    workload_name: str, gpu_name: str, tp: int, slo_rps: float,
    source: CapacitySource = CapacitySource.measured,
) -> CapacityRow:
    """A capacity row with an exact SLO-holding rate."""
    return CapacityRow(
        workload=workload_name, model="m8b", gpu=gpu_name, runtime="vllm",
        precision=Precision.bf16, tp=tp, source=source, max_stable_sequences=64, slo_rps=slo_rps,
        input_tokens_per_s=slo_rps * 1000, output_tokens_per_s=slo_rps * 200, ttft_p95_ms=500.0,
        tpot_p95_ms=25.0, headroom=0.5,
    )


def table(*rows: CapacityRow) -> CapacityTable:
    """A capacity table of the given rows."""
    return CapacityTable(rows=tuple(rows))


def three_blocks() -> Program:
    """One pool over three 8-hour blocks at 10, 30 and 20 req/s; a 1-GPU replica holds 10 at
    utilization 1. Reserved 2.0 per GPU-hour × 730 h = 1,460 per replica-month; on-demand
    3.0 × 243.3 h = 730 per replica and block. Optimum: 1 reserved + on-demand 0, 2, 1 =
    1,460 + 3 × 730 = 3,650."""
    shape = [1 / 3] * 8 + [1.0] * 8 + [2 / 3] * 8
    sc = scenario([workload("w", 30.0, utilization=1.0, shape=shape)],
                  [zone("z", offer(reserved=(2.0, 64), on_demand=(3.0, 64), gpus_per_node=1))],
                  time_blocks=blocks(("a", range(8)), ("b", range(8, 16)), ("c", range(16, 24))))
    data = build_program_data(sc, table(row("w", "H100", 1, 10.0)))
    assert [s.name for s in data.slices] == ["a", "b", "c"]
    return build_program(data)


def shared_two_node_fleet(
    time_blocks: tuple[TimeBlock, ...] = ALL_DAY, shape: Sequence[float] | None = None,
) -> tuple[Scenario, CapacityTable]:
    """Shared nodes (the default), one zone-loss pool of 5 req/s at its peak in three zones, each
    selling a "big" 8-GPU node (1.0 $/GPU-h, 5,840 $/month; one-GPU replicas of 2 req/s, 16 per
    node) and a "small" 1-GPU node (3.0 $/GPU-h, 2,190 $/month, 1 req/s). Optimum: a big node
    in each of two zones, 11,680 $/month (tests/test_program.py works it out); the LP relaxation
    without the two-nodes cut holds half a big node in each zone, 8,760."""
    zones = [zone(z, offer("BIG", reserved=(1.0, 64)),
                  offer("SMALL", reserved=(3.0, 64), gpus_per_node=1)) for z in ("a", "b", "c")]
    sc = scenario([workload("p", 5.0, shape=shape, utilization=1.0, survivability="zone_loss")],
                  zones, time_blocks=time_blocks)
    assert sc.policy.share_nodes
    return sc, table(row("p", "BIG", 1, 2.0), row("p", "SMALL", 1, 1.0))


def fleet(program: Program, reserved: int, elastic: dict[str, int]) -> dict[str, float]:
    """Values of :func:`three_blocks`' fleet of ``reserved`` replicas and ``elastic`` on-demand
    replicas per block, checked against every row (``start_from_replicas``)."""
    x: dict[ReplicaKey, int] = {}
    if reserved:
        x[ReplicaKey("w", "H100", 1, "z", PurchaseKind.reserved, None)] = reserved
    x.update({ReplicaKey("w", "H100", 1, "z", PurchaseKind.on_demand, s): n
              for s, n in elastic.items() if n})
    values = start_from_replicas(program, x)
    assert values is not None, "the fleet breaks a row of the program"
    return values


def chat_8b(**over: Any) -> dict[str, Any]:
    """A workload entry of a scenario file: Llama-3.1-8B BF16 at 12 req/s, 1,000 input and 200
    output tokens (every percentile), SLO 500 ms TTFT / 60 ms per token; ``over`` replaces
    fields (``name``, ``arrival``, ``survivability``…)."""
    return {"name": "chat", "model": "Llama-3.1-8B", "precision": "bf16",
            "arrival": {"peak_rps": 12},
            "input_tokens": {"p50": 1000, "p95": 1000, "p99": 1000},
            "output_tokens": {"p50": 200, "p95": 200, "p99": 200},
            "slo": {"ttft_p95_ms": 500, "tpot_p95_ms": 60}, **over}


def h100_scenario_yaml(name: str, *workloads: dict[str, Any], zones: Sequence[str] = ("zone-a",),
                       gpus_per_node: int = 1, stock_gpus: int = 64) -> str:
    """A scenario file (YAML) selling H100-SXM on demand at 1.00 per GPU-hour, ``stock_gpus``
    in nodes of ``gpus_per_node``, in each of ``zones`` (one region), one all-day slice, and
    ``workloads`` (default: :func:`chat_8b`) — the replay and re-plan tests' scenarios, which
    differ in node size, zones and workloads for what each tests."""
    offer = {"gpu": "H100-SXM", "gpus_per_node": gpus_per_node,
             "on_demand": {"price_per_gpu_hour": 1.00, "stock_gpus": stock_gpus}}
    return yaml.safe_dump({
        "name": name,
        "zones": [{"id": z, "region": "region-1", "offers": [offer]} for z in zones],
        "workloads": list(workloads or (chat_8b(),)),
        "policy": {"time_blocks": [{"name": "day", "hours": list(range(24))}]},
    }, sort_keys=False)
