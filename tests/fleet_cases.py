"""Hand-made scenario, capacity table and plan with known answers, shared by the fleet tests.

Two zones (z1, z2) of one region, one GPU type (H100, 8 per node), two slices:
``day`` (hours 8-19) and ``night`` (hours 0-7 and 20-23).

- ``chat``: interactive, zone_loss, peak 12 rps by day and 6 rps at night, target utilization
  0.7; one H100 tp2 replica holds its SLO at 2.0 rps.
- ``summarize``: batch, 36,000 requests a day in hours 0-5 (all in ``night``), target 0.9;
  one H100 tp1 replica holds 1.0 rps.

The plan: 6 reserved chat replicas (tp2) in each zone on 2 reserved nodes per zone, and 3 spot
summarize replicas on 1 spot node in z1 at night.

- chat steady: 12 × 2.0 × 0.7 = 16.8 rps ≥ 12;
  after losing z1: 6 × 2.0 × 1.0 = 12 ≥ 12 (holds exactly);
  after losing one z1 node (holds ⌊8/2⌋ = 4 replicas): (12 − 4) × 2.0 = 16 ≥ 12.
- summarize: 3 × 1.0 × 0.9 × (1 − 0.1 spot interruption) = 2.43 rps over 6 window hours ×
  3600 s = 52,488 requests ≥ 36,000.
- cost: reserved 2 zones × 16 GPUs × 2.0 $/GPU-h × 730 h = 46,720; spot 8 GPUs × 1.5 × (12 h ×
  730 / 24 = 365 h) = 4,380; total 51,100 $/month.
"""

from __future__ import annotations

from models.capacity import CapacityRow, CapacityTable
from models.catalog import GpuType, LlmSpec
from models.common import CapacitySource, Precision, PurchaseKind
from models.offers import Offer, OnDemandTerms, ReservedTerms, SpotTerms, Zone
from models.plan import (
    Allocation,
    Cost,
    NodeCount,
    Plan,
    Slice,
    SolverReport,
    SolveStatus,
    SurvivabilityRow,
)
from models.policy import Policy, TimeBlock
from models.scenario import Scenario
from models.workload import Workload

DAY = TimeBlock(name="day", hours=tuple(range(8, 20)))
NIGHT = TimeBlock(name="night", hours=(*range(0, 8), *range(20, 24)))

H100 = GpuType(
    name="H100",
    memory_gib=79.6,
    hbm_bandwidth_gb_per_s=3350,
    bf16_tflops=989,
    fp8_tflops=1979,
    link_bandwidth_gb_per_s=450,
    gpus_per_node=8,
    precisions=(Precision.bf16, Precision.fp8),
    source="test",
)
L4 = GpuType(
    name="L4",
    memory_gib=22.0,
    hbm_bandwidth_gb_per_s=300,
    bf16_tflops=121,
    link_bandwidth_gb_per_s=32,
    gpus_per_node=4,
    source="test",
)
MODEL = LlmSpec(
    name="llama-8b",
    layers=32,
    hidden_size=4096,
    attention_heads=32,
    kv_heads=8,
    head_dim=128,
    ffn_size=14336,
    vocab_size=128256,
    total_params_b=8.0,
    active_params_b=8.0,
    max_context_tokens=131072,
    source="test",
)


def _offer(reserved_stock: int = 16) -> Offer:
    return Offer(
        gpu="H100",
        reserved=ReservedTerms(price_per_gpu_hour=2.0, stock_gpus=reserved_stock),
        on_demand=OnDemandTerms(price_per_gpu_hour=4.0, stock_gpus=64),
        spot=SpotTerms(price_per_gpu_hour=1.5, stock_gpus=8, interruption_rate_per_hour=0.1),
    )


def _l4_offer() -> Offer:
    return Offer(gpu="L4", on_demand=OnDemandTerms(price_per_gpu_hour=0.8, stock_gpus=32))


CHAT_SHAPE = tuple(1.0 if 8 <= h < 20 else 0.5 for h in range(24))

#: Failure domains of the plan's fleet, in checking order: steady state, each node pool that
#: holds replicas (z1 reserved and spot, z2 reserved), then each zone.
FAILURE_LABELS = (
    "none",
    "node:z1/H100/reserved",
    "node:z1/H100/spot",
    "node:z2/H100/reserved",
    "zone:z1",
    "zone:z2",
)


