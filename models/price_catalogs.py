"""Price catalogs as they are published, read into one table of node prices per zone.

Layouts (detected from the header; a price table's ``layout:`` names one explicitly):

- ``skypilot-aws`` — SkyPilot's ``catalogs/v*/aws/vms.csv`` as published: ``InstanceType,
  AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB, GpuInfo, Price, SpotPrice, Region,
  AvailabilityZone``. ``Price`` is the instance's on-demand price in the region, ``SpotPrice``
  its spot price in the zone (AWS zone *ids*, e.g. ``use1-az1``).
- ``skypilot-gcp`` — ``catalogs/v*/gcp/vms.csv``: ``InstanceType, vCPUs, MemoryGiB,
  AcceleratorName, AcceleratorCount, GpuInfo, Region, AvailabilityZone, Price, SpotPrice``. GCP
  bills the GPUs of an accelerator-optimized machine apart from its host: the host row
  (``a3-highgpu-8g``, no accelerator) prices vCPUs and memory, and a row with no instance type
  and ``AcceleratorName, AcceleratorCount`` (``H100, 8``) prices the GPUs, per zone. A node's
  price is the sum of the two in the same zone, as SkyPilot itself prices GCP VMs; a machine
  whose GPU row is missing in a zone is not offered there.
- ``skypilot-azure`` — ``catalogs/v*/azure/vms.csv``: ``InstanceType, AcceleratorName,
  AcceleratorCount, vCPUs, MemoryGiB, GpuInfo, Price, SpotPrice, Region, Generation``. Azure
  rows are per *region* (no zone column): each region becomes one zone, named by the region,
  so a zone loss there is the loss of the region's capacity.
- ``fleetplan`` — the renamed subset of the AWS catalog shipped in ``inputs/catalog/prices/``
  (``instance_type, accelerator, accelerator_count, price_ondemand_usd_hr, price_spot_usd_hr,
  region, zone``).

Accelerator names are SkyPilot's (:data:`SKYPILOT_ACCELERATORS` maps them to the catalog); rows
of accelerators the catalog does not have (T4, V100, TPUs, CPUs) are left out. Where the
instance type is one :data:`~models.names.INSTANCE_TYPES` knows, its published GPU type and
count win over the row's: SkyPilot's Azure catalog lists ``Standard_ND96isr_H100_v5`` with 12
H100s, the VM has 8, and the per-GPU price is divided by 8 (the price source says so). A spot
price that is not below the on-demand price is no discount and is left out (Azure's catalog
repeats the on-demand price as spot for its H100 VMs).
"""

from __future__ import annotations

import csv
import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from models.common import CatalogLayout
from models.errors import InputError, Problem
from models.input_files import LONG_ROW_FIX, check_file, duplicate_columns, first_long_row
from models.names import instance_shape

if TYPE_CHECKING:  # pandas is imported where a table is read, not at start-up
    import pandas as pd

#: SkyPilot accelerator names → catalog GPU names.
SKYPILOT_ACCELERATORS: dict[str, str] = {
    "A10G": "A10G",
    "L4": "L4",
    "L40S": "L40S",
    "A100": "A100-40GB",
    "A100-80GB": "A100-80GB",
    "H100": "H100-SXM",
    "H100-MEGA": "H100-SXM",
    "H200": "H200",
    "B200": "B200",
    "MI300X": "MI300X",
}

#: Columns of the renamed subset (the ``fleetplan`` layout).
SUBSET_COLUMNS = ("instance_type", "accelerator", "accelerator_count", "price_ondemand_usd_hr",
                  "price_spot_usd_hr", "region", "zone")
SKYPILOT_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "SpotPrice",
                    "Region")
#: Columns of a plain quote CSV (read by :mod:`models.quotes`); term, upfront, stock and lead
#: time may be blank where they do not apply.
QUOTE_HEADER = ("zone", "gpu", "kind", "term_months", "upfront", "price_per_gpu_hour",
                "stock_gpus", "lead_time_weeks")

#: The normalised table every layout is read into: one row per node type and zone.
NODE_COLUMNS = ("instance_type", "gpu", "gpus_per_node", "node_price_ondemand",
                "node_price_spot", "region", "zone", "note")


