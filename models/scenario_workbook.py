"""Scenarios in Excel: the layout of the scenario workbook, and its reader.

A workbook has one sheet per part of a scenario — ``scenario`` and ``policy`` (setting, value,
unit), ``workloads``, ``offers`` (one row per zone × GPU), ``measured`` and ``price_tables``
(one row each) — with the unit of every column in its header (``peak_rps [req/s]``). The reader
returns the same dict a YAML scenario gives, so every command that takes a scenario takes a
workbook (:func:`models.loader.read_document` reads ``.xlsx`` files with it). Each row is
validated where it is read, so an error names its sheet, row and column.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openpyxl import load_workbook
from openpyxl.utils import get_column_letter
from openpyxl.utils.exceptions import InvalidFileException
from openpyxl.worksheet.worksheet import Worksheet
from pydantic import BaseModel, ValidationError

from models.errors import InputError, Problem, did_you_mean
from models.loader import field_path
from models.measured import MeasuredCapacity
from models.offers import Offer
from models.policy import Policy
from models.scenario import PriceTable
from models.workbook_door import check_workbook
from models.workload import Workload

if TYPE_CHECKING:
    from openpyxl import Workbook

#: How a cell's text becomes a value: text, number, integer, boolean, date, a comma list of
#: texts or numbers, hours (``2,3,4`` or ``2-7``), or time blocks (``night: 2-7; day: 8-23``).
Kind = str


@dataclass(frozen=True)
class Column:
    """One column (or one setting of a key/value sheet) and where its value goes."""

    key: str
    unit: str
    path: tuple[str, ...]
    kind: Kind = "text"
    help: str = ""

    @property
    def title(self) -> str:
        """Header text: the key, then the unit in brackets."""
        return f"{self.key} [{self.unit}]" if self.unit else self.key


def _c(key: str, unit: str = "", path: str | None = None, kind: Kind = "text",
       help: str = "") -> Column:
    return Column(key, unit, tuple((path or key).split(".")), kind, help)


SCENARIO_SETTINGS = (
    _c("name", help="Scenario name (names the output directory)."),
    _c("description"),
    _c("catalog_builtin", path="catalog.builtin", kind="bool",
       help="Start from the built-in GPU and model catalog."),
    _c("catalog_overlays", "files", path="catalog.overlays", kind="texts",
       help="Catalog overlay YAML files, relative to this workbook."),
    _c("measured_csv", "file", help="Measured rows as a configuration-matrix CSV."),
    _c("zone_names", "file", help="`aws ec2 describe-availability-zones --output json`: lets "
       "zones be named as the account names them (us-east-1a)."),
)


WORKLOAD_COLUMNS = (
    _c("name"), _c("model"), _c("precision", help="bf16, fp8, int8 or int4"),
    _c("class", help="interactive or batch"), _c("tenant"), _c("runtime", help="e.g. vllm-0.6.3"),
    _c("peak_rps", "req/s", "arrival.peak_rps", "number",
       help="Busiest-minute arrival rate (interactive); leave empty for a batch volume."),
    _c("hourly_shape", "share of peak, 24 values", "arrival.hourly_shape", "numbers",
       help="24 comma-separated shares of the peak, largest 1.0 (default: flat)."),
    _c("batch_daily_requests", "requests/day", "batch.daily_requests", "number"),
    _c("batch_window_hours", "hours 0-23", "batch.window_hours", "hours",
       help="Hours the batch may run, e.g. 2-7 or 2,3,4"),
    _c("input_p50", "tokens", "input_tokens.p50", "integer"),
    _c("input_p95", "tokens", "input_tokens.p95", "integer"),
    _c("input_p99", "tokens", "input_tokens.p99", "integer"),
    _c("input_mean", "tokens", "input_tokens.mean", "number"),
    _c("output_p50", "tokens", "output_tokens.p50", "integer"),
    _c("output_p95", "tokens", "output_tokens.p95", "integer"),
    _c("output_p99", "tokens", "output_tokens.p99", "integer"),
    _c("output_mean", "tokens", "output_tokens.mean", "number"),
    _c("prefix_cache_hit_rate", "1", kind="number"),
    _c("slo_ttft_p95_ms", "ms", "slo.ttft_p95_ms", "number"),
    _c("slo_tpot_p95_ms", "ms", "slo.tpot_p95_ms", "number"),
    _c("slo_e2e_p95_ms", "ms", "slo.e2e_p95_ms", "number"),
    _c("survivability", help="none, n_plus_1 or zone_loss"),
    _c("allowed_gpus", "comma list", kind="texts", help="Empty: every GPU type."),
    _c("target_utilization", "1", kind="number"),
)


OFFER_COLUMNS = (
    _c("zone", path="zone.id"), _c("region", path="zone.region"), _c("gpu"), _c("instance_type"),
    _c("gpus_per_node", "GPUs", kind="integer"),
    _c("reserved_price", "currency/GPU-hour", "reserved.price_per_gpu_hour", "number"),
    _c("reserved_stock", "GPUs", "reserved.stock_gpus", "integer"),
    _c("reserved_commitment", "months", "reserved.commitment_months", "integer"),
    _c("reserved_lead_time", "weeks", "reserved.lead_time_weeks", "number"),
    _c("on_demand_price", "currency/GPU-hour", "on_demand.price_per_gpu_hour", "number"),
    _c("on_demand_stock", "GPUs", "on_demand.stock_gpus", "integer"),
    _c("on_demand_startup", "min", "on_demand.startup_minutes", "number"),
    _c("spot_price", "currency/GPU-hour", "spot.price_per_gpu_hour", "number"),
    _c("spot_stock", "GPUs", "spot.stock_gpus", "integer"),
    _c("spot_interruption_rate", "1/h", "spot.interruption_rate_per_hour", "number"),
    _c("price_source"),
)


MEASURED_COLUMNS = (
    _c("model"), _c("model_digest"), _c("gpu"), _c("runtime"), _c("precision"),
    _c("tp", "GPUs", kind="integer"), _c("workload"),
    _c("max_stable_sequences", "sequences", kind="integer"),
    _c("tested_peak_rps", "req/s", kind="number",
       help="SLO-holding rate: highest rate at which the test held TTFT and per-token P95."),
    _c("ttft_p95_ms", "ms", kind="number"),
    _c("decode_p95_ms_per_token", "ms/token", kind="number"),
    _c("measured_on", "date", kind="date"),
)


PRICE_TABLE_COLUMNS = (
    _c("path", help="Price catalog relative to this workbook (SkyPilot vms.csv as published, "
       "or a quote CSV), or builtin:aws"),
    _c("layout", help="skypilot-aws, skypilot-gcp, skypilot-azure, fleetplan or quotes "
       "(default: detected)"),
    _c("zones", "comma list", kind="texts"), _c("gpus", "comma list", kind="texts"),
    _c("reserved_discount", "1", "reserved.discount_vs_on_demand", "number"),
    _c("reserved_commitment", "months", "reserved.commitment_months", "integer"),
    _c("reserved_lead_time", "weeks", "reserved.lead_time_weeks", "number"),
    _c("stock_reserved", "GPUs", "stock_gpus.reserved", "integer"),
    _c("stock_on_demand", "GPUs", "stock_gpus.on_demand", "integer"),
    _c("stock_spot", "GPUs", "stock_gpus.spot", "integer"),
    _c("spot_interruption_rate_per_hour", "1/h", kind="number"),
    _c("on_demand_startup_minutes", "min", kind="number"),
)


POLICY_SETTINGS = (
    _c("hours_per_month", "h/month", kind="number"),
    _c("failure_utilization", "1", kind="number",
       help="After a failure a replica may run at this share of its SLO-holding rate."),
    _c("monthly_budget", "currency/month", kind="number"),
    _c("currency"),
    _c("memory_margin_fraction", "1", kind="number"),
    _c("measured_max_age_days", "days", kind="integer"),
    _c("as_of", "date", kind="date"),
    _c("time_blocks", "name: hours; …", kind="blocks",
       help="Slices of the peak day, e.g. night: 0-7; day: 8-23 (default: 24 one-hour slices)."),
    _c("measured_length_tolerance", "1", kind="number",
       help="A measured row whose test lengths (P50, P95) differ from the workload's by more "
            "than this share is stale (default 0.2)."),
)


SETTING_SHEETS = (("scenario", SCENARIO_SETTINGS), ("policy", POLICY_SETTINGS))


README_SHEET = "README"


KNOWN_SHEETS = (README_SHEET, "scenario", "workloads", "offers", "measured", "price_tables",
                "policy")


#: Row sheets: (title, columns, schema a row validates as — ``None`` for offers, checked per zone).
ROW_SHEETS: tuple[tuple[str, tuple[Column, ...]], ...] = (
    ("workloads", WORKLOAD_COLUMNS), ("offers", OFFER_COLUMNS), ("measured", MEASURED_COLUMNS),
    ("price_tables", PRICE_TABLE_COLUMNS),
)

_UNIT = re.compile(r"\s*\[[^\]]*\]\s*$")


class _Cell(Exception):
    """A cell that cannot be read as its column's kind (turned into a located Problem)."""


