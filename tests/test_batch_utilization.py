"""A batch volume's utilization is the work done where it runs (trust-s23 item 2).

A buyer's plan showed "Peak utilization 130.1 %" and capacity headroom −23.2 % on a nightly
batch workload (trust-s22, /tmp/trust22/hand/s18nospot): the outputs spread the daily volume
evenly over its window and read that against the capacity of each slice, while the program
places the volume anywhere in the window (docs/program.md, C1) and the plan had put most of its
replicas in two of the window's six hours. Not an overload: the volume was 90.0 % of what the
fleet does in the window, the batch's target utilization. Utilization and headroom now read the
work done in each slice (the volume in proportion to the capacity there, as the survivability
rows and the verifier judge it), so every slice with capacity shows the volume ÷ the window's
capacity."""

from __future__ import annotations

import pytest
from procurement_fixtures import make_plan, make_scenario

from models.common import CapacitySource, PurchaseKind, WorkloadClass
from models.plan import Allocation, Plan
from models.scenario import Scenario
from models.workload import BatchVolume, Workload
from solver.cli.plan import workload_lines
from solver.outputs.figures import capacity_headroom, peak_utilization, slice_figures

#: 72,000 requests a day in hours 8-15: four hours of the fixture's night slice (0-11) and four
#: of its day slice (12-23); spread evenly, 72,000 ÷ (8 × 3,600 s) = 2.5 req/s in each
VOLUME = 72_000.0


def _batch_case() -> tuple[Scenario, Plan]:
    sc = make_scenario()
    chat = sc.workloads[0]
    nightly = Workload(name="nightly", model="llama-8b", workload_class=WorkloadClass.batch,
                       batch=BatchVolume(daily_requests=VOLUME, window_hours=tuple(range(8, 16))),
                       input_tokens=chat.input_tokens, output_tokens=chat.output_tokens,
                       slo=chat.slo)
    sc = sc.model_copy(update={"workloads": (*sc.workloads, nightly)})
    plan = make_plan()

    def on_demand(slice_: str, replicas: int) -> Allocation:
        return Allocation(workload="nightly", zone="z1", gpu="H100-SXM", tp=1,
                          purchase=PurchaseKind.on_demand, slice=slice_, replicas=replicas,
                          gpus=replicas, replica_capacity_rps=2.0,
                          capacity_source=CapacitySource.analytic, cost_per_month=0.0)

    # one replica (2 req/s) in the night slice, five (10 req/s) in the day slice
    plan = plan.model_copy(update={"allocations": (*plan.allocations, on_demand("night", 1),
                                                   on_demand("day", 5))})
    return sc, plan


def test_a_batch_volume_moved_between_slices_is_not_shown_above_its_capacity() -> None:
    sc, plan = _batch_case()
    figures = slice_figures(plan, sc)
    night = next(f for f in figures if (f.workload, f.slice) == ("nightly", "night"))
    day = next(f for f in figures if (f.workload, f.slice) == ("nightly", "day"))
    # the even spread, kept as the slice's demand: 2.5 req/s in both
    assert (night.demand_rps, day.demand_rps) == (2.5, 2.5)
    # the fleet does (2 + 10) req/s × 4 window hours × 3,600 s = 172,800 requests in the
    # window; the volume is 72,000 ÷ 172,800 = 41.7 % of it, run in proportion to capacity:
    # night 2 × 0.41667 = 0.8333 req/s, day 10 × 0.41667 = 4.1667 req/s
    assert night.work_rps == pytest.approx(2 * VOLUME / 172_800)
    assert day.work_rps == pytest.approx(10 * VOLUME / 172_800)
    # main read 2.5 ÷ 2 = 125 % in the night slice and a headroom of 2 ÷ 2.5 − 1 = −20 %
    assert peak_utilization(figures, "nightly") == pytest.approx(VOLUME / 172_800)
    assert capacity_headroom(figures, "nightly") == pytest.approx(172_800 / VOLUME - 1)  # 1.4
    # an interactive workload's figures are its demand, as before
    chat_day = next(f for f in figures if (f.workload, f.slice) == ("chat", "day"))
    assert chat_day.work_rps == chat_day.demand_rps == 10.0
    assert peak_utilization(figures, "chat") == pytest.approx(10.0 / 24.0)
    # the plan's terminal table says the same
    line = next(x for x in workload_lines(plan, sc) if x.lstrip().startswith("nightly"))
    assert "41.7%" in line


def test_a_batch_fleet_short_of_its_volume_shows_it_in_every_slice() -> None:
    """Two replicas of 2 req/s in the night slice only: 4 × 4 × 3,600 = 57,600 requests in the
    window against 72,000, so utilization 125 % (an overload, wherever the work runs) and
    headroom −20 %; the day slice, with no capacity, shows no work. Main read 2.5 ÷ 4 =
    62.5 % here (the day slice, without capacity, left out): an overload shown as spare."""
    sc, plan = _batch_case()
    night = next(a for a in plan.allocations if a.workload == "nightly")
    short = (*(a for a in plan.allocations if a.workload != "nightly"),
             night.model_copy(update={"replicas": 2, "gpus": 2}))
    figures = slice_figures(plan.model_copy(update={"allocations": short}), sc)
    assert peak_utilization(figures, "nightly") == pytest.approx(VOLUME / 57_600)
    assert capacity_headroom(figures, "nightly") == pytest.approx(57_600 / VOLUME - 1)
    day = next(f for f in figures if (f.workload, f.slice) == ("nightly", "day"))
    assert day.work_rps == 0.0