#: One row of the normalised table, in :data:`NODE_COLUMNS` order.
NodeRow = tuple[str, str, int, float, float, str, str, str]


@dataclass(frozen=True)
class NodePrices:
    """A price catalog read as node prices (columns :data:`NODE_COLUMNS`)."""

    layout: CatalogLayout
    frame: pd.DataFrame


def detect_layout(columns: Sequence[str], file: str) -> CatalogLayout:
    """The layout a header belongs to (see the module docstring)."""
    cols = [c.strip() for c in columns]
    if "kind" in cols and ("gpu" in cols or "zone" in cols):
        return CatalogLayout.quotes
    if "instance_type" in cols or "accelerator" in cols:
        return CatalogLayout.fleetplan
    if "InstanceType" in cols:
        if "AvailabilityZone" not in cols and "Region" in cols:
            return CatalogLayout.skypilot_azure
        if cols[:2] == ["InstanceType", "vCPUs"]:
            return CatalogLayout.skypilot_gcp
        return CatalogLayout.skypilot_aws
    raise InputError([Problem(
        file, "header", f"not a price catalog fleetplan reads (columns {cols[:12]})",
        "give SkyPilot's vms.csv for AWS, GCP or Azure as published, or a quote CSV with "
        "columns " + ", ".join(QUOTE_HEADER) + " (docs/prices.md)")])


def header_cells(path: Path) -> list[str]:
    """The cells of a price file's first line, as written (pandas renames a second ``x``
    to ``x.1``)."""
    try:
        with path.open(encoding="utf-8-sig", errors="replace", newline="") as fh:
            first = fh.readline(64 * 1024)
    except OSError as exc:
        raise InputError([Problem(str(path), "", f"cannot read: {exc}", "check the path")]
                         ) from None
    return next(csv.reader([first]), [])


def file_layout(path: Path) -> CatalogLayout:
    """The layout of a price file, from its header line."""
    check_file(path, "price catalog")
    header = header_cells(path)
    if not header:
        raise InputError([Problem(str(path), "", "cannot parse CSV: the file is empty",
                                  "use the SkyPilot catalog format (vms.csv as published) or "
                                  "a quote CSV (docs/prices.md)")])
    return detect_layout(header, str(path))


def read_csv(path: Path, file: str) -> pd.DataFrame:
    """A price CSV as text cells (size-limited; unparseable → InputError)."""
    import pandas as pd

    check_file(path, "price catalog")
    try:
        with warnings.catch_warnings():
            # index_col=False: a first row longer than the header would otherwise become the
            # index, shifting every row's cells one column left (a traceback, or wrong prices)
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig",
                                index_col=False)
    except pd.errors.ParserWarning:
        raise InputError([long_row_problem(path, file)]) from None
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise InputError([Problem(file, "", f"cannot parse CSV: {exc}",
                                  "save it as a comma-separated UTF-8 file")]) from None
    twice = duplicate_columns(header_cells(path), file)
    if twice is not None:
        raise InputError([twice])
    frame.columns = [str(c).strip() for c in frame.columns]
    if frame.empty:  # read as no offers, the scenario was told "no zone offers any GPU"
        raise InputError([Problem(file, "", "no rows under the header",
                                  "add a row per price (a truncated file? docs/prices.md)")])
    return frame


def long_row_problem(path: Path, file: str) -> Problem:
    """The first row with more cells than the header, located (a cell with an unquoted comma:
    ``1,5`` for 1.5, or a row with a trailing comma)."""
    found = first_long_row(path, file)
    return found or Problem(file, "", "a row has more cells than the header", LONG_ROW_FIX)


