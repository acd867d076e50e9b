"""Price catalogs as published: SkyPilot's AWS, GCP and Azure ``vms.csv`` layouts and a plain
quote CSV, read into per-GPU offers per zone (tests/data/prices/, sources in its README)."""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
import pytest
import yaml
from click.testing import CliRunner

from inputs import catalog_dir
from models.errors import InputError, Problem
from models.loader import load_catalog, load_scenario
from models.names import read_zone_names
from models.offers import Offer, Zone
from models.price_catalogs import CatalogLayout, file_layout
from models.prices import node_price_warnings, zones_from_price_table
from models.scenario import PriceTable
from solver.cli import main

DATA = Path(__file__).resolve().parent / "data" / "prices"
AWS, GCP, AZURE = (DATA / f"skypilot_{c}_vms_sample.csv" for c in ("aws", "gcp", "azure"))
SUBSET = catalog_dir() / "prices" / "aws_gpu_prices.csv"
GPUS, _MODELS, _SOURCES = load_catalog()
QUOTE_HEADER = "zone,gpu,kind,term_months,upfront,price_per_gpu_hour,stock_gpus,lead_time_weeks"


def zones(path: Path, **table: object) -> list[Zone]:
    return zones_from_price_table(path, PriceTable(path=str(path), **table), GPUS, "s.yaml", 0)


def offer(found: list[Zone], zone_id: str, gpu: str) -> Offer:
    zone = next(z for z in found if z.id == zone_id)
    return next(o for o in zone.offers if o.gpu == gpu)


def problems(path: Path, **table: object) -> tuple[Problem, ...]:
    with pytest.raises(InputError) as info:
        zones(path, **table)
    return info.value.problems


def test_each_layout_is_recognised_from_its_header(tmp_path: Path) -> None:
    quotes = tmp_path / "q.csv"
    quotes.write_text(QUOTE_HEADER + "\n", encoding="utf-8")
    assert [file_layout(p) for p in (AWS, GCP, AZURE, SUBSET, quotes)] == [
        CatalogLayout.skypilot_aws, CatalogLayout.skypilot_gcp, CatalogLayout.skypilot_azure,
        CatalogLayout.fleetplan, CatalogLayout.quotes]


def test_aws_vms_csv_as_published_prices_per_gpu_like_the_subset() -> None:
    found = zones(AWS)
    assert sorted(z.id for z in found) == ["use1-az1", "use1-az2", "use1-az4"]
    h100 = offer(found, "use1-az1", "H100-SXM")
    assert (h100.instance_type, h100.gpus_per_node) == ("p5.48xlarge", 8)
    assert h100.on_demand is not None and h100.spot is not None
    assert h100.on_demand.price_per_gpu_hour == pytest.approx(12.29)  # 98.32 / 8
    assert h100.spot.price_per_gpu_hour == pytest.approx(3.79075)  # 30.326 / 8
    l4 = offer(found, "use1-az1", "L4")  # g6.xlarge (1 GPU) and g6.12xlarge (4): the catalog's 4
    assert (l4.instance_type, l4.gpus_per_node) == ("g6.12xlarge", 4)
    assert offer(found, "use1-az1", "A100-80GB").spot is None  # blank SpotPrice
    assert [o.gpu for o in next(z for z in found if z.id == "use1-az2").offers].count("H200") == 1
    # The same rows in the renamed subset give the same offers: the layouts agree (L40S and
    # A10G left out: the subset also has the 4-GPU g6e.12xlarge and g5.12xlarge).
    subset = zones(SUBSET, zones=("use1-az1", "use1-az2", "use1-az4"),
                   gpus=("H100-SXM", "L4", "A100-80GB", "H200"))
    for zone in subset:
        for theirs in zone.offers:
            ours = offer(found, zone.id, theirs.gpu)
            assert ours.model_dump(exclude={"price_source"}) == theirs.model_dump(
                exclude={"price_source"}), (zone.id, theirs.gpu)


def test_gcp_node_price_is_host_plus_its_gpus_in_the_same_zone() -> None:
    found = zones(GCP)
    assert sorted(z.id for z in found) == ["us-central1-a", "us-central1-b", "us-central1-c"]
    # us-east5-a has an a3-highgpu-1g host row but no H100 row there: not offered.
    h100 = offer(found, "us-central1-a", "H100-SXM")
    # No 8-GPU a3 in the sample: the largest node, a3-highgpu-4g.
    assert (h100.instance_type, h100.gpus_per_node) == ("a3-highgpu-4g", 4)
    assert h100.on_demand is not None and h100.spot is not None
    assert h100.on_demand.price_per_gpu_hour == pytest.approx((4.73003 + 16.80304) / 4)
    assert h100.spot.price_per_gpu_hour == pytest.approx((1.08774 + 9.012) / 4)
    a100 = offer(found, "us-central1-c", "A100-80GB")
    assert (a100.instance_type, a100.gpus_per_node) == ("a2-ultragpu-8g", 8)
    assert a100.on_demand is not None
    assert a100.on_demand.price_per_gpu_hour == pytest.approx((8.79698 + 14.76958) / 8)
    assert a100.price_source is not None and "host 8.79698 + 8 x A100-80GB" in a100.price_source
    assert {z.region for z in found} == {"us-central1"}


