"""An infeasible plan whose workload no configuration can serve names the SLO at fault.

The diagnosis (solver.solve.diagnose) sees only that a workload has no candidate and lists its
demand and survival shortfalls, blaming the GPUs; when the cause is an SLO that no allowed
configuration meets even at no load, these shortfalls are its consequences. This puts one
shortfall per such SLO in their place: the SLO, the fastest the latency gets and where, by how
much it misses, and the fix (solver.capacity.slo_floor). ``validate`` warns of the same misses
(:func:`slo_misses`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.common import SolveStatus
from models.scenario import Scenario
from models.units import amount_text
from models.workload import Workload
from solver.capacity.memory import tp_degrees
from solver.capacity.perf import workload_perf
from solver.capacity.slo_floor import Fastest, slo_floor
from solver.outputs.labels import config_label

if TYPE_CHECKING:  # validate's summary reads the misses without the plan's models
    from models.capacity import CapacityTable
    from models.plan import Plan, Shortfall


def _round_up(ms: float) -> float:
    return math.ceil(ms * 10) / 10


#: An SLO below this many milliseconds that seconds would meet reads as given in seconds.
SECONDS_SUSPECT_MS = 100.0


def _in_seconds(slo_ms: float, fastest_ms: float) -> str:
    """The hint that an SLO far below any latency was written in seconds (``ttft_p95_ms: 1.5``
    for 1.5 s), where read as seconds it would be met; else nothing."""
    if slo_ms >= SECONDS_SUSPECT_MS or slo_ms * 1000 < fastest_ms:
        return ""
    return (f"; given in seconds? the field is in milliseconds: {slo_ms:g} s is "
            f"{slo_ms * 1000:g} ms")


@dataclass(frozen=True)
class SloMiss:
    """An SLO that no allowed configuration a zone sells meets even at no load."""

    over_ms: float
    """How far the fastest configuration is above the SLO [ms]."""
    message: str
    """The SLO, the fastest figure and where, and the fix, in one sentence."""


def slo_misses(scenario: Scenario, workload: Workload) -> list[SloMiss]:
    """Each SLO of ``workload`` that no allowed configuration a zone sells meets at no load
    (empty when each SLO alone is met somewhere, or nothing holds the model)."""
    floor = slo_floor(scenario, workload)
    out: list[SloMiss] = []

    def missed(what: str, field: str, slo_ms: float, fastest: Fastest | None,
               achieved: str) -> None:
        if fastest is None or fastest.ms <= slo_ms:
            return
        out.append(SloMiss(
            over_ms=fastest.ms - slo_ms,
            message=f"`{workload.name}` cannot meet its {what} SLO ({field} {slo_ms:g} ms): "
                    f"{achieved} is {fastest.ms:,.2f} ms even at no load "
                    f"({config_label(fastest.gpu, fastest.tp)}), {fastest.ms - slo_ms:,.2f} ms "
                    f"over — raise {field} to at least {_round_up(fastest.ms):g} ms or allow "
                    f"faster GPUs (allowed_gpus, zone offers){_in_seconds(slo_ms, fastest.ms)}"))

    missed("per-token", "slo.tpot_p95_ms", workload.tpot_slo_ms, floor.tpot,
           "the fastest decode step of any allowed configuration")
    missed("TTFT", "slo.ttft_p95_ms", workload.slo.ttft_p95_ms, floor.ttft,
           "the fastest time to first token of a P95 prompt on any allowed configuration")
    if workload.slo.e2e_p95_ms is not None:
        out_p95 = workload.output_tokens.p95
        missed("end-to-end", "slo.e2e_p95_ms", workload.slo.e2e_p95_ms, floor.e2e,
               f"the fastest end-to-end time of a P95 answer ({out_p95:,} tokens: TTFT + "
               f"{out_p95 - 1:,} × per-token time) on any allowed configuration")
    return out


def fit_miss(scenario: Scenario, workload: Workload) -> str | None:
    """Why no allowed GPU that a zone sells holds ``workload``'s model at its precision at any
    TP its nodes hold (each GPU's reason at its largest such TP), else ``None``: an infeasible
    plan then says only that no configuration fits, over periods once per shortfall, and not
    which model (a new user's migration to DeepSeek-V3 BF16: 15 lines, the migration unnamed)."""
    if slo_floor(scenario, workload).ttft is not None:
        return None
    sold = {o.gpu for z in scenario.zones for o in z.offers}
    allowed = workload.allowed_gpus or tuple(g.name for g in scenario.gpus)
    reasons = []
    for name in (n for n in allowed if n in sold):
        largest = max(scenario.node_sizes(name))
        tp = max(t for t in tp_degrees(scenario.gpu(name)) if t <= largest)
        reason = workload_perf(scenario, workload, scenario.gpu(name), tp)
        if isinstance(reason, str):
            reasons.append(f"{config_label(name, tp)}: {reason}")
    if not reasons:
        return None  # no allowed GPU is sold: validate says so where it lists the offers
    return (f"`{workload.name}` runs {workload.model} {workload.precision.value.upper()} and no "
            f"GPU it "
            f"may use that a zone sells holds it at any TP ({'; '.join(reasons)}) — allow a GPU "
            "with more memory, or give a lower precision or a smaller model")


def slo_shortfalls(scenario: Scenario, workload: Workload) -> list[Shortfall]:
    """A shortfall per SLO of ``workload`` that no allowed configuration a zone sells meets at
    no load (:func:`slo_misses`), as an infeasible plan's diagnosis lists it."""
    # here, not at the top: validate imports this module at start-up and never builds a plan
    from models.plan import Shortfall

    return [Shortfall(requirement="slo", workload=workload.name, amount=m.over_ms, unit="ms",
                      message=m.message) for m in slo_misses(scenario, workload)]


def with_slo_causes(plan: Plan, scenario: Scenario, table: CapacityTable) -> Plan:
    """``plan`` (infeasible) with the shortfalls of each workload that no sold configuration
    serves because of an SLO replaced by that SLO's shortfall; other plans unchanged. A row
    whose TP no node of its GPU the zones sell holds serves nothing."""
    if plan.status is not SolveStatus.infeasible or not plan.diagnosis:
        return plan
    sold = {o.gpu for z in scenario.zones for o in z.offers}
    causes: dict[str, list[Shortfall]] = {}
    for w in scenario.workloads:
        if any(d.workload == w.name for d in plan.diagnosis) and not any(
                r.gpu in sold and r.tp <= max(scenario.node_sizes(r.gpu))
                for r in table.for_workload(w.name)):
            found = slo_shortfalls(scenario, w)
            if found:
                causes[w.name] = found
    if not causes:
        return plan
    rest = [d for d in plan.diagnosis if d.workload not in causes]
    shown: list[Shortfall] = []
    for name, found in causes.items():
        own = [d for d in plan.diagnosis if d.workload == name]
        last = found[-1]
        if len(own) == 1 and own[0].requirement == "demand" and own[0].slice is None:
            # the one whole-demand line of a workload nothing serves (solver.solve.diagnose)
            then = (f"so all of its demand ({amount_text(own[0].amount, 4)} {own[0].unit}) "
                    "is short")
        else:
            then = (f"the {len(own)} demand and survival shortfall(s) of `{name}` follow from "
                    "this and are not listed")
        found[-1] = last.model_copy(update={"message": f"{last.message}; {then}"})
        shown += found
    return plan.model_copy(update={"diagnosis": (*shown, *rest)})
