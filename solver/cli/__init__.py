"""The ``fleetplan`` command line: a thin click group; each command lives in its own module.

Every command goes parse → validate → compute → write. Bad input becomes a one-paragraph
message and exit code 2, never a traceback.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from models.errors import InputError

#: Command modules under ``solver.cli``; each defines a click command named ``command``.
COMMAND_MODULES = ("validate", "calibrate", "profile", "forecast", "estimate", "capacity", "check",
                   "simulate", "template", "plan", "compare", "sweep", "import_bench")


class FleetplanGroup(click.Group):
    """Click group that turns input errors into clean messages and exit code 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except InputError as exc:
            click.echo(exc.render(), err=True)
            ctx.exit(2)


@click.group(cls=FleetplanGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fleetplan")
def main() -> None:
    """fleetplan: size a GPU fleet for LLM inference — which GPUs, how many, where, bought how."""


for _name in COMMAND_MODULES:
    main.add_command(importlib.import_module(f"solver.cli.{_name}").command)