def scenario(
    *,
    reserved_stock: int = 16,
    budget: float | None = None,
    survivability: str = "zone_loss",
    regions: tuple[str, str] = ("r1", "r1"),
) -> Scenario:
    """The two-zone scenario described in the module docstring."""
    chat = Workload.model_validate(
        {
            "name": "chat",
            "model": "llama-8b",
            "class": "interactive",
            "tenant": "support",
            "arrival": {"peak_rps": 12.0, "hourly_shape": CHAT_SHAPE},
            "input_tokens": {"p50": 1000, "p95": 3000, "p99": 4000},
            "output_tokens": {"p50": 200, "p95": 600, "p99": 1000},
            "slo": {"ttft_p95_ms": 2000, "tpot_p95_ms": 50},
            "survivability": survivability,
        }
    )
    summarize = Workload.model_validate(
        {
            "name": "summarize",
            "model": "llama-8b",
            "class": "batch",
            "tenant": "docs",
            "batch": {"daily_requests": 36000, "window_hours": [0, 1, 2, 3, 4, 5]},
            "input_tokens": {"p50": 2000, "p95": 6000, "p99": 8000},
            "output_tokens": {"p50": 300, "p95": 800, "p99": 1200},
            "slo": {"ttft_p95_ms": 30000, "tpot_p95_ms": 200},
        }
    )
    return Scenario(
        name="two-zones",
        gpus=(H100, L4),
        models=(MODEL,),
        zones=(
            Zone(id="z1", region=regions[0], offers=(_offer(reserved_stock), _l4_offer())),
            Zone(id="z2", region=regions[1], offers=(_offer(reserved_stock),)),
        ),
        workloads=(chat, summarize),
        policy=Policy(time_blocks=(NIGHT, DAY), monthly_budget=budget),
    )


def _row(workload: str, gpu: str, tp: int, slo_rps: float) -> CapacityRow:
    return CapacityRow(
        workload=workload,
        model="llama-8b",
        gpu=gpu,
        runtime="vllm",
        precision=Precision.bf16,
        tp=tp,
        source=CapacitySource.analytic,
        max_stable_sequences=64,
        slo_rps=slo_rps,
        input_tokens_per_s=slo_rps * 1000,
        output_tokens_per_s=slo_rps * 200,
        ttft_p95_ms=1000.0,
        tpot_p95_ms=30.0,
        headroom=0.4,
        cost_per_million_tokens={PurchaseKind.reserved: 1.0 * tp / slo_rps},
    )


def table() -> CapacityTable:
    """chat: H100 tp2 2.0 rps, H100 tp1 0.8 rps, L4 tp1 0.3 rps; summarize: H100 tp1 1.0 rps."""
    return CapacityTable(
        rows=(
            _row("chat", "H100", 2, 2.0),
            _row("chat", "H100", 1, 0.8),
            _row("chat", "L4", 1, 0.3),
            _row("summarize", "H100", 1, 1.0),
        )
    )


def _alloc(
    workload: str,
    zone: str,
    tp: int,
    purchase: PurchaseKind,
    slice_name: str | None,
    replicas: int,
    rps: float,
    cost: float,
) -> Allocation:
    return Allocation(
        workload=workload,
        zone=zone,
        gpu="H100",
        tp=tp,
        purchase=purchase,
        slice=slice_name,
        replicas=replicas,
        gpus=replicas * tp,
        replica_capacity_rps=rps,
        capacity_source=CapacitySource.analytic,
        cost_per_month=cost,
    )


def _nodes(
    zone: str,
    purchase: PurchaseKind,
    slice_name: str | None,
    nodes: int,
    price: float,
    hours: float,
) -> NodeCount:
    return NodeCount(
        zone=zone,
        gpu="H100",
        purchase=purchase,
        slice=slice_name,
        nodes=nodes,
        gpus=nodes * 8,
        price_per_gpu_hour=price,
        hours_per_month=hours,
        cost_per_month=nodes * 8 * price * hours,
    )


def plan() -> Plan:
    """The valid plan described in the module docstring."""
    reserved, spot = PurchaseKind.reserved, PurchaseKind.spot
    survivability = (
        SurvivabilityRow(
            workload="chat",
            failure="none",
            slice="day",
            capacity_rps=16.8,
            demand_rps=12.0,
            holds=True,
        ),
        SurvivabilityRow(
            workload="chat",
            failure="zone:z1",
            slice="day",
            capacity_rps=12.0,
            demand_rps=12.0,
            holds=True,
        ),
        SurvivabilityRow(
            workload="chat",
            failure="node:z1/H100",
            slice="day",
            capacity_rps=16.0,
            demand_rps=12.0,
            holds=True,
        ),
        SurvivabilityRow(
            workload="chat",
            failure="zone:z2",
            slice="night",
            capacity_rps=12.0,
            demand_rps=6.0,
            holds=True,
        ),
    )
    return Plan(
        scenario="two-zones",
        status=SolveStatus.optimal,
        solver=SolverReport(name="hand", seconds=0.0),
        cost=Cost(
            per_month=51100.0,
            per_million_tokens=None,
            per_million_output_tokens=None,
            currency="USD",
        ),
        slices=(Slice(name="night", hours=NIGHT.hours), Slice(name="day", hours=DAY.hours)),
        allocations=(
            _alloc("chat", "z1", 2, reserved, None, 6, 2.0, 12 * 2.0 * 730),
            _alloc("chat", "z2", 2, reserved, None, 6, 2.0, 12 * 2.0 * 730),
            _alloc("summarize", "z1", 1, spot, "night", 3, 1.0, 3 * 1.5 * 365),
        ),
        nodes=(
            _nodes("z1", reserved, None, 2, 2.0, 730.0),
            _nodes("z2", reserved, None, 2, 2.0, 730.0),
            _nodes("z1", spot, "night", 1, 1.5, 365.0),
        ),
        survivability=survivability,
    )
