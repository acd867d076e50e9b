"""Price import from a SkyPilot-format catalog CSV: instance prices → per-GPU offers per zone."""

from __future__ import annotations

from pathlib import Path

import pytest

from inputs import catalog_dir
from models.catalog import GpuType
from models.errors import InputError, Problem
from models.loader import load_catalog
from models.offers import Offer, Zone
from models.prices import REQUIRED_COLUMNS, zones_from_price_table
from models.scenario import PriceTable, ReservedPricing

AWS = catalog_dir() / "prices" / "aws_gpu_prices.csv"
GPUS, _MODELS, _SOURCES = load_catalog()
HEADER = ",".join(["cloud", *REQUIRED_COLUMNS]) + "\n"


def zones(table: PriceTable, path: Path = AWS, gpus: tuple[GpuType, ...] = GPUS) -> list[Zone]:
    return zones_from_price_table(path, table, gpus, "s.yaml", 0)


def offer(found: list[Zone], zone_id: str, gpu: str) -> Offer:
    zone = next(z for z in found if z.id == zone_id)
    return next(o for o in zone.offers if o.gpu == gpu)


def problems(table: PriceTable, path: Path = AWS) -> tuple[Problem, ...]:
    with pytest.raises(InputError) as info:
        zones(table, path)
    return info.value.problems


def test_per_gpu_price_is_instance_price_over_gpu_count() -> None:
    found = zones(PriceTable(path="builtin:aws", zones=("use1-az1",)))
    h100 = offer(found, "use1-az1", "H100-SXM")
    assert h100.instance_type == "p5.48xlarge"
    assert h100.gpus_per_node == 8
    assert h100.on_demand is not None and h100.spot is not None
    assert h100.on_demand.price_per_gpu_hour == pytest.approx(12.29)  # 98.32 / 8
    assert h100.spot.price_per_gpu_hour == pytest.approx(3.79075)  # 30.3260 / 8
    l4 = offer(found, "use1-az1", "L4")
    # The catalog's L4 node is 4 GPUs: g6.12xlarge, not g6.xlarge (1 GPU).
    assert (l4.instance_type, l4.gpus_per_node) == ("g6.12xlarge", 4)
    assert l4.on_demand is not None
    assert l4.on_demand.price_per_gpu_hour == pytest.approx(1.1504)  # 4.6016 / 4


def test_spot_price_is_per_zone_on_demand_per_region() -> None:
    found = zones(PriceTable(path="builtin:aws", zones=("use1-az1", "use1-az2"),
                             gpus=("H100-SXM",)))
    az1, az2 = offer(found, "use1-az1", "H100-SXM"), offer(found, "use1-az2", "H100-SXM")
    assert az1.on_demand is not None and az2.on_demand is not None
    assert az1.on_demand.price_per_gpu_hour == az2.on_demand.price_per_gpu_hour
    assert az2.spot is not None
    assert az2.spot.price_per_gpu_hour == pytest.approx(3.46185)  # 27.6948 / 8
    assert {z.region for z in found} == {"us-east-1"}


def test_missing_spot_price_means_no_spot_offer() -> None:
    found = zones(PriceTable(path="builtin:aws", zones=("use1-az1", "usw2-az2")))
    a100 = offer(found, "use1-az1", "A100-80GB")  # p4de spot blank in use1-az1
    assert a100.spot is None
    assert a100.on_demand is not None
    l4 = offer(found, "usw2-az2", "L4")  # g6 spot blank in usw2-az2
    assert l4.spot is None


def test_reserved_is_a_discount_on_on_demand() -> None:
    table = PriceTable(path="builtin:aws", zones=("use1-az1",), gpus=("H100-SXM",),
                       reserved=ReservedPricing(discount_vs_on_demand=0.4, commitment_months=36,
                                                lead_time_weeks=6))
    h100 = offer(zones(table), "use1-az1", "H100-SXM")
    assert h100.reserved is not None
    assert h100.reserved.price_per_gpu_hour == pytest.approx(7.374)  # 12.29 × (1 − 0.4)
    assert (h100.reserved.commitment_months, h100.reserved.lead_time_weeks) == (36, 6)


def test_no_reserved_pricing_imports_no_reserved_offers() -> None:
    found = zones(PriceTable(path="builtin:aws", zones=("use1-az1",), reserved=None))
    assert all(o.reserved is None for z in found for o in z.offers)


def test_stock_and_terms_come_from_the_table_entry() -> None:
    table = PriceTable(path="builtin:aws", zones=("use1-az1",), gpus=("L4",),
                       stock_gpus={"reserved": 3, "on_demand": 5, "spot": 7},
                       spot_interruption_rate_per_hour=0.2, on_demand_startup_minutes=4)
    l4 = offer(zones(table), "use1-az1", "L4")
    assert l4.reserved is not None and l4.on_demand is not None and l4.spot is not None
    assert (l4.reserved.stock_gpus, l4.on_demand.stock_gpus, l4.spot.stock_gpus) == (3, 5, 7)
    assert l4.spot.interruption_rate_per_hour == 0.2
    assert l4.on_demand.startup_minutes == 4