def read_node_prices(path: Path, layout: CatalogLayout | None = None) -> NodePrices:
    """Node prices per zone from a published catalog (any layout but ``quotes``)."""
    file = str(path)
    frame = read_csv(path, file)
    found = layout or detect_layout(list(frame.columns), file)
    readers = {
        CatalogLayout.fleetplan: _subset,
        CatalogLayout.skypilot_aws: _aws_or_azure,
        CatalogLayout.skypilot_azure: _aws_or_azure,
        CatalogLayout.skypilot_gcp: _gcp,
    }
    if found not in readers:
        raise InputError([Problem(file, "layout", f"`{found.value}` is not a node-price catalog",
                                  "read quote files with models.quotes")])
    need = {CatalogLayout.fleetplan: SUBSET_COLUMNS,
            CatalogLayout.skypilot_azure: SKYPILOT_COLUMNS}.get(
        found, (*SKYPILOT_COLUMNS, "AvailabilityZone"))
    missing = [c for c in need if c not in frame.columns]
    if missing:
        fix = ("use the SkyPilot catalog format: " + ", ".join(need)
               if found is CatalogLayout.fleetplan else
               f"give SkyPilot's {found.value.removeprefix('skypilot-')} vms.csv as published")
        raise InputError([Problem(file, "header", f"missing columns: {', '.join(missing)}",
                                  fix)])
    problems: list[Problem] = []
    nodes = readers[found](frame, file, found, problems)
    if problems:
        raise InputError(problems[:20])
    import pandas as pd

    return NodePrices(found, pd.DataFrame(nodes, columns=list(NODE_COLUMNS)))


def _number(cell: str, file: str, where: str, problems: list[Problem]) -> float:
    """A price cell: a number >= 0, or blank (NaN); anything else is a problem."""
    text = cell.strip()
    if not text:
        return math.nan
    try:
        value = float(text)
    except ValueError:
        value = math.nan
        problems.append(Problem(file, where, f"`{cell}` is not a price",
                                "give the price per instance-hour, or leave it blank"))
        return value
    if not math.isfinite(value) or value < 0:
        problems.append(Problem(file, where, f"`{cell}` is not a price",
                                "give the price per instance-hour, or leave it blank"))
        return math.nan
    return value


def _count(cell: str) -> int | None:
    try:
        value = float(cell)
    except ValueError:
        return None
    return int(value) if math.isfinite(value) and value >= 1 and value == int(value) else None


def _node(instance: str, accelerator: str, count_cell: str, file: str, where: str,
          problems: list[Problem]) -> tuple[str, int, str] | None:
    """(catalog GPU, GPUs per node, note) of a row, or ``None`` when not a catalog GPU."""
    shape = instance_shape(instance) if instance else None
    gpu = SKYPILOT_ACCELERATORS.get(accelerator.strip())
    if shape is not None and gpu is not None and shape.gpu != gpu:
        shape = None  # the row's accelerator says otherwise: trust the row
    if gpu is None and shape is None:
        return None
    count = _count(count_cell)
    if count is None and (count_cell.strip() or shape is None):
        problems.append(Problem(file, where, f"`{count_cell}` is not a whole number of GPUs "
                                ">= 1", "give the GPUs per instance"))
        return None
    if shape is None:
        assert gpu is not None and count is not None
        return gpu, count, ""
    note = ("" if count in (None, shape.gpus_per_node) else
            f"; the catalog lists {count} GPUs, the instance has {shape.gpus_per_node}")
    return shape.gpu, shape.gpus_per_node, note


def _spot_or_nan(on_demand: float, spot: float) -> float:
    """A spot price that is no discount on on-demand is not a spot offer."""
    return math.nan if (not math.isnan(on_demand) and spot >= on_demand) else spot


def _subset(frame: pd.DataFrame, file: str, layout: CatalogLayout,
            problems: list[Problem]) -> list[NodeRow]:
    return _subset_rows(enumerate(r for _, r in frame.iterrows()), file, problems)


def _subset_rows(cells: Iterable[tuple[int, Any]], file: str, problems: list[Problem]
                 ) -> list[NodeRow]:
    """Node rows of fleetplan's subset layout from (row index, ``row[column]`` → text)."""
    rows: list[NodeRow] = []
    for i, r in cells:
        line = i + 2
        for col in ("instance_type", "accelerator", "region", "zone"):
            if not r[col].strip():
                problems.append(Problem(file, f"row {line}.{col}", "empty",
                                        "fill it in or delete the row"))
        node = _node(r["instance_type"], r["accelerator"], r["accelerator_count"], file,
                     f"row {line}.accelerator_count", problems)
        on_demand = _number(r["price_ondemand_usd_hr"], file, f"row {line}.price_ondemand_usd_hr",
                            problems)
        spot = _spot_or_nan(on_demand, _number(r["price_spot_usd_hr"], file,
                                               f"row {line}.price_spot_usd_hr", problems))
        if node is not None:
            rows.append((r["instance_type"], node[0], node[1], on_demand, spot, r["region"],
                         r["zone"], node[2]))
    return rows


