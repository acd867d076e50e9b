"""Import per-zone GPU prices from a price catalog: instance prices → per-GPU offers per zone.

The catalog is read in its published layout (:mod:`models.price_catalogs`: SkyPilot's AWS, GCP
and Azure ``vms.csv``, or the renamed AWS subset shipped in inputs/catalog) as node prices
(on-demand per region, spot per zone). fleetplan plans in GPUs, so each node price is divided
by its GPU count to give a price per GPU-hour. Public catalogs carry no reserved prices: the
scenario states them as a discount on on-demand. A quote CSV (:mod:`models.quotes`) carries
every purchase kind with its own terms instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from models.catalog import GpuType
from models.common import CLOUD_KINDS, CatalogLayout, PurchaseKind
from models.errors import InputError, Problem, did_you_mean
from models.limits import RANGES, range_fix
from models.names import ZoneName, resolve_gpu, zone_id_for
from models.offers import AssumedFigure, Offer, OnDemandTerms, ReservedTerms, SpotTerms, Zone
from models.price_catalogs import SKYPILOT_ACCELERATORS as ACCELERATOR_NAMES
from models.price_catalogs import (
    SUBSET_COLUMNS,
    file_layout,
    read_node_prices,
    subset_node_rows,
)
from models.quotes import quote_rows, zones_from_quotes
from models.scenario import PriceTable

if TYPE_CHECKING:  # pandas is imported where a table is read, not at start-up
    import pandas as pd

    from models.horizon import HeldNodes

__all__ = ["ACCELERATOR_NAMES", "REQUIRED_COLUMNS", "zones_from_price_table"]

#: Columns of the renamed subset (kept for the tests and docs that name them).
REQUIRED_COLUMNS = SUBSET_COLUMNS


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
        elif count > RANGES["stock_gpus"].high:
            problems.append(Problem(file, where, f"stock of {count:,} GPUs",
                                    range_fix("stock_gpus")))
    return problems


def _pick_instance(rows: pd.DataFrame, gpus_per_node: int) -> pd.Series:
    """One instance type per zone and GPU: the catalog's node size, else the largest node."""
    exact = rows[rows["gpus_per_node"] == gpus_per_node]
    pool = exact if not exact.empty else rows[
        rows["gpus_per_node"] == rows["gpus_per_node"].max()]
    pool = pool.sort_values(["node_price_ondemand", "instance_type"], na_position="last")
    return pool.iloc[0]


def _price(value: object, count: int) -> float | None:
    if value is None:
        return None
    number = float(value)  # type: ignore[arg-type]
    if math.isnan(number) or number <= 0:
        return None
    return number / count


def selected_gpus(table: PriceTable, catalog: Sequence[str], file: str, index: int,
                  problems: list[Problem]) -> list[str] | None:
    """The table's ``gpus`` filter as catalog names (common names and instance types resolve)."""
    if table.gpus is None:
        return None
    out = []
    for i, name in enumerate(table.gpus):
        gpu, _, why = resolve_gpu(name, catalog)
        if gpu is None:
            problems.append(Problem(file, f"price_tables[{index}].gpus[{i}]",
                                    f"unknown GPU `{name}`", why))
        else:
            out.append(gpu)
    return out


def selected_zones(table: PriceTable, known: Sequence[str], zone_map: Mapping[str, ZoneName]
                   | None, source: str, file: str, index: int,
                   problems: list[Problem]) -> list[str] | None:
    """The table's ``zones`` filter as zone ids of the file (AWS names through the mapping)."""
    if table.zones is None:
        return None
    out = []
    for i, name in enumerate(table.zones):
        where = f"price_tables[{index}].zones[{i}]"
        try:
            zone_id, _ = zone_id_for(name, zone_map, known, file, where)
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        if zone_id not in known:
            problems.append(Problem(file, where, f"zone `{name}` is not in {source}",
                                    did_you_mean(zone_id, known)))
        out.append(zone_id)
    return out


def zones_from_price_table(
    path: Path, table: PriceTable, gpus: Sequence[GpuType], file: str, index: int,
    zone_map: Mapping[str, ZoneName] | None = None,
) -> list[Zone]:
    """Zones with one offer per catalog GPU, priced per GPU-hour from the file's prices."""
    if not path.exists():
        raise InputError([Problem(file, f"price_tables[{index}].path",
                                  f"price table {path} not found",
                                  "check the path (relative to the scenario file)")])
    layout = table.layout or file_layout(path)
    if layout is CatalogLayout.quotes:
        return zones_from_quotes(path, table, gpus, file, index, zone_map)
    frame = read_node_prices(path, layout).frame
    catalog = {g.name: g for g in gpus}
    problems = _stock_problems(table, file, index)
    known_zones = sorted(frame["zone"].unique())
    wanted_zones = selected_zones(table, known_zones, zone_map, path.name, file, index, problems)
    wanted_gpus = selected_gpus(table, list(catalog), file, index, problems)
    if problems:
        raise InputError(problems)
    if wanted_zones is not None:
        frame = frame[frame["zone"].isin(wanted_zones)]
    if wanted_gpus is not None:
        frame = frame[frame["gpu"].isin(wanted_gpus)]
    frame = frame[frame["gpu"].isin(list(catalog))]
    names = {z.zone_id: z.name for z in (zone_map or {}).values()}
    return [zone for zone_id in sorted(frame["zone"].unique())
            if (zone := _zone(frame[frame["zone"] == zone_id], str(zone_id), catalog, table,
                              path, names.get(str(zone_id)))) is not None]