def _number(value: Any) -> float:
    if isinstance(value, bool):
        raise _Cell("expected a number, got TRUE/FALSE")
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        raise _Cell(f"expected a number, got {str(value)!r}") from None


def _integer(value: Any) -> int:
    number = _number(value)
    if not number.is_integer():
        raise _Cell(f"expected a whole number, got {value}")
    return int(number)


def _hours(value: Any) -> list[int]:
    out: list[int] = []
    for part in str(value).replace(";", ",").split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part[1:]:
            lo, hi = part.split("-", 1)
            out.extend(range(_integer(lo), _integer(hi) + 1))
        else:
            out.append(_integer(part))
    return out


def _blocks(value: Any) -> list[dict[str, Any]]:
    blocks = []
    for part in str(value).split(";"):
        if not part.strip():
            continue
        if ":" not in part:
            raise _Cell(f"expected `name: hours`, got {part.strip()!r}")
        name, hours = part.split(":", 1)
        blocks.append({"name": name.strip(), "hours": _hours(hours)})
    return blocks


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1"):
        return True
    if text in ("false", "no", "0"):
        return False
    raise _Cell(f"expected TRUE or FALSE, got {value!r}")


def _date(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value).strip()


PARSERS: dict[Kind, Callable[[Any], Any]] = {
    "text": lambda v: str(v).strip() if not isinstance(v, float) or not v.is_integer()
    else str(int(v)),
    "number": _number,
    "integer": _integer,
    "bool": _boolean,
    "date": _date,
    "texts": lambda v: [p.strip() for p in str(v).split(",") if p.strip()],
    "numbers": lambda v: [_number(p) for p in str(v).split(",") if p.strip()],
    "hours": _hours,
    "blocks": _blocks,
}


