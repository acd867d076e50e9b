"""``fleetplan validate``: load a scenario and say what is in it, or everything wrong with it."""

from __future__ import annotations

from pathlib import Path

import click

from solver.cli.common import echo_json, json_option, load, scenario_argument


@click.command("validate")
@scenario_argument()
@json_option
def command(scenario: Path | None, as_json: bool) -> None:
    """Check SCENARIO (default: the built-in demo) and print a one-screen summary."""
    sc = load(scenario)
    if as_json:
        echo_json({"name": sc.name, "workloads": [w.name for w in sc.workloads],
                   "zones": [z.id for z in sc.zones], "gpus": [g.name for g in sc.gpus]})
        return
    click.echo(f"scenario {sc.name}: {len(sc.workloads)} workloads, {len(sc.zones)} zones, "
               f"{len(sc.gpus)} GPU types, {len(sc.models)} models — valid")
