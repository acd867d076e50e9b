"""The scenario input workbook: a template to fill in, or an existing scenario as a workbook.

The layout (sheets, columns and their units) is :mod:`models.scenario_workbook`'s, which also
reads a filled-in workbook back as a scenario.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from openpyxl import Workbook
from openpyxl.comments import Comment
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet
from pydantic import BaseModel

from models.errors import InputError, Problem
from models.scenario import ScenarioFile
from models.scenario_workbook import (
    MEASURED_COLUMNS,
    OFFER_COLUMNS,
    POLICY_SETTINGS,
    PRICE_TABLE_COLUMNS,
    README_SHEET,
    SCENARIO_SETTINGS,
    WORKLOAD_COLUMNS,
    Column,
    Kind,
)
from models.text import FORMULA_STARTS, cell_text
from solver.outputs.xlsx_bytes import stamp_of, workbook_bytes

HEADER_FONT = Font(bold=True)
HEADER_FILL = PatternFill("solid", fgColor="DDE4EE")


def _get(data: Mapping[str, Any], path: Sequence[str]) -> Any:
    value: Any = data
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def _hours_text(hours: Sequence[int]) -> str:
    return ",".join(str(h) for h in hours)


def _format(value: Any, kind: Kind) -> Any:
    """A model value as a cell value (lists as comma text, time blocks as ``name: hours; …``)."""
    if value is None:
        return None
    if kind in ("texts", "numbers", "hours"):
        return ",".join(str(v) for v in value)
    if kind == "blocks":
        return "; ".join(f"{b['name']}: {_hours_text(b['hours'])}" for b in value)
    return value


def _text_cell(ws: Worksheet, row: int, col: int, value: Any) -> None:
    cell = ws.cell(row=row, column=col, value=cell_text(value) if isinstance(value, str)
                   else value)
    if isinstance(value, str):
        cell.data_type = "s"  # a text starting with "=" stays text
        if value.startswith(FORMULA_STARTS):
            cell.quotePrefix = True


def _header(ws: Worksheet, titles: Sequence[str], helps: Sequence[str] = ()) -> None:
    for i, title in enumerate(titles, start=1):
        _text_cell(ws, 1, i, title)
        cell = ws.cell(row=1, column=i)
        cell.font, cell.fill = HEADER_FONT, HEADER_FILL
        cell.alignment = Alignment(wrap_text=True, vertical="top")
        if i <= len(helps) and helps[i - 1]:
            cell.comment = Comment(helps[i - 1], "fleetplan")
        width = min(max(len(title) + 2, 10), 40)
        ws.column_dimensions[get_column_letter(i)].width = width
    ws.freeze_panes = "A2"


def _write_rows(ws: Worksheet, columns: Sequence[Column],
                rows: Sequence[Mapping[str, Any]]) -> None:
    _header(ws, [c.title for c in columns], [c.help for c in columns])
    for r, data in enumerate(rows, start=2):
        for i, col in enumerate(columns, start=1):
            _text_cell(ws, r, i, _format(_get(data, col.path), col.kind))


def _write_settings(ws: Worksheet, settings: Sequence[Column], data: Mapping[str, Any]) -> None:
    _header(ws, ["setting", "value", "unit", "meaning"])
    ws.column_dimensions["B"].width = 40
    ws.column_dimensions["D"].width = 60
    for r, s in enumerate(settings, start=2):
        for i, value in enumerate((s.key, _format(_get(data, s.path), s.kind), s.unit, s.help),
                                  start=1):
            _text_cell(ws, r, i, value)


def _dump(model: BaseModel) -> dict[str, Any]:
    # what the file leaves unset stays a blank cell (its default when read back: a quote with
    # no lead time is read as one whose lead time is assumed, as from the YAML)
    return model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)


def scenario_workbook(raw: ScenarioFile) -> Workbook:
    """An input workbook holding a scenario file (catalog entries must live in overlay files)."""
    if raw.catalog.gpus or raw.catalog.models:
        raise InputError([Problem(raw.name, "catalog", "catalog entries do not fit a workbook",
                                  "move them to an overlay file and list it in catalog_overlays")])
    data = _dump(raw)
    wb = Workbook()
    readme = wb.active
    readme.title = README_SHEET
    for r, line in enumerate(README_LINES, start=1):
        _text_cell(readme, r, 1, line)
    readme.column_dimensions["A"].width = 110
    _write_settings(wb.create_sheet("scenario"), SCENARIO_SETTINGS, data)
    _write_rows(wb.create_sheet("workloads"), WORKLOAD_COLUMNS, data.get("workloads", []))
    offers = [{**o, "zone": {"id": z["id"], "region": z["region"]}}
              for z in data.get("zones", []) for o in z.get("offers", [])]
    _write_rows(wb.create_sheet("offers"), OFFER_COLUMNS, offers)
    _write_rows(wb.create_sheet("measured"), MEASURED_COLUMNS, data.get("measured", []))
    _write_rows(wb.create_sheet("price_tables"), PRICE_TABLE_COLUMNS, data.get("price_tables", []))
    _write_settings(wb.create_sheet("policy"), POLICY_SETTINGS, data.get("policy", {}))
    return wb


README_LINES = (
    "fleetplan scenario workbook: every command that takes a scenario takes this file.",
    "",
    "Sheets: scenario and policy (one setting per row), workloads, offers (one row per zone and "
    "GPU type), measured (load-tested configurations), price_tables (prices imported from a CSV).",
    "Units are in the column headers; hover a header for its meaning. Leave a cell empty to take "
    "the default. Lists are comma-separated; hours may be ranges (2-7).",
    "Each sheet holds a filled EXAMPLE row: replace it with your own. The measured sheet is "
    "empty: add a row per load-tested configuration (fleetplan import-bench writes them).",
    "GPU and model catalog entries are not edited here: use a catalog overlay YAML "
    "(scenario sheet, catalog_overlays).",
)


def template_scenario() -> ScenarioFile:
    """The example the template is filled with: a valid scenario on the built-in catalog."""
    return ScenarioFile.model_validate({
        "name": "my-scenario",
        "description": "One chat pool on L4 in two AWS zones (example: replace every row).",
        "zones": [{"id": "use1-az1", "region": "us-east-1", "offers": [
            {"gpu": "L4", "instance_type": "g6.12xlarge", "gpus_per_node": 4,
             "reserved": {"price_per_gpu_hour": 0.70, "stock_gpus": 16, "commitment_months": 12,
                          "lead_time_weeks": 4},
             "on_demand": {"price_per_gpu_hour": 1.15, "stock_gpus": 32, "startup_minutes": 10},
             "price_source": "example price: replace with your quote"}]}],
        "price_tables": [{"path": "builtin:aws", "zones": ["use1-az2"], "gpus": ["L4"],
                          "reserved": {"discount_vs_on_demand": 0.4, "commitment_months": 12}}],
        "workloads": [{
            "name": "chat", "model": "Llama-3.1-8B", "precision": "bf16", "class": "interactive",
            "tenant": "assistant", "runtime": "vllm",
            "arrival": {"peak_rps": 4, "hourly_shape": [0.5] * 8 + [1.0] * 16},
            "input_tokens": {"p50": 1000, "p95": 4000, "p99": 6000, "mean": 1200},
            "output_tokens": {"p50": 200, "p95": 450, "p99": 600, "mean": 220},
            "slo": {"ttft_p95_ms": 1000, "tpot_p95_ms": 50}, "survivability": "n_plus_1",
            "allowed_gpus": ["L4"]}],
        "policy": {"hours_per_month": 730, "currency": "USD",
                   "time_blocks": [{"name": "night", "hours": list(range(8))},
                                   {"name": "day", "hours": list(range(8, 24))}]},
    })


def template_workbook() -> Workbook:
    """The input template ``fleetplan template`` writes."""
    return scenario_workbook(template_scenario())


def scenario_workbook_bytes(raw: ScenarioFile) -> bytes:
    """:func:`scenario_workbook` as bytes, stamped with the scenario's ``policy.as_of``."""
    return workbook_bytes(scenario_workbook(raw), stamp_of(raw.policy.as_of))