def _set(data: dict[str, Any], path: Sequence[str], value: Any) -> None:
    for key in path[:-1]:
        data = data.setdefault(key, {})
    data[path[-1]] = value


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


@dataclass
class _Reader:
    """Reads one workbook, collecting every problem with its sheet, row and column."""

    file: str
    values: Workbook
    formulas: Workbook
    problems: list[Problem]
    unreadable: set[tuple[str, int, str]] = field(default_factory=set)
    """(sheet, row, column key) of cells already reported as unreadable."""
    positions: dict[str, dict[str, int]] = field(default_factory=dict)
    """Each sheet's known columns by key, read once (a sheet's width is a walk of its cells:
    per problem, ten thousand bad rows took minutes)."""

    def where(self, sheet: str, row: int | None = None, col: int | None = None,
              title: str = "") -> str:
        out = f"sheet `{sheet}`"
        if row is not None:
            out += f", row {row}"
        if col is not None:
            out += f", column {get_column_letter(col)}" + (f" `{title}`" if title else "")
        return out

    def problem(self, where: str, message: str, fix: str = "") -> None:
        self.problems.append(Problem(self.file, where, message, fix))

    def cell(self, sheet: str, row: int, col: int) -> Any:
        value = self.values[sheet].cell(row=row, column=col).value
        if value is None:
            raw = self.formulas[sheet].cell(row=row, column=col).value
            if isinstance(raw, str) and raw.startswith("="):
                self.problem(self.where(sheet, row, col), "a formula without a computed value",
                             "open and save the workbook in a spreadsheet program, or type the "
                             "value")
        return value

    def parse(self, sheet: str, row: int, col: int, column: Column, value: Any) -> Any:
        try:
            return PARSERS[column.kind](value)
        except _Cell as exc:
            self.unreadable.add((sheet, row, column.key))
            self.problem(self.where(sheet, row, col, column.title), str(exc),
                         f"give {column.unit or column.kind}")
            return None

    def header(self, sheet: str, columns: Sequence[Column]) -> dict[int, Column]:
        """Columns of a row sheet by position; unknown or repeated headers are problems."""
        positions, unknown = _header_columns(self.values[sheet], columns)
        for col, title in unknown:
            key = _UNIT.sub("", title).strip()
            if key in {c.key for c in columns}:
                self.problem(self.where(sheet, 1, col), f"column `{key}` appears twice",
                             "keep one")
            else:
                self.problem(self.where(sheet, 1, col), f"unknown column `{title}`",
                             did_you_mean(key, [c.key for c in columns]))
        return positions

    def rows(self, sheet: str, columns: Sequence[Column]) -> list[tuple[int, dict[str, Any]]]:
        """Non-blank rows of a row sheet as (row number, nested dict)."""
        if sheet not in self.values.sheetnames:
            return []
        cols = self.header(sheet, columns)
        out = []
        for r in range(2, self.values[sheet].max_row + 1):
            data: dict[str, Any] = {}
            for col, column in cols.items():
                value = self.cell(sheet, r, col)
                if not _blank(value):
                    parsed = self.parse(sheet, r, col, column, value)
                    if parsed is not None:
                        _set(data, column.path, parsed)
            if data:
                out.append((r, data))
        return out

    def settings(self, sheet: str, settings: Sequence[Column]) -> tuple[dict[str, Any],
                                                                        dict[str, int]]:
        """A key/value sheet as a nested dict, and the row of each setting."""
        data: dict[str, Any] = {}
        rows: dict[str, int] = {}
        if sheet not in self.values.sheetnames:
            return data, rows
        by_key = {s.key: s for s in settings}
        ws = self.values[sheet]
        for r in range(2, ws.max_row + 1):
            key_cell = ws.cell(row=r, column=1).value
            if _blank(key_cell):
                continue
            key = _UNIT.sub("", str(key_cell)).strip()
            if key not in by_key:
                self.problem(self.where(sheet, r, 1), f"unknown setting `{key}`",
                             did_you_mean(key, by_key))
                continue
            rows[key] = r
            value = self.cell(sheet, r, 2)
            if not _blank(value):
                parsed = self.parse(sheet, r, 2, by_key[key], value)
                if parsed is not None:
                    _set(data, by_key[key].path, parsed)
        return data, rows

    def validate(self, model: type[BaseModel], data: Mapping[str, Any], sheet: str, row: int,
                 columns: Sequence[Column]) -> bool:
        """Validate one row as ``model``; each error is located at the column it came from."""
        try:
            model.model_validate(data)
            return True
        except ValidationError as exc:
            for err in exc.errors(include_url=False):
                loc = tuple(str(p) for p in field_path(err["loc"]))
                where = self._locate(sheet, row, columns, loc)
                if where:
                    self.problem(where, err["msg"].removeprefix("Value error, "),
                                 _fix(err["type"]))
            return False

    def _locate(self, sheet: str, row: int, columns: Sequence[Column],
                loc: tuple[str, ...]) -> str:
        if sheet not in self.positions:
            found, _ = _header_columns(self.values[sheet], columns)
            self.positions[sheet] = {c.key: i for i, c in found.items()}
        positions = self.positions[sheet]
        matches = [c for c in columns if c.path[: len(loc)] == loc and loc]
        if matches and (sheet, row, matches[0].key) in self.unreadable:
            return ""  # already reported as unreadable
        if not matches:
            return self.where(sheet, row) + (f" ({'.'.join(loc)})" if loc else "")
        column = matches[0]
        col = positions.get(column.key)
        if sheet in {s for s, _ in SETTING_SHEETS}:
            return self.where(sheet, row, 2, column.key)
        if col is None:
            return self.where(sheet, row) + f": column `{column.title}` is missing"
        return self.where(sheet, row, col, column.title)


