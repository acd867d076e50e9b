"""``fleetplan template``: write a scenario input workbook (an example, or an existing scenario)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from models.errors import InputError, Problem
from models.loader import read_document, validate_as
from models.scenario import ScenarioFile
from solver.cli.common import echo_json, json_option
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


@click.command("template")
@click.option("--out", "out", type=click.Path(path_type=Path), default=Path("scenario.xlsx"),
              show_default=True, help="Workbook to write.")
@click.option("--from", "source", type=click.Path(path_type=Path), default=None,
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
        target.commit(scenario_workbook_bytes(raw))
    if as_json:
        echo_json({"out": str(out), "scenario": raw.name,
                   "from": None if source is None else str(source)})
        return
    what = f"scenario {raw.name} from {source}" if source is not None else "the example scenario"
    click.echo(f"wrote {out} ({what}); check it with: fleetplan validate {out}")