def test_azure_rows_are_per_region_and_the_published_vm_size_wins() -> None:
    found = zones(AZURE)
    assert sorted(z.id for z in found) == ["eastus", "eastus2", "westus"]
    assert all(z.id == z.region for z in found)
    h100 = offer(found, "eastus", "H100-SXM")
    # The file lists 12 H100s in ND96isr_H100_v5; the VM has 8: 98.32 / 8, not / 12.
    assert h100.gpus_per_node == 8
    assert h100.on_demand is not None
    assert h100.on_demand.price_per_gpu_hour == pytest.approx(12.29)
    assert h100.spot is None  # the file repeats the on-demand price as spot: no discount
    assert h100.price_source is not None and "lists 12 GPUs" in h100.price_source
    a100 = offer(found, "eastus2", "A100-80GB")
    assert (a100.instance_type, a100.gpus_per_node) == ("Standard_ND96amsr_A100_v4", 8)
    assert a100.spot is not None
    assert a100.spot.price_per_gpu_hour == pytest.approx(3.611254 / 8)
    assert all(o.gpu != "T4" for z in found for o in z.offers)  # not a catalog GPU


def test_a_spot_price_at_or_above_on_demand_is_no_spot_offer(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text("instance_type,accelerator,accelerator_count,price_ondemand_usd_hr,"
                    "price_spot_usd_hr,region,zone\n"
                    "p5.48xlarge,H100,8,113.068,113.068,ca-central-1,cac1-az4\n"
                    "g6.12xlarge,L4,4,4.6,1.9,ca-central-1,cac1-az4\n", encoding="utf-8")
    found = zones(path)
    assert offer(found, "cac1-az4", "H100-SXM").spot is None
    assert offer(found, "cac1-az4", "L4").spot is not None


def test_bad_cells_of_gpu_rows_are_located(tmp_path: Path) -> None:
    path = tmp_path / "vms.csv"
    lines = AWS.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2].replace("16.288", "sixteen")  # row 3: g5.48xlarge Price
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (problem,) = problems(path)
    assert (problem.file, problem.location) == (str(path), "row 3.Price")
    assert "not a price" in problem.message