def _header_columns(ws: Worksheet, columns: Sequence[Column]
                    ) -> tuple[dict[int, Column], list[tuple[int, str]]]:
    """Known columns of a header row by position, and the unknown or repeated titles."""
    by_key = {c.key: c for c in columns}
    positions: dict[int, Column] = {}
    unknown: list[tuple[int, str]] = []
    for col in range(1, ws.max_column + 1):
        title = ws.cell(row=1, column=col).value
        if _blank(title):
            continue
        key = _UNIT.sub("", str(title)).strip()
        if key in by_key and all(c.key != key for c in positions.values()):
            positions[col] = by_key[key]
        else:
            unknown.append((col, str(title)))
    return positions, unknown


def _fix(error_type: str) -> str:
    return {"missing": "fill this cell", "greater_than": "use a positive value",
            "enum": "use one of the allowed values", "extra_forbidden": "remove this column"
            }.get(error_type, "")


def _zones(reader: _Reader) -> list[dict[str, Any]]:
    """Offer rows grouped into zones, in order of first appearance; regions must agree."""
    zones: dict[str, dict[str, Any]] = {}
    gpu_rows: dict[tuple[str, str], int] = {}
    for r, data in reader.rows("offers", OFFER_COLUMNS):
        zone = data.pop("zone", {})
        zone_id, region = zone.get("id"), zone.get("region")
        if not zone_id or not region:
            missing = "zone" if not zone_id else "region"
            reader.problem(reader.where("offers", r), f"the `{missing}` cell is empty",
                           "every offer row names its zone and region")
            continue
        if not reader.validate(Offer, data, "offers", r, OFFER_COLUMNS):
            continue
        entry = zones.setdefault(zone_id, {"id": zone_id, "region": region, "offers": []})
        if entry["region"] != region:
            reader.problem(reader.where("offers", r), f"zone `{zone_id}` is in region "
                           f"`{entry['region']}` on an earlier row, `{region}` here",
                           "give one region per zone")
        key = (zone_id, str(data.get("gpu")))
        if key in gpu_rows:
            reader.problem(reader.where("offers", r), f"zone `{zone_id}` already offers "
                           f"`{key[1]}` on row {gpu_rows[key]}", "one row per zone and GPU")
            continue
        gpu_rows[key] = r
        entry["offers"].append(data)
    return list(zones.values())


