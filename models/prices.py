"""Import per-zone GPU prices from a SkyPilot-format catalog CSV.

The table lists instance prices (on-demand per region, spot per zone). fleetplan plans in GPUs,
so each instance price is divided by its accelerator count to give a price per GPU-hour. Public
catalogs carry no reserved prices: the scenario states them as a discount on on-demand.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from models.catalog import GpuType
from models.common import CLOUD_KINDS
from models.errors import InputError, Problem, did_you_mean
from models.offers import Offer, OnDemandTerms, ReservedTerms, SpotTerms, Zone
from models.scenario import PriceTable

REQUIRED_COLUMNS = (
    "instance_type",
    "accelerator",
    "accelerator_count",
    "price_ondemand_usd_hr",
    "price_spot_usd_hr",
    "region",
    "zone",
)

#: SkyPilot accelerator names → catalog GPU names.
ACCELERATOR_NAMES: dict[str, str] = {
    "A10G": "A10G",
    "L4": "L4",
    "L40S": "L40S",
    "A100": "A100-40GB",
    "A100-80GB": "A100-80GB",
    "H100": "H100-SXM",
    "H200": "H200",
    "B200": "B200",
    "MI300X": "MI300X",
}


def _read(path: Path, file: str, index: int) -> pd.DataFrame:
    where = f"price_tables[{index}].path"
    if not path.exists():
        raise InputError([Problem(file, where, f"price table {path} not found",
                                  "check the path (relative to the scenario file)")])
    try:
        frame = pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise InputError([Problem(str(path), "", f"cannot parse CSV: {exc}",
                                  "use the SkyPilot catalog format: "
                                  + ", ".join(REQUIRED_COLUMNS))]) from None
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError([Problem(str(path), "header", f"missing columns: {', '.join(missing)}",
                                  "use the SkyPilot catalog format: "
                                  + ", ".join(REQUIRED_COLUMNS))])
    problems = _row_problems(frame, str(path))
    if problems:
        raise InputError(problems)
    text = ("instance_type", "accelerator", "region", "zone")
    numbers = ("accelerator_count", "price_ondemand_usd_hr", "price_spot_usd_hr")
    return frame.assign(**{c: frame[c].astype(str) for c in text},
                        **{c: pd.to_numeric(frame[c], errors="coerce") for c in numbers})


def _row_problems(frame: pd.DataFrame, file: str) -> list[Problem]:
    """Every row needs its names, a whole GPU count >= 1, and prices that are numbers or blank."""
    problems = []
    for col in ("instance_type", "accelerator", "region", "zone"):
        for i in frame.index[frame[col].isna()]:
            problems.append(Problem(file, f"row {i + 2}.{col}", "empty",
                                    "fill it in or delete the row"))
    count = pd.to_numeric(frame["accelerator_count"], errors="coerce")
    for i in frame.index[~((count >= 1) & (count % 1 == 0))]:
        problems.append(Problem(file, f"row {i + 2}.accelerator_count",
                                f"`{frame.at[i, 'accelerator_count']!s}` is not a whole number of "
                                "GPUs >= 1", "give the GPUs per instance"))
    for col in ("price_ondemand_usd_hr", "price_spot_usd_hr"):
        price = pd.to_numeric(frame[col], errors="coerce")
        bad = (price.isna() & frame[col].notna()) | (price < 0) | (price.abs() == math.inf)
        for i in frame.index[bad]:
            problems.append(Problem(file, f"row {i + 2}.{col}",
                                    f"`{frame.at[i, col]!s}` is not a price",
                                    "give the price per instance-hour, or leave it blank"))
    return problems


def _stock_problems(table: PriceTable, file: str, index: int) -> list[Problem]:
    """Assumed stock must name purchase kinds and count GPUs (>= 0)."""
    problems = []
    kinds = [k.value for k in CLOUD_KINDS]
    for kind, count in table.stock_gpus.items():
        where = f"price_tables[{index}].stock_gpus.{kind}"
        if kind not in kinds:
            problems.append(Problem(file, where, f"unknown purchase kind `{kind}`",
                                    did_you_mean(kind, kinds)))
        elif count < 0:
            problems.append(Problem(file, where, f"negative stock {count}",
                                    "give a count of GPUs, 0 or more"))
    return problems


def _pick_instance(rows: pd.DataFrame, gpus_per_node: int) -> pd.Series:
    """One instance type per zone and GPU: the catalog's node size, else the largest node."""
    exact = rows[rows["accelerator_count"] == gpus_per_node]
    pool = exact if not exact.empty else rows[
        rows["accelerator_count"] == rows["accelerator_count"].max()]
    pool = pool.sort_values(["price_ondemand_usd_hr", "instance_type"], na_position="last")
    return pool.iloc[0]


