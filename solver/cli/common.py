"""Options and helpers shared by the commands (declared once)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from inputs import demo_scenario
from models.loader import load_scenario
from models.scenario import Scenario
from solver.atomic import write_atomic

__all__ = ["echo_json", "json_option", "load", "scenario_argument", "write_atomic"]

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")


def scenario_argument(required: bool = False) -> Any:
    """SCENARIO argument; when optional, the built-in demo is used."""
    return click.argument("scenario", required=required, type=click.Path(path_type=Path))


def load(scenario: Path | None) -> Scenario:
    """Load a scenario file, or the built-in demo when none is named."""
    return load_scenario(scenario if scenario is not None else demo_scenario())


def echo_json(data: Any) -> None:
    """Print JSON deterministically (sorted keys are not used: field order is meaningful)."""
    click.echo(json.dumps(data, indent=2, default=str))