def _assumed(reserved: bool, on_demand: bool, spot: bool) -> tuple[AssumedFigure, ...]:
    """What a published catalog does not say of an offer it prices: stock always; the reserved
    price and term (derived from on-demand), the start-up time and interruption rate (the
    table's) where the offer sells that kind."""
    return tuple(figure for figure, sold in (
        (AssumedFigure.reserved_price, reserved), (AssumedFigure.reserved_term, reserved),
        (AssumedFigure.stock, True), (AssumedFigure.spot_interruption_rate, spot),
        (AssumedFigure.on_demand_startup, on_demand)) if sold)


def _zone(rows: pd.DataFrame, zone_id: str, catalog: Mapping[str, GpuType], table: PriceTable,
          path: Path, name: str | None) -> Zone | None:
    stock = table.stock_gpus
    offers = []
    for gpu_name in sorted(rows["gpu"].unique()):
        gpu_type = catalog[gpu_name]
        pick = _pick_instance(rows[rows["gpu"] == gpu_name], gpu_type.gpus_per_node)
        count = int(pick["gpus_per_node"])
        on_demand = _price(pick["node_price_ondemand"], count)
        spot = _price(pick["node_price_spot"], count)
        reserved = None
        if table.reserved is not None and on_demand is not None:
            reserved = ReservedTerms(
                price_per_gpu_hour=on_demand * (1 - table.reserved.discount_vs_on_demand),
                stock_gpus=stock.get("reserved", 0),
                commitment_months=table.reserved.commitment_months,
                lead_time_weeks=table.reserved.lead_time_weeks,
                assumed=True,  # a discount applied to on-demand, not a quote
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
                         f"÷ {count} GPUs{pick['note']}",
            assumed=_assumed(reserved is not None, on_demand is not None, spot is not None),
        ))
    if not offers:
        return None
    return Zone(id=zone_id, region=str(rows["region"].iloc[0]), offers=tuple(offers), name=name)


#: A price per GPU-hour this many times the highest on-demand price per GPU-hour the bundled
#: AWS table lists for the GPU is taken for a node's price written per GPU (a p5.48xlarge at
#: 98.32 USD/hour is 12.29 per GPU: 8×).
NODE_PRICE_RATIO = 3.0


def reference_prices_per_gpu_hour() -> dict[str, tuple[float, str]]:
    """Per catalog GPU, the highest on-demand price per GPU-hour of the bundled AWS table
    (``builtin:aws``) and the instance that lists it."""
    from inputs import catalog_dir

    out: dict[str, tuple[float, str]] = {}
    for instance, gpu, count, node_price, *_ in subset_node_rows(
            catalog_dir() / "prices" / "aws_gpu_prices.csv"):
        price = float(node_price) / int(count)
        if math.isfinite(price) and price > out.get(str(gpu), (0.0, ""))[0]:
            out[str(gpu)] = (price, str(instance))
    return out


def node_price_warnings(zones: Sequence[Zone], gpus: Mapping[str, GpuType]) -> list[str]:
    """A warning for each offer price per GPU-hour that reads as a node's price: at least
    :data:`NODE_PRICE_RATIO` times the bundled AWS table's highest on-demand price per
    GPU-hour for that GPU, on nodes of more than one GPU (GPUs the table lacks are not
    checked). Nothing stops such a price; the plan would just avoid the GPU it makes dear."""
    reference = reference_prices_per_gpu_hour()
    out = []
    for zone in zones:
        for offer in zone.offers:
            if offer.gpu not in reference or offer.gpu not in gpus:
                continue
            per_node = offer.gpus_per_node or gpus[offer.gpu].gpus_per_node
            ref, instance = reference[offer.gpu]
            reserved_rows = quote_rows(offer.price_source, PurchaseKind.reserved)
            quotes = [(PurchaseKind.reserved, q.price_per_gpu_hour,
                       reserved_rows[i] if i < len(reserved_rows) else None)
                      for i, q in enumerate(offer.reserved_quotes)]
            quotes += [(kind, terms.price_per_gpu_hour,
                        next(iter(quote_rows(offer.price_source, kind)), None))
                       for kind, terms in ((PurchaseKind.on_demand, offer.on_demand),
                                           (PurchaseKind.spot, offer.spot))
                       if terms is not None]
            for kind, price, row in quotes:
                if per_node > 1 and price >= NODE_PRICE_RATIO * ref:
                    where = f" (quote {row})" if row else ""
                    out.append(
                        f"{zone.id}: {offer.gpu} {kind.value} price_per_gpu_hour "
                        + _node_price_text(price, offer.gpu, ref, instance, per_node, where))
    return out


def _node_price_text(price: float, gpu: str, ref: float, instance: str, per_node: int,
                     where: str = "") -> str:
    return (f"{price:,.2f}{where} is {price / ref:.1f}× the highest on-demand price per "
            f"GPU-hour of {gpu} in the bundled AWS table ({ref:,.2f}, {instance}): a node's "
            f"price? the field is per GPU: {price:,.2f} ÷ {per_node} GPUs per node = "
            f"{price / per_node:,.2f}")


def held_node_price_warnings(inventory: Sequence[HeldNodes]) -> list[str]:
    """:func:`node_price_warnings` for the held reservations of a scenario's (resolved)
    inventory: a new user's p5.48xlarge reservation at 48.80 "per GPU-hour", its node's price,
    was accepted silently and reported spending eight times what it costs."""
    reference = reference_prices_per_gpu_hour()
    out = []
    for i, line in enumerate(inventory):
        price, per_node = line.price_per_gpu_hour, line.gpus_per_node or 1
        if price is None or line.gpu not in reference or per_node <= 1:
            continue
        ref, instance = reference[line.gpu]
        if price >= NODE_PRICE_RATIO * ref:
            out.append(f"inventory[{i}]: {line.gpu} reservation in {line.zone} "
                       "price_per_gpu_hour "
                       + _node_price_text(price, line.gpu, ref, instance, per_node))
    return out