def test_without_the_catalog_node_size_the_largest_instance_is_taken() -> None:
    # A catalog A10G of 2 GPUs per node: AWS sells 1, 4 or 8 A10Gs, so the 8-GPU g5.48xlarge.
    gpus = tuple(g.model_copy(update={"gpus_per_node": 2}) if g.name == "A10G" else g
                 for g in GPUS)
    a10g = offer(zones(PriceTable(path="builtin:aws", zones=("use1-az1",), gpus=("A10G",)),
                       gpus=gpus), "use1-az1", "A10G")
    assert (a10g.instance_type, a10g.gpus_per_node) == ("g5.48xlarge", 8)
    assert a10g.on_demand is not None
    assert a10g.on_demand.price_per_gpu_hour == pytest.approx(2.036)  # 16.288 / 8


def test_instance_with_an_on_demand_price_is_preferred() -> None:
    # usw2-az3 sells H200 as p5e (no on-demand price) and p5en (84.80/h): p5en is picked.
    h200 = offer(zones(PriceTable(path="builtin:aws", zones=("usw2-az3",), gpus=("H200",))),
                 "usw2-az3", "H200")
    assert h200.instance_type == "p5en.48xlarge"
    assert h200.on_demand is not None
    assert h200.on_demand.price_per_gpu_hour == pytest.approx(10.6)  # 84.80 / 8


def test_spot_only_row_gives_a_spot_only_offer(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text(HEADER + "aws,p5e.48xlarge,H200,8,,16.0,r-1,z-1\n"
                             "aws,g6.12xlarge,L4,4,4.0,,r-1,z-1\n"
                             "aws,x1.large,T4,1,0.5,0.2,r-1,z-1\n", encoding="utf-8")
    found = zones(PriceTable(path=str(path)), path)
    (zone,) = found
    assert [o.gpu for o in zone.offers] == ["H200", "L4"]  # T4 is not in the catalog: skipped
    h200 = offer(found, "z-1", "H200")
    assert h200.on_demand is None and h200.reserved is None  # reserved needs an on-demand price
    assert h200.spot is not None and h200.spot.price_per_gpu_hour == 2.0  # 16 / 8
    l4 = offer(found, "z-1", "L4")
    assert l4.spot is None
    assert l4.reserved is not None and l4.reserved.price_per_gpu_hour == pytest.approx(0.6)
    # 4.0 / 4 = 1.0 on demand; reserved 1.0 × (1 − 0.4) = 0.6


def test_missing_columns(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text("instance_type,accelerator,zone\np5.48xlarge,H100,z-1\n", encoding="utf-8")
    (problem,) = problems(PriceTable(path=str(path)), path)
    assert problem.file == str(path)
    assert problem.location == "header"
    assert problem.message == ("missing columns: accelerator_count, price_ondemand_usd_hr, "
                               "price_spot_usd_hr, region")
    assert "SkyPilot catalog format" in problem.fix


def test_missing_price_table_is_located_in_the_scenario(tmp_path: Path) -> None:
    (problem,) = problems(PriceTable(path="nope.csv"), tmp_path / "nope.csv")
    assert (problem.file, problem.location) == ("s.yaml", "price_tables[0].path")


def test_bad_rows_are_located_by_line(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text(HEADER + "aws,p5.48xlarge,H100,0,98.32,30.0,r-1,z-1\n"
                             "aws,g6.12xlarge,L4,4,cheap,,r-1,z-1\n"
                             "aws,g6.12xlarge,L4,4,4.6,1.9,r-1,\n", encoding="utf-8")
    found = {p.location for p in problems(PriceTable(path=str(path)), path)}
    assert found == {"row 2.accelerator_count", "row 3.price_ondemand_usd_hr", "row 4.zone"}


def test_unknown_gpu_and_zone_filters_suggest_names() -> None:
    table = PriceTable(path="builtin:aws", zones=("usw2az1",), gpus=("H100-SMX",))
    found = {p.location: p for p in problems(table)}
    assert "`usw2-az1`" in found["price_tables[0].zones[0]"].fix
    assert "`H100-SXM`" in found["price_tables[0].gpus[0]"].fix


def test_gpu_filters_take_the_names_people_type() -> None:
    # `H100` is the common name of H100-SXM; p5.48xlarge is an instance of 8 of them.
    for name in ("H100", "h100-sxm5", "p5.48xlarge"):
        found = zones(PriceTable(path="builtin:aws", zones=("use1-az1",), gpus=(name,)))
        assert [o.gpu for z in found for o in z.offers] == ["H100-SXM"], name
    (problem,) = problems(PriceTable(path="builtin:aws", zones=("use1-az1",), gpus=("A100",)))
    assert problem.location == "price_tables[0].gpus[0]"
    assert problem.fix == "ambiguous: did you mean `A100-40GB` or `A100-80GB`?"


@pytest.mark.parametrize(("stock", "location", "fix"), [
    ({"spot": -1}, "price_tables[0].stock_gpus.spot", "give a count of GPUs, 0 or more"),
    ({"ondemand": 4}, "price_tables[0].stock_gpus.ondemand", "did you mean `on_demand`?"),
])
def test_bad_assumed_stock(stock: dict[str, int], location: str, fix: str) -> None:
    (problem,) = problems(PriceTable(path="builtin:aws", zones=("use1-az1",), stock_gpus=stock))
    assert (problem.location, problem.fix) == (location, fix)