def subset_node_rows(path: Path) -> list[NodeRow]:
    """The node rows of a price table in fleetplan's subset layout (the bundled ones), read
    without pandas: a check at start-up (``validate``'s node-price warning) reads it, and
    pandas alone takes longer to import than the whole command."""
    file = str(path)
    check_file(path, "price catalog")
    with path.open(encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f)
        cells = [(i, {k.strip(): v for k, v in row.items()}) for i, row in enumerate(reader)]
    problems: list[Problem] = []
    rows = _subset_rows(cells, file, problems)
    if problems:
        raise InputError(problems[:20])
    return rows


def _aws_or_azure(frame: pd.DataFrame, file: str, layout: CatalogLayout,
                  problems: list[Problem]) -> list[NodeRow]:
    rows: list[NodeRow] = []
    azure = layout is CatalogLayout.skypilot_azure
    for i, r in frame.iterrows():
        line = int(str(i)) + 2
        node = _node(r["InstanceType"], r["AcceleratorName"], r["AcceleratorCount"], file,
                     f"row {line}.AcceleratorCount", problems)
        if node is None:
            continue
        on_demand = _number(r["Price"], file, f"row {line}.Price", problems)
        spot = _spot_or_nan(on_demand, _number(r["SpotPrice"], file, f"row {line}.SpotPrice",
                                               problems))
        zone = r["Region"] if azure else r["AvailabilityZone"]
        if not r["InstanceType"].strip() or not zone.strip():
            problems.append(Problem(file, f"row {line}", "a GPU row without an instance type or "
                                    "zone", "give the catalog file as published"))
            continue
        note = node[2] + ("; Azure prices per region: the region is one zone" if azure else "")
        rows.append((r["InstanceType"], node[0], node[1], on_demand, spot, r["Region"], zone,
                     note))
    return rows


def _gcp(frame: pd.DataFrame, file: str, layout: CatalogLayout,
         problems: list[Problem]) -> list[NodeRow]:
    accelerators: dict[tuple[str, str, int], tuple[float, float]] = {}
    for i, r in frame.iterrows():
        if r["InstanceType"].strip() or not r["AcceleratorName"].strip():
            continue
        count = _count(r["AcceleratorCount"])
        if count is None or r["AcceleratorName"] not in SKYPILOT_ACCELERATORS:
            continue
        line = int(str(i)) + 2
        accelerators[(r["AvailabilityZone"], r["AcceleratorName"], count)] = (
            _number(r["Price"], file, f"row {line}.Price", problems),
            _number(r["SpotPrice"], file, f"row {line}.SpotPrice", problems))
    rows: list[NodeRow] = []
    for i, r in frame.iterrows():
        shape = instance_shape(r["InstanceType"]) if r["InstanceType"].strip() else None
        if shape is None or shape.cloud != "gcp":
            continue
        gpu_prices = accelerators.get((r["AvailabilityZone"], shape.accelerator,
                                       shape.gpus_per_node))
        if gpu_prices is None:
            continue
        line = int(str(i)) + 2
        host = (_number(r["Price"], file, f"row {line}.Price", problems),
                _number(r["SpotPrice"], file, f"row {line}.SpotPrice", problems))
        on_demand = host[0] + gpu_prices[0]  # NaN when either is missing
        spot = _spot_or_nan(on_demand, host[1] + gpu_prices[1])
        note = (f"; host {host[0]} + {shape.gpus_per_node} x {shape.accelerator} "
                f"{gpu_prices[0]} per hour")
        rows.append((r["InstanceType"], shape.gpu, shape.gpus_per_node, on_demand, spot,
                     r["Region"], r["AvailabilityZone"], note))
    return rows