def _price(value: object, count: int) -> float | None:
    if value is None:
        return None
    number = float(value)  # type: ignore[arg-type]
    if math.isnan(number) or number <= 0:
        return None
    return number / count


def zones_from_price_table(
    path: Path, table: PriceTable, gpus: Sequence[GpuType], file: str, index: int
) -> list[Zone]:
    """Zones with one offer per catalog GPU, priced per GPU-hour from instance prices."""
    frame = _read(path, file, index)
    catalog = {g.name: g for g in gpus}
    frame = frame.assign(gpu=frame["accelerator"].map(ACCELERATOR_NAMES))
    problems = _stock_problems(table, file, index)
    if table.zones is not None:
        known = sorted(frame["zone"].unique())
        for i, zone in enumerate(table.zones):
            if zone not in known:
                problems.append(Problem(file, f"price_tables[{index}].zones[{i}]",
                                        f"zone `{zone}` is not in {path.name}",
                                        did_you_mean(zone, known)))
        frame = frame[frame["zone"].isin(table.zones)]
    if table.gpus is not None:
        for i, gpu in enumerate(table.gpus):
            if gpu not in catalog:
                problems.append(Problem(file, f"price_tables[{index}].gpus[{i}]",
                                        f"unknown GPU `{gpu}`", did_you_mean(gpu, catalog)))
        frame = frame[frame["gpu"].isin(table.gpus)]
    if problems:
        raise InputError(problems)
    frame = frame[frame["gpu"].isin(list(catalog))]
    stock = table.stock_gpus
    zones: list[Zone] = []
    for zone_id in sorted(frame["zone"].unique()):
        rows = frame[frame["zone"] == zone_id]
        offers = []
        for gpu_name in sorted(rows["gpu"].unique()):
            gpu_type = catalog[gpu_name]
            pick = _pick_instance(rows[rows["gpu"] == gpu_name], gpu_type.gpus_per_node)
            count = int(pick["accelerator_count"])
            on_demand = _price(pick["price_ondemand_usd_hr"], count)
            spot = _price(pick["price_spot_usd_hr"], count)
            reserved = None
            if table.reserved is not None and on_demand is not None:
                reserved = ReservedTerms(
                    price_per_gpu_hour=on_demand * (1 - table.reserved.discount_vs_on_demand),
                    stock_gpus=stock.get("reserved", 0),
                    commitment_months=table.reserved.commitment_months,
                    lead_time_weeks=table.reserved.lead_time_weeks,
                )
            if reserved is None and on_demand is None and spot is None:
                continue
            offers.append(Offer(
                gpu=gpu_name,
                instance_type=str(pick["instance_type"]),
                gpus_per_node=count,
                reserved=reserved,
                on_demand=None if on_demand is None else OnDemandTerms(
                    price_per_gpu_hour=on_demand, stock_gpus=stock.get("on_demand", 0),
                    startup_minutes=table.on_demand_startup_minutes),
                spot=None if spot is None else SpotTerms(
                    price_per_gpu_hour=spot, stock_gpus=stock.get("spot", 0),
                    interruption_rate_per_hour=table.spot_interruption_rate_per_hour),
                price_source=f"{path.name}: {pick['instance_type']} in {zone_id}, per instance "
                             f"÷ {count} GPUs",
            ))
        if offers:
            zones.append(Zone(id=str(zone_id), region=str(rows["region"].iloc[0]),
                              offers=tuple(offers)))
    return zones
