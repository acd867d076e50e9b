"""Hand-made plan, scenario and capacity table for the procurement-output tests, and a tiny
evaluator for the workbook's formulas (so the cost check runs without a spreadsheet program).

The plan (two slices: ``night`` hours 0-11, ``day`` hours 12-23; 730 h/month):

- z1 H100-SXM reserved: 1 node × 8 GPUs × 2.50 $/GPU-h × 730 h = 14,600 $/month
- z2 H100-SXM reserved: 1 node × 8 GPUs × 2.50 × 730             = 14,600
- z1 H100-SXM on-demand, day slice: 1 node × 8 × 4.00 × 365 h   = 11,680  (12 h/day = 730 / 2)
- total                                                            40,880 $/month

Tokens: chat 2.0e9 + hyperlink workload 0.5e9 = 2.5e9 tokens/month → 40,880 / 2,500 = 16.352 $/Mtok.
"""

from __future__ import annotations

import ast
import datetime as dt
import operator
import re
from collections.abc import Callable
from typing import Any

from models.capacity import CapacityRow, CapacityTable
from models.catalog import GpuType, LlmSpec
from models.common import CapacitySource, Precision, PurchaseKind, Survivability, WorkloadClass
from models.measured import MeasuredCapacity
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
    WorkloadCost,
)
from models.policy import Policy, TimeBlock
from models.scenario import Scenario
from models.workload import Arrival, Slo, TokenPercentiles, Workload

EVIL = '=HYPERLINK("http://x","y")'
TOTAL_COST = 40880.0  # 14600 + 14600 + 11680


def make_scenario() -> Scenario:
    """Two zones of H100-SXM (z1 also sells spot), one L4 offer, two workloads."""
    h100 = GpuType(name="H100-SXM", memory_gib=80, hbm_bandwidth_gb_per_s=3350, bf16_tflops=989,
                   fp8_tflops=1979, link_bandwidth_gb_per_s=450, gpus_per_node=8,
                   precisions=(Precision.bf16, Precision.fp8), source="NVIDIA datasheet")
    l4 = GpuType(name="L4", memory_gib=24, hbm_bandwidth_gb_per_s=300, bf16_tflops=121,
                 link_bandwidth_gb_per_s=32, gpus_per_node=8, source="NVIDIA datasheet")
    model = LlmSpec(name="llama-8b", layers=32, hidden_size=4096, attention_heads=32, kv_heads=8,
                    head_dim=128, ffn_size=14336, vocab_size=128256, total_params_b=8.0,
                    active_params_b=8.0, max_context_tokens=131072, weights_digest="sha256:aaa",
                    source="HF config")
    z1 = Zone(id="z1", region="r1", offers=(
        Offer(gpu="H100-SXM", instance_type="p5.48xlarge",
              reserved=ReservedTerms(price_per_gpu_hour=2.5, stock_gpus=64, commitment_months=12,
                                     lead_time_weeks=6),
              on_demand=OnDemandTerms(price_per_gpu_hour=4.0, stock_gpus=32),
              spot=SpotTerms(price_per_gpu_hour=1.5, stock_gpus=16), price_source="test table"),
        Offer(gpu="L4", instance_type="g6.48xlarge",
              on_demand=OnDemandTerms(price_per_gpu_hour=0.9, stock_gpus=64)),
    ))
    z2 = Zone(id="z2", region="r1", offers=(
        Offer(gpu="H100-SXM", instance_type="p5.48xlarge",
              reserved=ReservedTerms(price_per_gpu_hour=2.5, stock_gpus=64),
              on_demand=OnDemandTerms(price_per_gpu_hour=4.0, stock_gpus=32)),
    ))
    tokens = TokenPercentiles(p50=500, p95=2000, p99=4000)
    out_tokens = TokenPercentiles(p50=200, p95=500, p99=800)
    chat = Workload(name="chat", model="llama-8b", tenant="acme",
                    arrival=Arrival(peak_rps=10.0, hourly_shape=(0.5,) * 12 + (1.0,) * 12),
                    input_tokens=tokens, output_tokens=out_tokens,
                    slo=Slo(ttft_p95_ms=1000, tpot_p95_ms=50),
                    survivability=Survivability.zone_loss)
    evil = Workload(name=EVIL, model="llama-8b", tenant="-team", runtime="vllm-0.6.3",
                    workload_class=WorkloadClass.interactive, arrival=Arrival(peak_rps=2.0),
                    input_tokens=tokens, output_tokens=out_tokens,
                    slo=Slo(ttft_p95_ms=2000, tpot_p95_ms=80))
    measured = MeasuredCapacity(model="llama-8b", model_digest="sha256:aaa", gpu="H100-SXM",
                                runtime="vllm-0.6.3", precision=Precision.bf16, tp=1,
                                workload=EVIL, max_stable_sequences=64, tested_peak_rps=1.0,
                                ttft_p95_ms=900, decode_p95_ms_per_token=40,
                                measured_on=dt.date(2026, 1, 10))
    policy = Policy(time_blocks=(TimeBlock(name="night", hours=tuple(range(12))),
                                 TimeBlock(name="day", hours=tuple(range(12, 24)))),
                    as_of="2026-03-01")
    return Scenario(name="hand-made", description="two zones, two workloads", gpus=(h100, l4),
                    models=(model,), zones=(z1, z2), workloads=(chat, evil), measured=(measured,),
                    policy=policy, sources=("hand-made.yaml",))


