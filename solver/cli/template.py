"""``fleetplan template``: write a scenario input workbook (an example, or an existing scenario)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import click

from models.errors import InputError, Problem, format_location
from models.loader import read_document, validate_as
from models.scenario import ScenarioFile
from models.scenario_workbook import read_scenario_workbook
from solver.cli.common import echo_json, given_file, json_option
from solver.outputs.destinations import OutputFile
from solver.outputs.scenario_template import scenario_workbook_bytes, template_scenario


def _rebase(ref: str, source: Path, out: Path) -> str:
    """A path relative to the source scenario, made relative to the workbook written."""
    if ref.startswith("builtin:") or Path(ref).is_absolute():
        return ref
    target = (source.parent / ref).resolve()
    return os.path.relpath(target, out.resolve().parent)


def _from_scenario(source: Path, out: Path) -> ScenarioFile:
    """A scenario file as written, with its relative paths pointing where they did."""
    raw = validate_as(ScenarioFile, read_document(source), str(source))
    tables = tuple(t.model_copy(update={"path": _rebase(t.path, source, out)})
                   for t in raw.price_tables)
    catalog = raw.catalog.model_copy(
        update={"overlays": tuple(_rebase(o, source, out) for o in raw.catalog.overlays)})
    measured_csv = None if raw.measured_csv is None else _rebase(raw.measured_csv, source, out)
    return raw.model_copy(update={"price_tables": tables, "catalog": catalog,
                                  "measured_csv": measured_csv})


#: Top-level scenario keys the workbook's sheets hold (models/scenario_workbook.py).
WORKBOOK_KEYS = frozenset({"name", "description", "catalog", "measured_csv", "zone_names",
                           "workloads", "zones", "measured", "price_tables", "policy"})

#: The fix for what the workbook cannot hold.
NOT_HELD_FIX = ("keep the scenario as YAML, which every command reads as it reads a workbook, "
                "or write the workbook from a copy without it")


def _differences(mine: Any, back: Any, loc: tuple[str | int, ...] = ()
                 ) -> list[tuple[str | int, ...]]:
    """Where a dumped scenario and its reading back differ (the deepest place each)."""
    if mine == back:
        return []
    if isinstance(mine, dict) and isinstance(back, dict):
        return [d for k in mine for d in _differences(mine[k], back.get(k), (*loc, k))]
    if isinstance(mine, list) and isinstance(back, list) and len(mine) == len(back):
        return [d for i, (a, b) in enumerate(zip(mine, back, strict=True))
                for d in _differences(a, b, (*loc, i))]
    return [loc]


def not_held(raw: ScenarioFile, workbook: bytes, source: Path) -> list[Problem]:
    """What of ``raw`` the workbook written from it does not hold: keys no sheet has, and every
    value that reads back otherwise (a fresh clone's `template --from chat.yaml` dropped the
    walk-through's arrival.burst and token p5, and planned as Poisson arrivals; quarterly.yaml's
    horizon, inventory and owned offers gave a workbook `validate` refused)."""
    problems = [Problem(str(source), key, "the scenario workbook has no place for it",
                        NOT_HELD_FIX)
                for key in sorted(raw.model_fields_set - WORKBOOK_KEYS)
                if getattr(raw, key) != type(raw).model_fields[key].default]
    with tempfile.TemporaryDirectory() as tmp:
        book = Path(tmp) / "back.xlsx"
        book.write_bytes(workbook)
        try:
            back = validate_as(ScenarioFile, read_scenario_workbook(book), str(book))
        except InputError as exc:
            reasons = "; ".join(f"{p.location}: {p.message}".removeprefix(": ").replace(
                str(book), "the workbook") for p in exc.problems)
            return [*problems, Problem(str(source), "", "the workbook written from it would "
                                       f"not read back ({reasons})", NOT_HELD_FIX)]
    kept = raw.model_copy(update={k: getattr(back, k) for k in raw.model_fields_set
                                  if k not in WORKBOOK_KEYS})
    problems += [Problem(str(source), format_location(loc),
                         "the scenario workbook has no place for it", NOT_HELD_FIX)
                 for loc in _differences(kept.model_dump(mode="json"),
                                         back.model_dump(mode="json"))]
    return problems


@click.command("template")
@click.option("--out", "out", type=click.Path(path_type=Path), default=Path("scenario.xlsx"),
              show_default=True, help="Workbook to write.")
@click.option("--from", "source", type=click.Path(path_type=Path), default=None,
              callback=given_file(),
              help="Fill the workbook with this YAML/JSON scenario instead of the example.")
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists.")
@json_option
def command(out: Path, source: Path | None, force: bool, as_json: bool) -> None:
    """Write a scenario workbook: sheets scenario, workloads, offers, measured, price_tables,
    policy, with units in the headers and a filled example row. Every command that takes a
    scenario takes the workbook."""
    if out.suffix.lower() != ".xlsx":
        raise InputError([Problem(str(out), "", "the template is an Excel workbook",
                                  "name it with .xlsx")])
    if out.exists() and not force:
        raise InputError([Problem(str(out), "", "exists already",
                                  "pick another --out, or pass --force to overwrite it")])
    with OutputFile(out, "--out", inputs=[source]) as target:
        raw = _from_scenario(source, out) if source is not None else template_scenario()
        workbook = scenario_workbook_bytes(raw)
        lost = [] if source is None else not_held(raw, workbook, source)
        if lost:
            raise InputError(lost)
        target.commit(workbook)
    if as_json:
        echo_json({"out": str(out), "scenario": raw.name,
                   "from": None if source is None else str(source)})
        return
    what = f"scenario {raw.name} from {source}" if source is not None else "the example scenario"
    click.echo(f"wrote {out} ({what}); check it with: fleetplan validate {out}")
