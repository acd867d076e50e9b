"""The benchmark scenario generator: deterministic, valid, and of the stated sizes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.generate import (  # noqa: E402
    RESERVED_DISCOUNT,
    SIZES,
    SPOT_CAP_VS_ON_DEMAND,
    SizeSpec,
    generate_scenario,
    write_scenarios,
)
from models.common import Survivability, WorkloadClass  # noqa: E402
from models.loader import check_references, load_scenario  # noqa: E402
from models.offers import AssumedFigure, Offer, ReservedTerms, Zone  # noqa: E402
from models.scenario import Scenario  # noqa: E402
from solver.capacity.table import build_capacity_table  # noqa: E402
from solver.program.data import build_program_data  # noqa: E402


def test_the_same_seed_gives_the_same_scenario_and_another_seed_another() -> None:
    first = generate_scenario("small", seed=3)
    again = generate_scenario("small", seed=3)
    assert first.model_dump_json() == again.model_dump_json()
    assert generate_scenario("small", seed=4).model_dump_json() != first.model_dump_json()


@pytest.mark.parametrize("size", ["small", "medium", "large"])
def test_each_size_validates_and_has_its_stated_dimensions(size: str) -> None:
    spec = SIZES[size]
    scen = generate_scenario(size)
    # It survives a round trip through the schema and the loader's consistency tier.
    assert Scenario.model_validate_json(scen.model_dump_json(by_alias=True)) == scen
    assert check_references(scen, size) == []
    assert len(scen.workloads) == spec.workloads
    assert len(scen.zones) == spec.zones
    offered = {o.gpu for z in scen.zones for o in z.offers}
    assert len(offered) == spec.gpu_types
    assert all(len(z.offers) == spec.gpu_types for z in scen.zones)
    table = build_capacity_table(scen)
    data = build_program_data(scen, table)
    # 24 slices reach the program: the noisy hourly shapes leave no two hours to merge.
    assert len(data.slices) == spec.slices == 24
    # Every workload can run on some GPU type a zone sells.
    assert {c.workload for c in data.candidates if c.gpu in offered} == {
        w.name for w in scen.workloads}


def test_the_large_size_is_at_least_what_issue_4_asks() -> None:
    spec = SIZES["large"]
    assert (spec.workloads, spec.gpu_types, spec.zones, spec.slices) >= (12, 8, 6, 24)
    assert min(spec.workloads, spec.gpu_types, spec.zones) >= 6


def test_workloads_mix_classes_survivability_and_a_day_night_swing() -> None:
    scen = generate_scenario("medium")
    assert {w.workload_class for w in scen.workloads} == set(WorkloadClass)
    assert {w.survivability for w in scen.workloads} == set(Survivability)
    assert all(w.survivability is Survivability.none for w in scen.workloads
               if w.workload_class is WorkloadClass.batch)
    for w in scen.workloads:
        if w.arrival is not None:
            shape = w.arrival.hourly_shape
            assert max(shape) == 1.0
            assert min(shape) < 0.6  # the night trough lies well below the peak


def test_prices_follow_the_stated_rules_and_stock_is_whole_nodes() -> None:
    scen = generate_scenario("large")
    node = {g.name: g.gpus_per_node for g in scen.gpus}
    on_demand_by_region: dict[tuple[str, str], set[float]] = {}
    spot_prices: dict[str, set[float]] = {}
    for z in scen.zones:
        for o in z.offers:
            assert o.reserved is not None and o.on_demand is not None and o.spot is not None
            od = o.on_demand.price_per_gpu_hour
            assert o.reserved.price_per_gpu_hour == pytest.approx(od * (1 - RESERVED_DISCOUNT),
                                                                  abs=1e-4)
            assert o.spot.price_per_gpu_hour <= SPOT_CAP_VS_ON_DEMAND * od + 1e-4
            for stock in (o.reserved.stock_gpus, o.on_demand.stock_gpus, o.spot.stock_gpus):
                assert stock % node[o.gpu] == 0
            on_demand_by_region.setdefault((z.region, o.gpu), set()).add(od)
            spot_prices.setdefault(o.gpu, set()).add(o.spot.price_per_gpu_hour)
    # On-demand is priced per region (as AWS does); spot differs from zone to zone.
    assert all(len(prices) == 1 for prices in on_demand_by_region.values())
    assert all(len(prices) > 1 for prices in spot_prices.values())


def test_sizes_the_templates_cannot_fill_are_refused() -> None:
    with pytest.raises(KeyError):
        generate_scenario("huge")
    with pytest.raises(ValueError, match="workloads must lie"):
        generate_scenario(SizeSpec(workloads=40, gpu_types=3, zones=2))
    with pytest.raises(ValueError, match="24 hourly slices"):
        generate_scenario(SizeSpec(workloads=3, gpu_types=3, zones=2, slices=6))


def _given(zones: tuple[Zone, ...]) -> tuple[Zone, ...]:
    """The zones without the loader's record of which figures were left to defaults (the
    assumed figures; a reserved quote's lead time, which the generated quotes do not give)."""
    def unlabelled(o: Offer) -> Offer:
        reserved = o.reserved
        if isinstance(reserved, ReservedTerms):
            reserved = reserved.model_copy(update={"lead_time_assumed": False})
        return o.model_copy(update={"assumed": (), "reserved": reserved})

    return tuple(z.model_copy(update={"offers": tuple(unlabelled(o) for o in z.offers)})
                 for z in zones)