def test_unknown_header_lists_what_is_read(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text("sku,cost\nx,1\n", encoding="utf-8")
    (problem,) = problems(path)
    assert (problem.file, problem.location) == (str(path), "header")
    assert "vms.csv" in problem.fix and "quote CSV" in problem.fix


def test_gcp_file_missing_a_published_column(tmp_path: Path) -> None:
    path = tmp_path / "vms.csv"
    text = GCP.read_text(encoding="utf-8").replace(",SpotPrice", ",Spot")
    path.write_text(text, encoding="utf-8")
    (problem,) = problems(path)
    assert problem.message == "missing columns: SpotPrice"
    assert "gcp vms.csv as published" in problem.fix


# --- quote CSV ----------------------------------------------------------------------------


def quotes(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "quotes.csv"
    path.write_text(QUOTE_HEADER + ",region,source\n" + body, encoding="utf-8")
    return path


def test_quote_csv_gives_every_kind_its_own_terms(tmp_path: Path) -> None:
    path = quotes(tmp_path, "dc-fra-1,H100,reserved,36,all,1.95,64,10,eu-central,vendor A\n"
                            "dc-fra-1,H100,on_demand,,,3.10,16,,eu-central,\n"
                            "dc-fra-1,g6.12xlarge,spot,,,0.40,,,eu-central,\n")
    (zone,) = zones(path, stock_gpus={"reserved": 0, "on_demand": 0, "spot": 12})
    assert (zone.id, zone.region) == ("dc-fra-1", "eu-central")
    h100 = offer([zone], "dc-fra-1", "H100-SXM")
    assert h100.reserved is not None and h100.on_demand is not None and h100.spot is None
    r = h100.reserved
    assert (r.price_per_gpu_hour, r.stock_gpus, r.commitment_months, r.lead_time_weeks) == (
        1.95, 64, 36, 10.0)
    assert (h100.on_demand.price_per_gpu_hour, h100.on_demand.stock_gpus) == (3.10, 16)
    assert h100.gpus_per_node == 8  # the catalog's H100 node
    assert h100.price_source is not None and "all upfront: vendor A" in h100.price_source
    l4 = offer([zone], "dc-fra-1", "L4")  # named by instance type: 4 L4 per node
    assert (l4.instance_type, l4.gpus_per_node) == ("g6.12xlarge", 4)
    assert l4.spot is not None and l4.spot.stock_gpus == 12  # blank: the table's stock


def test_quote_rows_that_cannot_stand_are_each_located(tmp_path: Path) -> None:
    path = quotes(tmp_path, "z-1,H100,reserved,,none,2.0,8,,,\n"   # row 2: no term
                            "z-1,H100,spot,12,,1.0,8,,,\n"          # row 3: term on spot
                            "z-1,A100,on_demand,,,2.0,8,,,\n"       # row 4: ambiguous GPU
                            "z-1,L4,lease,,,1.0,8,,,\n"             # row 5: unknown kind
                            "z-1,L4,on_demand,,,-1,8,,,\n"          # row 6: negative price
                            "z-1,L4,reserved,12,half,0.5,8,,,\n")   # row 7: upfront option
    found = {p.location: p for p in problems(path)}
    assert set(found) == {"row 2.term_months", "row 3.term_months", "row 4.gpu", "row 5.kind",
                          "row 6.price_per_gpu_hour", "row 7.upfront"}
    assert "A100-40GB" in found["row 4.gpu"].fix and "A100-80GB" in found["row 4.gpu"].fix
    assert all(p.file == str(path) for p in found.values())


def test_reserved_terms_side_by_side_and_a_repeated_quote(tmp_path: Path) -> None:
    path = quotes(tmp_path, "z-1,L4,reserved,12,none,0.5,8,,,\nz-1,L4,reserved,36,all,0.4,8,,,\n")
    (zone,) = zones(path)
    reserved = offer([zone], "z-1", "L4").reserved
    assert isinstance(reserved, tuple)
    assert [(r.term_months, r.upfront.value, r.price_per_gpu_hour) for r in reserved] == [
        (12, "none", 0.5), (36, "all", 0.4)]
    path = quotes(tmp_path, "z-1,L4,reserved,12,none,0.5,8,,,\nz-1,L4,reserved,12,none,0.4,8,,,\n"
                            "z-1,L4,spot,,,0.2,8,,,\nz-1,L4,spot,,,0.3,8,,,\n"
                            "z-1,L4,owned,,,0.3,8,,,\n")
    found = {p.location: p.message for p in problems(path)}
    assert found == {"row 3": "a second 12-month, none-upfront reserved quote for L4 in z-1",
                     "row 5": "a second spot quote for L4 in z-1",
                     "row 6.kind": "`owned` is not a purchase kind"}


def test_one_gpu_quoted_on_two_node_types_says_how_they_differ(tmp_path: Path) -> None:
    # A new user quoting H100 on one row and p5.48xlarge on the next was told "quoted as
    # 8-GPU and 8-GPU nodes": the sizes match, the instance type is what differs.
    path = quotes(tmp_path, "z-1,H100,on_demand,,,12.29,16,,,\n"
                            "z-1,p5.48xlarge,reserved,12,none,7.5,16,,,\n")
    (problem,) = problems(path)
    assert problem.location == "row 3.gpu"
    assert problem.message == ("H100-SXM in z-1 is quoted on 8-GPU nodes and on p5.48xlarge "
                               "nodes (8 GPUs)")
    assert "name the same instance type" in problem.fix


# --- AWS zone names -------------------------------------------------------------------------


def describe_azs(tmp_path: Path, zones_: list[dict[str, str]]) -> Path:
    path = tmp_path / "azs.json"
    entries = [{"State": "available", "OptInStatus": "opt-in-not-required", "Messages": [],
                "GroupName": z["RegionName"], "NetworkBorderGroup": z["RegionName"],
                "ZoneType": "availability-zone", **z} for z in zones_]
    path.write_text(json.dumps({"AvailabilityZones": entries}, indent=4), encoding="utf-8")
    return path


US_EAST_1 = [{"RegionName": "us-east-1", "ZoneName": "us-east-1a", "ZoneId": "use1-az4"},
             {"RegionName": "us-east-1", "ZoneName": "us-east-1b", "ZoneId": "use1-az1"}]


def test_aws_zone_names_resolve_only_through_the_accounts_mapping(tmp_path: Path) -> None:
    mapping = read_zone_names(describe_azs(tmp_path, US_EAST_1))
    found = zones_from_price_table(AWS, PriceTable(path=str(AWS), zones=("us-east-1b",)), GPUS,
                                   "s.yaml", 0, mapping)
    assert [(z.id, z.name) for z in found] == [("use1-az1", "us-east-1b")]
    with pytest.raises(InputError) as info:
        zones(AWS, zones=("us-east-1b",))  # no mapping: never guessed
    (problem,) = info.value.problems
    assert problem.location == "price_tables[0].zones[0]"
    assert "describe-availability-zones" in problem.fix


def test_quote_zones_may_be_aws_zone_names_through_the_mapping(tmp_path: Path) -> None:
    mapping = read_zone_names(describe_azs(tmp_path, US_EAST_1))
    path = quotes(tmp_path, "us-east-1a,H100,on_demand,,,3.0,8,,,\n")
    (zone,) = zones_from_price_table(path, PriceTable(path=str(path)), GPUS, "s.yaml", 0,
                                     mapping)
    assert (zone.id, zone.name, zone.region) == ("use1-az4", "us-east-1a", "us-east-1")


def test_a_mapping_without_zone_ids_says_to_update_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "azs.json"
    path.write_text(json.dumps({"AvailabilityZones": [
        {"State": "available", "RegionName": "us-east-1", "Messages": [],
         "ZoneName": "us-east-1a"}]}), encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_zone_names(path)
    (problem,) = info.value.problems
    assert problem.location == "AvailabilityZones[0]"
    assert "update the AWS CLI" in problem.fix


# --- a scenario priced from the published AWS catalog ----------------------------------------


def test_a_scenario_priced_from_the_published_aws_catalog_validates_and_plans(
        tmp_path: Path) -> None:
    describe_azs(tmp_path, US_EAST_1)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({
        "name": "vms",
        "zone_names": "azs.json",
        "price_tables": [{"path": str(AWS), "zones": ["us-east-1a", "us-east-1b"],
                          "gpus": ["H100", "g6.12xlarge"]}],
        "workloads": [{
            "name": "chat", "model": "meta-llama/Llama-3.1-8B-Instruct",
            "arrival": {"peak_rps": 4},
            "input_tokens": {"p50": 1000, "p95": 1500, "p99": 2000},
            "output_tokens": {"p50": 200, "p95": 300, "p99": 400},
            "slo": {"ttft_p95_ms": 1000, "tpot_p95_ms": 50},
            "survivability": "zone_loss"}],
    }), encoding="utf-8")
    sc = load_scenario(scenario)
    assert sc.workloads[0].model == "Llama-3.1-8B"
    assert {(z.id, z.name) for z in sc.zones} == {("use1-az4", "us-east-1a"),
                                                  ("use1-az1", "us-east-1b")}
    validated = CliRunner().invoke(main, ["validate", str(scenario)])
    assert validated.exit_code == 0 and "use1-az4 (us-east-1a)" in validated.output
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["plan", str(scenario), "--out", str(out)])
    assert result.exit_code == 0, result.output
    plan = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    assert plan["status"] == "optimal"
    assert {a["zone"] for a in plan["allocations"]} == {"use1-az1", "use1-az4"}  # zone loss
    assert {a["gpu"] for a in plan["allocations"]} <= {"H100-SXM", "L4"}
    # People read both names; machines read the zone id (plan.json).
    assert "use1-az4 (us-east-1a)" in result.output
    assert "use1-az1 (us-east-1b)" in (out / "report.md").read_text(encoding="utf-8")
    cells = {c for ws in openpyxl.load_workbook(out / "plan.xlsx").worksheets
             for row in ws.iter_rows(values_only=True) for c in row}
    assert {"use1-az4 (us-east-1a)", "use1-az1 (us-east-1b)"} <= cells  # the Offers sheet


def test_a_node_price_in_a_quote_csv_is_warned_of_with_its_file_and_row(tmp_path: Path) -> None:
    """A new user's quote CSV had a node's price on one row typed as per GPU: the warning named
    the zone and GPU but not the file and row to fix."""
    path = quotes(tmp_path, "z-1,H100,on_demand,,,3.10,16,,,\n"
                            "z-1,H100,reserved,12,none,2.0,16,,,\n"
                            "z-1,H100,reserved,36,all,70.0,16,,,vendor B\n"
                            "z-1,H100,spot,,,98.32,16,,,\n")
    found = zones(path)
    warnings = node_price_warnings(found, {g.name: g for g in GPUS})
    assert len(warnings) == 2, warnings
    reserved, spot = warnings
    assert reserved.startswith("z-1: H100-SXM reserved price_per_gpu_hour 70.00 (quote "
                               "quotes.csv row 4) is "), reserved
    assert spot.startswith("z-1: H100-SXM spot price_per_gpu_hour 98.32 (quote quotes.csv "
                           "row 5) is "), spot