#: Sheets every plan.xlsx has (solver/outputs/workbook.py ``SHEETS``), and no scenario workbook.
PLAN_WORKBOOK_SHEETS = frozenset({"Summary", "Purchase plan"})
#: The workbooks fleetplan writes, by sheets each has: what it is, and what to give instead.
OUTPUT_WORKBOOKS = (
    (PLAN_WORKBOOK_SHEETS,
     ("a plan's workbook (plan.xlsx, written by `fleetplan plan`)",
      "give the plan.json written beside it where a plan or fleet is asked for (--fleet, "
      "--existing), and as SCENARIO the scenario file, or the plan's scenario.resolved.yaml")),
    (frozenset({"Comparison", "Purchase plan"}),
     ("a comparison workbook (written by `fleetplan compare`)",
      "give the scenario file the comparison was made from")),
    (frozenset({"Sweep", "Study"}),
     ("a sweep's workbook (sweep.xlsx, written by `fleetplan sweep`)",
      "give the scenario file the sweep was made from")),
)


def read_scenario_workbook(path: Path) -> dict[str, Any]:
    """Read an input workbook into the dict a YAML scenario gives; errors name sheet/row/column."""
    file = str(path)
    raw, has_formulas = check_workbook(path)
    try:
        values = load_workbook(io.BytesIO(raw), data_only=True)
        # Without formulas both readings are the same cells: read once.
        formulas = load_workbook(io.BytesIO(raw), data_only=False) if has_formulas else values
    except (InvalidFileException, zipfile.BadZipFile, KeyError, OSError, ValueError, TypeError,
            AttributeError, IndexError, SyntaxError, EOFError) as exc:
        # SyntaxError: xml's ParseError (a part cut short); the rest: openpyxl on parts that
        # are well-formed XML but not what a spreadsheet holds.
        raise InputError([Problem(file, "", f"not a readable .xlsx workbook: {exc}",
                                  "save it from Excel or LibreOffice as .xlsx, or start from "
                                  "`fleetplan template`")]) from None
    written = next((what for sheets, what in OUTPUT_WORKBOOKS
                    if set(values.sheetnames) >= sheets), None)
    if written is not None and "scenario" not in values.sheetnames:
        # one problem, not an "unknown sheet" for each of the workbook's sheets
        raise InputError([Problem(file, "", f"{written[0]}, not a scenario workbook",
                                  written[1])])
    reader = _Reader(file, values, formulas, [])
    for sheet in values.sheetnames:
        if sheet not in KNOWN_SHEETS:
            reader.problem(reader.where(sheet), f"unknown sheet `{sheet}`",
                           did_you_mean(sheet, KNOWN_SHEETS))
    for sheet in ("scenario", "workloads"):
        if sheet not in values.sheetnames:
            reader.problem(reader.where(sheet), "sheet is missing",
                           "start from `fleetplan template`")
    doc, rows = reader.settings("scenario", SCENARIO_SETTINGS)
    if "scenario" in values.sheetnames and "name" not in doc:
        reader.problem(reader.where("scenario", rows.get("name")), "the scenario has no name",
                       "fill the value of the `name` setting")
    workloads = []
    for r, data in reader.rows("workloads", WORKLOAD_COLUMNS):
        if reader.validate(Workload, data, "workloads", r, WORKLOAD_COLUMNS):
            workloads.append(data)
    if "workloads" in values.sheetnames and not workloads and not reader.problems:
        reader.problem(reader.where("workloads"), "no workload rows", "add one row per workload")
    doc["workloads"] = workloads
    zones = _zones(reader)
    if zones:
        doc["zones"] = zones
    measured = []
    for r, data in reader.rows("measured", MEASURED_COLUMNS):
        if reader.validate(MeasuredCapacity, data, "measured", r, MEASURED_COLUMNS):
            measured.append(data)
    if measured:
        doc["measured"] = measured
    tables = []
    default_stock = PriceTable(path="x").stock_gpus
    for r, data in reader.rows("price_tables", PRICE_TABLE_COLUMNS):
        if "stock_gpus" in data:  # a kind left empty keeps its default, not zero
            data["stock_gpus"] = {**default_stock, **data["stock_gpus"]}
        if reader.validate(PriceTable, data, "price_tables", r, PRICE_TABLE_COLUMNS):
            tables.append(data)
    if tables:
        doc["price_tables"] = tables
    policy, policy_rows = reader.settings("policy", POLICY_SETTINGS)
    try:
        Policy.model_validate(policy)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            key = str(err["loc"][0]) if err["loc"] else ""
            reader.problem(reader.where("policy", policy_rows.get(key), 2 if key else None,
                                        key), err["msg"].removeprefix("Value error, "),
                           _fix(err["type"]))
    if policy:
        doc["policy"] = policy
    if reader.problems:
        raise InputError(reader.problems)
    return doc