def make_table() -> CapacityTable:
    """chat on H100 TP1 (analytic, used), chat on L4 TP1 (not used), EVIL on H100 (measured)."""
    common: dict[str, Any] = dict(model="llama-8b", model_digest="sha256:aaa",
                                  precision=Precision.bf16, tp=1, input_tokens_per_s=1000.0,
                                  output_tokens_per_s=400.0)
    return CapacityTable(rows=(
        CapacityRow(workload="chat", gpu="H100-SXM", runtime="vllm", source=CapacitySource.analytic,
                    max_stable_sequences=128, slo_rps=2.0, ttft_p95_ms=600, tpot_p95_ms=30,
                    headroom=0.4, **common),
        CapacityRow(workload="chat", gpu="L4", runtime="vllm", source=CapacitySource.analytic,
                    max_stable_sequences=16, slo_rps=0.3, ttft_p95_ms=900, tpot_p95_ms=45,
                    headroom=0.1, **common),
        CapacityRow(workload=EVIL, gpu="H100-SXM", runtime="vllm-0.6.3",
                    source=CapacitySource.measured, max_stable_sequences=64, slo_rps=1.0,
                    ttft_p95_ms=900, tpot_p95_ms=40, headroom=0.5, **common),
    ))


def _alloc(workload: str, zone: str, purchase: PurchaseKind, slice_: str | None, replicas: int,
           rate: float, cost: float, source: CapacitySource = CapacitySource.analytic
           ) -> Allocation:
    return Allocation(workload=workload, zone=zone, gpu="H100-SXM", tp=1, purchase=purchase,
                      slice=slice_, replicas=replicas, gpus=replicas, replica_capacity_rps=rate,
                      capacity_source=source, cost_per_month=cost)


def _surv(workload: str, failure: str, slice_: str, cap: float, demand: float) -> SurvivabilityRow:
    return SurvivabilityRow(workload=workload, failure=failure, slice=slice_, capacity_rps=cap,
                            demand_rps=demand, holds=cap >= demand)


def make_plan() -> Plan:
    """The plan of the module docstring."""
    res, od = PurchaseKind.reserved, PurchaseKind.on_demand
    return Plan(
        scenario="hand-made",
        status=SolveStatus.optimal,
        solver=SolverReport(name="highs", seconds=0.5, gap=0.0, bound=40880.0, objective=40880.0),
        cost=Cost(per_month=TOTAL_COST, per_million_tokens=16.352,
                  per_million_output_tokens=81.76, currency="USD"),
        slices=(Slice(name="night", hours=tuple(range(12))),
                Slice(name="day", hours=tuple(range(12, 24)))),
        allocations=(
            _alloc("chat", "z1", res, None, 4, 2.0, 7300.0),  # 4 × 2.5 × 730
            _alloc(EVIL, "z1", res, None, 4, 1.0, 7300.0, CapacitySource.measured),
            _alloc("chat", "z2", res, None, 4, 2.0, 7300.0),
            _alloc("chat", "z1", od, "day", 4, 2.0, 5840.0),  # 4 × 4.0 × 365
        ),
        nodes=(
            NodeCount(zone="z2", gpu="H100-SXM", purchase=res, slice=None, nodes=1, gpus=8,
                      instance_type="p5.48xlarge", price_per_gpu_hour=2.5, hours_per_month=730,
                      cost_per_month=14600.0),
            NodeCount(zone="z1", gpu="H100-SXM", purchase=od, slice="day", nodes=1, gpus=8,
                      instance_type="p5.48xlarge", price_per_gpu_hour=4.0, hours_per_month=365,
                      cost_per_month=11680.0),
            NodeCount(zone="z1", gpu="H100-SXM", purchase=res, slice=None, nodes=1, gpus=8,
                      instance_type="p5.48xlarge", price_per_gpu_hour=2.5, hours_per_month=730,
                      cost_per_month=14600.0),
        ),
        survivability=(
            _surv("chat", "none", "night", 16.0, 5.0),
            _surv("chat", "none", "day", 24.0, 10.0),
            _surv("chat", "zone:z1", "night", 8.0, 5.0),
            _surv("chat", "zone:z1", "day", 8.0, 10.0),  # fails: margin (8 − 10) / 10 = −0.2
            _surv("chat", "zone:z2", "night", 8.0, 5.0),
            _surv("chat", "zone:z2", "day", 16.0, 10.0),
            _surv(EVIL, "none", "night", 4.0, 2.0),
            _surv(EVIL, "none", "day", 4.0, 2.0),
        ),
        workload_costs=(
            WorkloadCost(workload="chat", tenant="acme", cost_per_month=32000.0,
                         tokens_per_month=2.0e9, output_tokens_per_month=4.0e8,
                         per_million_tokens=16.0),
            WorkloadCost(workload=EVIL, tenant="-team", cost_per_month=8880.0,
                         tokens_per_month=0.5e9, output_tokens_per_month=1.0e8,
                         per_million_tokens=17.76),
        ),
        fingerprint="sha256:fingerprint",
    )


