"""The ``fleetplan`` command line: a thin click group; each command lives in its own module.

Every command goes parse → validate → compute → write. Bad input becomes a one-paragraph
message and exit code 2, never a traceback; with ``--json`` it is also a JSON object on
standard output (:func:`error_json`). A reader that closes the pipe early (``| head``) ends the
command quietly, as it ends a Unix tool (:func:`quiet_broken_pipe`).

Start-up stays fast: a command's module (and what it needs: pandas, the solver, openpyxl,
matplotlib) is imported only when that command runs. ``fleetplan --help`` lists the commands
from :data:`COMMANDS` without importing any of them.

A command run as this process's own command line (the ``fleetplan`` script, ``python -m``)
counts its seconds from the process's start (:func:`command_origin`): ``plan --time-limit``
is the user's stopwatch, the interpreter's start and the imports included.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import click

from models.errors import InputError, Problem
from models.text import InertStream
from solver.solve.clock import Origin, process_origin

#: When this package was imported: the clock's origin where the process's start cannot be read.
IMPORTED = Origin.now()


class CommandEntry(NamedTuple):
    """Where a command lives and the line ``fleetplan --help`` shows for it."""

    module: str
    """Module under ``solver.cli`` defining a click command named ``command``."""
    short_help: str
    """The first line of the command's docstring (a test keeps the two the same)."""


#: Every command, in the order ``fleetplan --help`` lists them.
COMMANDS: dict[str, CommandEntry] = {
    "validate": CommandEntry("validate", "Check SCENARIO (default: the built-in demo) and print "
                                         "a one-screen summary."),
    "estimate": CommandEntry("estimate", "Memory, KV capacity, TTFT, time per output token and "
                                         "throughput of one replica."),
    "capacity": CommandEntry("capacity", "What one replica of each configuration carries under "
                                         "each workload's SLO."),
    "plan": CommandEntry("plan", "Plan the cheapest fleet for SCENARIO (default: the built-in "
                                 "demo)."),
    "check": CommandEntry("check", "Check FLEET against SCENARIO (default: the built-in demo) "
                                   "under every failure domain."),
    "simulate": CommandEntry("simulate", "Replay TRACE on the replicas FLEET gives a workload "
                                         "of SCENARIO (default: the demo)."),
    "profile": CommandEntry("profile", "Profile TRACE: arrival rates, token-length percentiles, "
                                       "prefix reuse, daily shape."),
    "forecast": CommandEntry("forecast", "Forecast growth per period from HISTORY.csv (date, "
                                         "workload, peak_rps: each day's peak)."),
    "sweep": CommandEntry("sweep", "Plan every variant of SCENARIO (default: the built-in demo) "
                                   "that the --vary options describe, and tabulate them: "
                                   "sweep.csv, sweep.xlsx, tornado.png in --out."),
    "import-bench": CommandEntry("import_bench", "Turn FILES of one load-tested configuration "
                                                 "into its measured capacity row."),
    "compare": CommandEntry("compare", "Plan SCENARIO… (default: the built-in demo), or variants "
                                       "of them, and compare them."),
    "calibrate": CommandEntry("calibrate", "Fit the efficiency factors to MEASUREMENTS and write "
                                           "a catalog overlay."),
    "template": CommandEntry("template", "Write a scenario workbook: sheets scenario, workloads, "
                                         "offers, measured, price_tables, policy, with units in "
                                         "the headers and a filled example row."),
}


#: Key of :attr:`click.Context.meta` holding the :class:`Origin` of a process's own command.
ORIGIN_META = "fleetplan.origin"
#: Key of :attr:`click.Context.meta` a command sets to end its process without the
#: interpreter's teardown (:func:`quick_exit`).
QUICK_EXIT_META = "fleetplan.quick_exit"


def command_origin() -> Origin:
    """Where the running command's clock starts: the process's start when the command is the
    process's own command line, else (a command invoked by a program or a test) now."""
    origin = click.get_current_context().meta.get(ORIGIN_META)
    return origin if isinstance(origin, Origin) else Origin.now()


