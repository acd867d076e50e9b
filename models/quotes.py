"""A plain quote CSV — private clouds, vendor and reseller quotes — read into zones and offers.

One row per zone × GPU × purchase kind; the header names at least :data:`QUOTE_HEADER`::

    zone,gpu,kind,term_months,upfront,price_per_gpu_hour,stock_gpus,lead_time_weeks
    dc-fra-1,H100,reserved,36,all,1.95,64,10
    dc-fra-1,H100,on_demand,,,3.10,16,
    use1-az1,p5.48xlarge,spot,,,3.80,32,

- ``zone``: a zone id (AWS zone names such as ``us-east-1a`` through the scenario's
  ``zone_names`` mapping); ``gpu``: a catalog name, a common name or an instance type (which also
  gives the node size); ``kind``: ``reserved``, ``on_demand`` or ``spot``.
- ``price_per_gpu_hour`` is the *effective* price of one GPU-hour: a quote paid partly or wholly
  up front is compared by its total over the term ÷ the hours of the term, as providers state
  "effective hourly" rates; ``upfront`` (``none``, ``partial``, ``all``; blank = none) says how
  it is paid (:class:`~models.offers.ReservedTerms`).
- ``term_months`` (reserved, required) and ``lead_time_weeks`` (reserved; blank: 0, labelled
  *assumed*) apply to reserved quotes only; ``stock_gpus`` blank takes the price table's
  assumed stock for the kind.
- Optional columns: ``upfront_share`` (partial upfront: the share paid at the start, default
  0.5), ``region`` (default: the zone's region from the mapping, else the zone id),
  ``instance_type`` and ``gpus_per_node`` (default: the GPU type's node size), ``source``.

On-demand and spot are quoted once per zone and GPU; reserved once per term and upfront option
(several terms side by side become the offer's list of reserved quotes). Spot interruption and
on-demand start-up come from the price table entry; owned hardware is not a quote (its terms are
capital, power and hosting: give it as the offer's ``owned`` section).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from models.catalog import GpuType
from models.common import CLOUD_KINDS, PurchaseKind, Upfront
from models.errors import InputError, Problem
from models.names import ZoneName, name_key, resolve_gpu, zone_id_for
from models.offers import Offer, OnDemandTerms, ReservedTerms, SpotTerms, Zone
from models.price_catalogs import QUOTE_HEADER, read_csv
from models.scenario import PriceTable

if TYPE_CHECKING:  # pandas is imported where a table is read, not at start-up
    import pandas as pd

UPFRONT = ("none", "partial", "all")
_KINDS = {name_key(k.value): k for k in CLOUD_KINDS}


def _node_text(node: tuple[str | None, int]) -> str:
    """A quoted node type as people read it: ``p5.48xlarge nodes (8 GPUs)``, ``8-GPU nodes``."""
    instance, gpus = node
    return f"{instance} nodes ({gpus} GPUs)" if instance else f"{gpus}-GPU nodes"


def _cell(row: pd.Series, column: str) -> str:
    return str(row[column]).strip() if column in row.index else ""


def _float(text: str, file: str, where: str, what: str, problems: list[Problem],
           whole: bool = False, positive: bool = False) -> float | None:
    """A number cell, or ``None`` when blank; bad values become located problems."""
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    bad = (not math.isfinite(value) or value < 0 or (positive and value == 0)
           or (whole and value != int(value)) or value >= 1e9)
    if bad:
        problems.append(Problem(file, where, f"`{text}` is not {what}", f"give {what}"))
        return None
    return value


class _Rows:
    """Offers being assembled per (zone, GPU) from quote rows."""

    def __init__(self) -> None:
        self.terms: dict[tuple[str, str], dict[PurchaseKind, object]] = {}
        self.reserved: dict[tuple[str, str], list[ReservedTerms]] = {}
        self.node: dict[tuple[str, str], tuple[str | None, int]] = {}
        self.region: dict[str, str] = {}
        self.name: dict[str, str | None] = {}
        self.sources: dict[tuple[str, str], list[str]] = {}


def zones_from_quotes(path: Path, table: PriceTable, gpus: Sequence[GpuType], file: str,
                      index: int, zone_map: Mapping[str, ZoneName] | None = None) -> list[Zone]:
    """Zones and offers from a quote CSV (format in the module docstring)."""
    source = str(path)
    frame = read_csv(path, source)
    missing = [c for c in QUOTE_HEADER if c not in frame.columns]
    if missing:
        raise InputError([Problem(source, "header", f"missing columns: {', '.join(missing)}",
                                  "a quote CSV has columns " + ", ".join(QUOTE_HEADER))])
    catalog = {g.name: g for g in gpus}
    rows = _Rows()
    problems: list[Problem] = []
    for i, row in frame.iterrows():
        _read_row(row, int(str(i)) + 2, source, table, catalog, zone_map, rows, problems)
        if len(problems) >= 20:
            break
    if problems:
        raise InputError(problems)
    zones: dict[str, list[Offer]] = {}
    for (zone, gpu), terms in sorted(rows.terms.items()):
        instance, per_node = rows.node[(zone, gpu)]
        reserved = rows.reserved.get((zone, gpu), [])
        zones.setdefault(zone, []).append(Offer(
            gpu=gpu, instance_type=instance, gpus_per_node=per_node,
            reserved=(None if not reserved else reserved[0] if len(reserved) == 1
                      else tuple(reserved)),
            on_demand=terms.get(PurchaseKind.on_demand),
            spot=terms.get(PurchaseKind.spot),
            price_source="; ".join(rows.sources[(zone, gpu)])))
    return [Zone(id=z, region=rows.region[z], offers=tuple(offers), name=rows.name[z])
            for z, offers in zones.items()]


def _read_row(row: pd.Series, line: int, file: str, table: PriceTable,
              catalog: Mapping[str, GpuType], zone_map: Mapping[str, ZoneName] | None,
              rows: _Rows, problems: list[Problem]) -> None:
    at = f"row {line}"
    before = len(problems)
    zone_text, gpu_text = _cell(row, "zone"), _cell(row, "gpu")
    zone = name = None
    if not zone_text:
        problems.append(Problem(file, f"{at}.zone", "empty", "give the zone id"))
    else:
        try:
            zone, name = zone_id_for(zone_text, zone_map, (), file, f"{at}.zone")
        except InputError as exc:
            problems.extend(exc.problems)
    gpu, per_node, why = resolve_gpu(gpu_text, list(catalog)) if gpu_text else (None, None, "")
    if gpu is None:
        problems.append(Problem(file, f"{at}.gpu", f"unknown GPU `{gpu_text}`" if gpu_text
                                else "empty", why or "give a GPU type or instance type"))
    kind = _KINDS.get(name_key(_cell(row, "kind")))
    if kind is None:
        problems.append(Problem(file, f"{at}.kind", f"`{_cell(row, 'kind')}` is not a purchase "
                                "kind", "use reserved, on_demand or spot"))
    price = _float(_cell(row, "price_per_gpu_hour"), file, f"{at}.price_per_gpu_hour",
                   "a price per GPU-hour > 0", problems, positive=True)
    if price is None and not _cell(row, "price_per_gpu_hour"):
        problems.append(Problem(file, f"{at}.price_per_gpu_hour", "empty",
                                "give the effective price of one GPU-hour"))
    stock = _float(_cell(row, "stock_gpus"), file, f"{at}.stock_gpus", "a whole number of GPUs "
                   ">= 0", problems, whole=True)
    term = _float(_cell(row, "term_months"), file, f"{at}.term_months", "a whole number of "
                  "months >= 1", problems, whole=True, positive=True)
    lead = _float(_cell(row, "lead_time_weeks"), file, f"{at}.lead_time_weeks", "a number of "
                  "weeks >= 0", problems)
    share = _float(_cell(row, "upfront_share"), file, f"{at}.upfront_share", "a share from 0 "
                   "to 1", problems)
    if share is not None and share > 1:
        problems.append(Problem(file, f"{at}.upfront_share", f"{share:g} is over 1",
                                "give the share paid at the start of the term, 0 to 1"))
    upfront = _cell(row, "upfront").lower() or "none"
    if share is not None and upfront != "partial":
        problems.append(Problem(file, f"{at}.upfront_share", "applies to partial-upfront "
                                "quotes only", "leave it blank, or set upfront: partial"))
    if upfront not in UPFRONT:
        problems.append(Problem(file, f"{at}.upfront", f"`{_cell(row, 'upfront')}` is not an "
                                "upfront option", "use none, partial or all (or leave blank)"))
    if kind is PurchaseKind.reserved and term is None and not _cell(row, "term_months"):
        problems.append(Problem(file, f"{at}.term_months", "a reserved quote needs its term",
                                "give the commitment in months"))
    if kind is not None and kind is not PurchaseKind.reserved:
        for column in ("term_months", "lead_time_weeks"):
            if _cell(row, column):
                problems.append(Problem(file, f"{at}.{column}", f"applies to reserved quotes "
                                        f"only, not {kind.value}", "leave it blank"))
        if upfront != "none":
            problems.append(Problem(file, f"{at}.upfront", f"an {kind.value} price is not paid "
                                    "up front", "leave it blank"))
    per_node_text = _cell(row, "gpus_per_node")
    count = _float(per_node_text, file, f"{at}.gpus_per_node", "a whole number of GPUs from 1 "
                   "to 64", problems, whole=True, positive=True)
    if count is not None and count > 64:
        problems.append(Problem(file, f"{at}.gpus_per_node", f"`{per_node_text}` is not a whole "
                                "number of GPUs from 1 to 64", "give the GPUs per node"))
    if len(problems) > before or zone is None or gpu is None or kind is None or price is None:
        return
    instance = _cell(row, "instance_type") or (gpu_text if per_node is not None else None)
    if instance and per_node is None:
        _, per_node, _ = resolve_gpu(instance, list(catalog))
    node = (instance or None, int(count) if count is not None else
            per_node or catalog[gpu].gpus_per_node)
    key = (zone, gpu)
    if key in rows.node and rows.node[key] != node:
        # the instance type is said too: rows naming `H100` and `p5.48xlarge` (8 GPUs each)
        # read "quoted as 8-GPU and 8-GPU nodes"
        problems.append(Problem(file, f"{at}.gpu", f"{gpu} in {zone} is quoted on "
                                f"{_node_text(rows.node[key])} and on {_node_text(node)}",
                                "quote one node type per zone and GPU: name the same instance "
                                "type (or GPU name) and GPUs per node on each of its rows"))
        return
    terms = rows.terms.setdefault(key, {})
    quoted = [(r.commitment_months, r.upfront.value) for r in rows.reserved.get(key, [])]
    if kind in terms or (int(term or 0), upfront) in quoted:
        what = (f"{int(term or 0)}-month, {upfront}-upfront reserved"
                if kind is PurchaseKind.reserved else kind.value)
        problems.append(Problem(file, at, f"a second {what} quote for {gpu} in {zone}",
                                "keep one quote per zone, GPU and kind (reserved: per term and "
                                "upfront option)"))
        return
    rows.node[key] = node
    rows.region[zone] = _cell(row, "region") or (
        zone_map[name].region if name is not None and zone_map is not None else zone)
    rows.name[zone] = name
    default_stock = table.stock_gpus.get(kind.value, 0)
    gpus_in_stock = int(stock) if stock is not None else default_stock
    if kind is PurchaseKind.reserved:
        rows.reserved.setdefault(key, []).append(ReservedTerms(
            price_per_gpu_hour=price, stock_gpus=gpus_in_stock, commitment_months=int(term or 12),
            lead_time_weeks=lead or 0.0, lead_time_assumed=lead is None, upfront=Upfront(upfront),
            upfront_share=share))
    elif kind is PurchaseKind.on_demand:
        terms[kind] = OnDemandTerms(price_per_gpu_hour=price, stock_gpus=gpus_in_stock,
                                    startup_minutes=table.on_demand_startup_minutes)
    else:
        terms[kind] = SpotTerms(price_per_gpu_hour=price, stock_gpus=gpus_in_stock,
                                interruption_rate_per_hour=table.spot_interruption_rate_per_hour)
    note = _cell(row, "source")
    paid = f", {upfront} upfront" if kind is PurchaseKind.reserved else ""
    rows.sources.setdefault(key, []).append(
        f"{quote_row(file, line)} ({kind.value}{paid}{': ' + note if note else ''})")


def quote_row(file: str, line: int) -> str:
    """Where a quote is: ``quotes.csv row 3`` (the file's name, its line counting the header
    as 1), as an offer's ``price_source`` names each of its rows."""
    return f"{Path(file).name} row {line}"


#: One row of an offer's ``price_source`` read from a quote CSV: its place and purchase kind.
_QUOTE_ROW = re.compile(
    r"(?:^|; )(?P<where>[^;]+? row \d+) \((?P<kind>reserved|on_demand|spot)\b")


def quote_rows(price_source: str | None, kind: PurchaseKind) -> list[str]:
    """The rows (``quotes.csv row 3``) of an offer's quotes of ``kind``, in the order given
    (reserved: one per quote of ``Offer.reserved_quotes``); empty for an offer not read from a
    quote CSV."""
    if not price_source:
        return []
    return [m["where"] for m in _QUOTE_ROW.finditer(price_source) if m["kind"] == kind.value]