# --- a tiny evaluator for the formulas the workbook writes ----------------------------------

_REF = re.compile(r"(?:(?P<sheet>'(?:[^']|'')+'|[A-Za-z_][\w.]*)!)?\$?(?P<col>[A-Z]{1,3})\$?"
                  r"(?P<row>\d+)")
_SUM = re.compile(r"SUM\((?P<range>[^(),]+)\)")
_SUMIFS = re.compile(r'SUMIFS\((?P<sum>[^(),]+),(?P<crit>[^(),]+),"(?P<value>[^"]*)"\)')
_NAME = re.compile(r"(?<![\w'!$.])[A-Za-z_][A-Za-z0-9_.]*(?![\w(!])")
_OPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
}


def _col_index(letters: str) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ord(ch) - 64
    return n


def _arith(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _arith(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_arith(node.left), _arith(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_arith(node.operand)
    raise ValueError(f"unsupported formula part: {ast.dump(node)}")


def _cells(wb: Any, sheet: str, span: str) -> list[tuple[str, str]]:
    """(sheet, cell) of every cell of a range ``'Sheet'!$A$1:$B$2``, row by row."""
    start, end = span.split(":")
    a, b = _REF.fullmatch(start), _REF.fullmatch(end)
    assert a is not None and b is not None
    name = a.group("sheet")
    where = name[1:-1].replace("''", "'") if name else sheet
    out = []
    for r in range(int(a.group("row")), int(b.group("row")) + 1):
        for c in range(_col_index(a.group("col")), _col_index(b.group("col")) + 1):
            out.append((where, f"{wb[where].cell(row=r, column=c).column_letter}{r}"))
    return out


def evaluate(wb: Any, sheet: str, ref: str) -> float:
    """Value of a cell, evaluating +, −, ×, ÷, SUM(range), SUMIFS(range, range, "text"),
    defined names and (cross-sheet) references."""
    cell = wb[sheet][ref]
    value = cell.value
    if cell.data_type != "f":
        if value is None:
            return 0.0
        if not isinstance(value, int | float):
            raise ValueError(f"{sheet}!{ref} holds text {value!r}, not a number")
        return float(value)
    text = str(value)[1:]
    names = wb.defined_names
    text = _NAME.sub(lambda m: names[m.group(0)].attr_text if m.group(0) in names
                     else m.group(0), text)

    def sumifs(m: re.Match[str]) -> str:
        sums, crits = _cells(wb, sheet, m.group("sum")), _cells(wb, sheet, m.group("crit"))
        return repr(sum(evaluate(wb, s_sheet, s_ref) for (s_sheet, s_ref), (c_sheet, c_ref)
                        in zip(sums, crits, strict=True)
                        if wb[c_sheet][c_ref].value == m.group("value")))

    text = _SUMIFS.sub(sumifs, text)

    def sheet_of(match: re.Match[str]) -> str:
        name = match.group("sheet")
        return name[1:-1].replace("''", "'") if name else sheet

    def sum_range(m: re.Match[str]) -> str:
        start, end = m.group("range").split(":")
        a, b = _REF.fullmatch(start), _REF.fullmatch(end)
        assert a is not None and b is not None
        total = 0.0
        for r in range(int(a.group("row")), int(b.group("row")) + 1):
            for c in range(_col_index(a.group("col")), _col_index(b.group("col")) + 1):
                letter = wb[sheet_of(a)].cell(row=r, column=c).column_letter
                total += evaluate(wb, sheet_of(a), f"{letter}{r}")
        return repr(total)

    text = _SUM.sub(sum_range, text)
    text = _REF.sub(lambda m: repr(evaluate(wb, sheet_of(m), m.group("col") + m.group("row"))),
                    text)
    return _arith(ast.parse(text, mode="eval"))
