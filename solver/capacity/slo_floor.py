"""The fastest a workload's latencies get on any configuration it may use: what an SLO that no
configuration holds is short by.

When every configuration of a workload is rejected, an infeasible plan can only say "no
configuration fits"; these figures name the SLO that cannot be met and by how much. They are the
no-load TTFT P95, decode step and end-to-end time of :func:`solver.capacity.replica.load_point` at
rate 0, the figures ``fleetplan capacity --explain`` gives per configuration.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.scenario import Scenario
from models.workload import Workload
from solver.capacity.memory import tp_degrees
from solver.capacity.perf import workload_perf
from solver.capacity.replica import load_point, load_profile


@dataclass(frozen=True)
class Fastest:
    """The lowest no-load latency over the configurations, and the configuration giving it."""

    ms: float
    gpu: str
    tp: int


@dataclass(frozen=True)
class SloFloor:
    """A workload's fastest no-load TTFT P95, decode step and end-to-end time of a P95 answer
    over the configurations that hold the model (``None``: no allowed GPU that a zone sells
    holds it at any TP)."""

    ttft: Fastest | None
    tpot: Fastest | None
    e2e: Fastest | None = None
    """The least no-load :attr:`~solver.capacity.replica.LoadPoint.e2e_p95_ms` (TTFT and
    per-token time of one configuration, not the two fastest apart)."""


def slo_floor(scenario: Scenario, workload: Workload) -> SloFloor:
    """The fastest TTFT P95, decode step and end-to-end time at no load over the allowed GPUs
    a zone sells, at the TP degrees their nodes hold (a 1-GPU node holds TP1 only, whatever the
    catalog's node)."""
    sold = {o.gpu for z in scenario.zones for o in z.offers}
    allowed = workload.allowed_gpus or tuple(g.name for g in scenario.gpus)
    ttft: Fastest | None = None
    tpot: Fastest | None = None
    e2e: Fastest | None = None
    for name in (n for n in allowed if n in sold):
        gpu = scenario.gpu(name)
        largest = max(scenario.node_sizes(name))  # a replica fits in one node the zones sell
        for tp in (t for t in tp_degrees(gpu) if t <= largest):
            perf = workload_perf(scenario, workload, gpu, tp)
            if isinstance(perf, str):  # the longest request does not fit
                continue
            idle = load_point(load_profile(perf, workload), 0.0)
            if ttft is None or idle.ttft_p95_ms < ttft.ms:
                ttft = Fastest(idle.ttft_p95_ms, name, tp)
            if tpot is None or idle.tpot_p95_ms < tpot.ms:
                tpot = Fastest(idle.tpot_p95_ms, name, tp)
            if e2e is None or idle.e2e_p95_ms < e2e.ms:
                e2e = Fastest(idle.e2e_p95_ms, name, tp)
    return SloFloor(ttft, tpot, e2e)
