"""The ``fleetplan`` command line: a thin click group; each command lives in its own module.

Every command goes parse → validate → compute → write. Bad input becomes a one-paragraph
message and exit code 2, never a traceback.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator
from typing import Any

import click

from models.errors import InputError
from models.text import InertStream

#: Command modules under ``solver.cli``; each defines a click command named ``command``.
COMMAND_MODULES = ("validate", "calibrate", "profile", "forecast", "estimate", "capacity", "check",
                   "simulate", "template", "plan", "compare", "sweep", "import_bench")


class FleetplanGroup(click.Group):
    """Click group that turns input errors into clean messages and exit code 2, and shows
    every control character it prints escaped (:class:`models.text.InertStream`): a name or a
    path holding a terminal escape sequence is shown, never run."""

    def invoke(self, ctx: click.Context) -> Any:
        with inert_terminal():
            try:
                return super().invoke(ctx)
            except InputError as exc:
                click.echo(exc.render(), err=True)
                ctx.exit(2)
            except OSError as exc:  # the file system refused: a path given or written
                where = exc.filename if exc.filename is not None else "a file"
                click.echo(f"cannot read or write {where}: {exc.strerror or exc}", err=True)
                ctx.exit(2)


@contextlib.contextmanager
def inert_terminal() -> Iterator[None]:
    """Standard output and error pass through :class:`~models.text.InertStream` meanwhile."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = InertStream(out), InertStream(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


@click.group(cls=FleetplanGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fleetplan")
def main() -> None:
    """fleetplan: size a GPU fleet for LLM inference — which GPUs, how many, where, bought how."""


for _name in COMMAND_MODULES:
    main.add_command(importlib.import_module(f"solver.cli.{_name}").command)