class FleetplanGroup(click.Group):
    """Click group that loads a command when it runs, turns input errors into clean messages
    with exit code 2, and shows every control character it prints escaped
    (:class:`models.text.InertStream`): a name or a path holding a terminal escape sequence is
    shown, never run."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        command: click.Command = importlib.import_module(f"solver.cli.{entry.module}").command
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        """A command :data:`COMMANDS` lacks fails with :func:`unknown_command_message`: click's
        "No such command 'show'." named neither the commands nor where a plan's summary is."""
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:  # args[0]: the name it could not find
            raise click.UsageError(unknown_command_message(str(args[0])), ctx) from exc

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from :data:`COMMANDS`: no command module is imported for help."""
        with formatter.section("Commands"):
            formatter.write_dl([(name, entry.short_help) for name, entry in COMMANDS.items()])

    def main(self, args: Sequence[str] | None = None, *rest: Any, **extra: Any) -> Any:
        """As click's; with no ``args`` the command line is this process's own, whose start
        the command's clock counts from (:func:`command_origin`), and which a command may end
        with :func:`quick_exit`."""
        self.origin = process_origin(IMPORTED) if args is None else None
        self.meta: dict[str, Any] = {}
        try:
            return super().main(args, *rest, **extra)
        except SystemExit as exc:
            if self.origin is not None and self.meta.get(QUICK_EXIT_META):
                quick_exit(exc.code)
            raise

    def invoke(self, ctx: click.Context) -> Any:
        self.meta = ctx.meta
        if getattr(self, "origin", None) is not None:
            ctx.meta[ORIGIN_META] = self.origin
        wants_json = "--json" in ctx.args  # the command's own arguments, not yet parsed
        with inert_terminal():
            try:
                try:
                    return super().invoke(ctx)
                finally:
                    sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
            except BrokenPipeError:
                quiet_broken_pipe()
            except InputError as exc:
                fail(ctx, exc.render(), exc.problems, wants_json)
            except OSError as exc:  # the file system refused: a path given or written
                where = exc.filename if exc.filename is not None else "a file"
                message = f"cannot read or write {where}: {exc.strerror or exc}"
                fail(ctx, message, [Problem(str(where), "", str(exc.strerror or exc))],
                     wants_json)
            except click.ClickException as exc:  # a bad option: click prints it on stderr
                if wants_json:
                    click.echo(error_json(exc.format_message(), []))
                raise
            except KeyboardInterrupt:  # was click's "Aborted!", exit 1 (plan, compare and
                # sweep say more where they catch it themselves)
                click.echo(INTERRUPTED, err=True)
                ctx.exit(INTERRUPTED_EXIT)


def quick_exit(code: object) -> None:
    """End the process now with ``code`` (as :class:`SystemExit` reads it), its output
    flushed, skipping the interpreter's teardown: after a plan (pandas, matplotlib, HiGHS
    loaded) that teardown took 0.3 CPU-s, 1.9–2.5 s of wall time at load 8, past the time
    limit the user gave. Only for a command that leaves nothing to clean up at exit (``plan``:
    its files are written and renamed into place, its threads done)."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # a message: printed as the interpreter prints it
        print(code, file=sys.stderr)
        status = 1
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            if stream is not None:
                stream.flush()
    os._exit(status)


def unknown_command_message(name: str) -> str:
    """What ``fleetplan NAME`` says when no command is NAME: the closest command names, every
    command, and where a plan is read by people (a new user typed ``fleetplan show`` after
    ``plan`` to see it: ``report.md`` in the plan's output directory)."""
    close = difflib.get_close_matches(name, COMMANDS, n=2)
    maybe = f" Did you mean {' or '.join(f'`{c}`' for c in close)}?" if close else ""
    return (f"no command `{name}`.{maybe} The commands: {', '.join(COMMANDS)} "
            "(`fleetplan --help` says what each does). To read a plan: `fleetplan plan` writes "
            "its human-readable summary to report.md in the plan's output directory "
            "(outputs/<scenario name>/report.md, or the directory given by --out), beside "
            "plan.xlsx and plan.json.")


#: What a command stopped by Ctrl-C says: every output is written whole (staged, then renamed)
#: or not at all.
INTERRUPTED = ("interrupted (Ctrl-C): stopped; no output was written in part (each is written "
               "whole or not at all)")
#: 128 + SIGINT, as a shell reports a process that signal stopped.
INTERRUPTED_EXIT = 130


#: Exit status of a process the pipe's reader left: 128 + SIGPIPE, as a shell reports a tool
#: that signal stopped (``yes | head -1; echo ${PIPESTATUS[0]}`` prints 141).
BROKEN_PIPE_EXIT = 141


def quiet_broken_pipe() -> None:
    """End quietly after the reader of standard output went away (``fleetplan … | head``).

    Python turns SIGPIPE into :class:`BrokenPipeError`; the output still buffered would raise it
    again at exit, so standard output and error are pointed at the null device first (Python's
    documentation of ``signal`` shows the same). SIGPIPE itself is not restored to its default:
    it would also stop the process on a closed socket (Ray's workers).
    """
    null = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            if stream is not None:
                os.dup2(null, stream.fileno())
    os.close(null)
    raise SystemExit(BROKEN_PIPE_EXIT)


def error_json(message: str, problems: Sequence[Problem]) -> str:
    """What ``--json`` prints on bad input: ``valid: false``, the message people read, and each
    problem's file, field (the place in the file), message and fix."""
    return json.dumps({"valid": False, "error": message,
                       "problems": [{"file": p.file, "field": p.location, "message": p.message,
                                     "fix": p.fix} for p in problems]}, indent=2)


def fail(ctx: click.Context, message: str, problems: Sequence[Problem], as_json: bool) -> None:
    """Bad input: the message on stderr (and its JSON on stdout with ``--json``), exit 2."""
    if as_json:
        click.echo(error_json(message, problems))
    click.echo(message, err=True)
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