def test_written_scenario_files_load_back_to_the_same_zones_workloads_and_policy(
    tmp_path: Path,
) -> None:
    paths = write_scenarios(tmp_path, seed=1)
    assert [p.name for p in paths] == [f"bench-{size}-seed1.yaml" for size in SIZES]
    for size, path in zip(SIZES, paths, strict=True):
        made = generate_scenario(size, seed=1)
        loaded = load_scenario(path)
        assert (loaded.name, _given(loaded.zones), loaded.workloads, loaded.policy) == (
            made.name, made.zones, made.workloads, made.policy)
        # the file leaves the spot interruption rate to its default: loaded, it says assumed
        assert all(AssumedFigure.spot_interruption_rate in o.assumed
                   for z in loaded.zones for o in z.offers if o.spot is not None)
        # The file leans on the built-in catalog: the generated GPU types keep their figures.
        assert all(loaded.gpu(g.name) == g for g in made.gpus)


def test_a_scale_multiplies_demand_and_stock_and_keeps_everything_else() -> None:
    one = generate_scenario("medium", seed=2)
    many = generate_scenario("medium", seed=2, scale=25)
    assert many.name == "bench-medium-x25-seed2" and one.name == "bench-medium-seed2"
    for a, b in zip(one.workloads, many.workloads, strict=True):
        assert (a.name, a.model, a.slo, a.survivability) == (b.name, b.model, b.slo,
                                                               b.survivability)
        if a.arrival is not None:
            assert b.arrival is not None
            assert b.arrival.peak_rps == pytest.approx(25 * a.arrival.peak_rps)
            assert b.arrival.hourly_shape == a.arrival.hourly_shape
        else:
            assert a.batch is not None and b.batch is not None
            # the volume is drawn as a rate, rounded to whole requests after scaling
            assert b.batch.daily_requests == pytest.approx(25 * a.batch.daily_requests, abs=25)
            assert b.batch.window_hours == a.batch.window_hours
    for za, zb in zip(one.zones, many.zones, strict=True):
        for oa, ob in zip(za.offers, zb.offers, strict=True):
            assert oa.reserved is not None and ob.reserved is not None
            assert ob.reserved.price_per_gpu_hour == oa.reserved.price_per_gpu_hour
            assert ob.reserved.stock_gpus == 25 * oa.reserved.stock_gpus
            assert ob.reserved.stock_gpus % oa.gpus_per_node == 0


def test_a_scale_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="scale"):
        generate_scenario("small", scale=0)
