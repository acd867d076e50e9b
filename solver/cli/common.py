"""Options and helpers shared by the commands (declared once).

Every command imports this module, ``validate`` at start-up too: what only commands that write
files need (solver.outputs.atomic, solver.outputs.destinations) is imported by those commands.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from inputs import demo_scenario
from models.errors import InputError, Problem
from models.loader import load_scenario
from models.scenario import Scenario
from solver.solve import SOLVERS

__all__ = ["echo_json", "finite", "given_file", "json_option", "load", "read_as_given",
           "scenario_argument", "solve_options", "sources_of", "time_limit_given"]

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")

F = TypeVar("F", bound=Callable[..., Any])


#: ``--time-limit`` when not given, for a plan of one period [s] (over periods: the work limits
#: and the safety stop, :func:`solver.solve.clock.horizon_limits`).
TIME_LIMIT_S = 60.0


def solve_options(time_limit_help: str = "Solver time limit [s] (default: {default:g})."
                  ) -> Callable[[F], F]:
    """``--solver``, ``--time-limit`` (``time_limit_s``) and ``--gap``: every command that
    solves the integer program takes the same three.

    ``time_limit_help`` says the limit's default itself (``{default}``: :data:`TIME_LIMIT_S`,
    ``{safety}``: :data:`~solver.solve.clock.HORIZON_SAFETY_S`): click's ``[default: 60.0]``
    was untrue of a plan over periods, which without the option ends at its work limits."""
    from solver.solve.clock import HORIZON_SAFETY_S  # the clock alone: no solver imported

    options = (
        click.option("--solver", type=click.Choice(SOLVERS), default="highs", show_default=True,
                     help="MIP solver."),
        click.option("--time-limit", "time_limit_s", type=click.FloatRange(min=0.1),
                     default=TIME_LIMIT_S,
                     help=time_limit_help.format(default=TIME_LIMIT_S, safety=HORIZON_SAFETY_S),
                     callback=finite),
        click.option("--gap", type=click.FloatRange(min=0.0, max=1.0), default=0.01,
                     show_default=True, help="Relative MIP gap at which to stop.",
                     callback=finite),
    )

    def apply(f: F) -> F:
        for option in reversed(options):  # as if stacked in this order above the command
            f = option(f)
        return f

    return apply


def time_limit_given() -> bool:
    """Whether this command's ``--time-limit`` was given rather than left at its default: a plan
    over periods without one ends at its work limits (:func:`solver.solve.clock.horizon_limits`)."""
    return click.get_current_context().get_parameter_source("time_limit_s") not in (
        ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)


def given_file(fix: Callable[[Path], str] | None = None) -> Callable[..., Any]:
    """Callback for an option that names a file to read: a path not found is refused naming the
    option, the path and the fix (an :class:`InputError`, exit 2) — `check --fleet nothere.json`
    said "nothere.json: file not found — check the path", with no word of which option it was.
    ``fix`` gives a fix of the option's own for the path (e.g. where a public trace is got).
    Every other refusal (a directory, a device, too large) stays the reader's."""

    def check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        option = max(param.opts, key=len)
        paths = value if isinstance(value, tuple) else (value,)
        for path in paths:
            if path is None:
                continue
            try:
                path.stat()
            except FileNotFoundError:
                raise InputError([Problem(
                    str(path), "", f"file not found (the path given to {option})",
                    fix(path) if fix is not None else f"check the path given to {option}",
                )]) from None
            except (OSError, ValueError):  # unreadable, a NUL byte: the reader says which
                continue
        return value

    return check


@contextlib.contextmanager
def read_as_given(option: str, path: Path) -> Iterator[None]:
    """Inside, a reader's refusal of ``path`` says it is the path given to ``option``, as a
    path not found does (:func:`given_file`): `simulate --trace empty.csv` said "empty.csv:
    empty file: no requests" with no word of the option."""
    try:
        yield
    except InputError as err:
        named = f" (the path given to {option})"
        raise InputError([dataclasses.replace(p, message=p.message + named)
                          if p.file == str(path) and named not in p.message else p
                          for p in err.problems]) from None


def scenario_argument(required: bool = False) -> Any:
    """SCENARIO argument; when optional, the built-in demo is used."""
    return click.argument("scenario", required=required, type=click.Path(path_type=Path))


def load(scenario: Path | None) -> Scenario:
    """Load a scenario file, or the built-in demo when none is named; a workload that links a
    trace and states no ``arrival.burst`` gets the block measured from its trace, and a stated
    block naming ``measured_from`` is checked against that trace
    (:func:`~solver.replay.trace_burst.with_trace_bursts`); a linked trace carries the
    arrivals the plan's replay replays, which the capacity model's TTFT is taken over
    (:func:`~solver.replay.plan_replay.with_replay_windows`)."""
    sc = load_scenario(scenario if scenario is not None else demo_scenario())
    if not any(w.arrival is not None and (
            w.arrival.trace is not None
            or (w.arrival.burst is not None and w.arrival.burst.measured_from is not None))
               for w in sc.workloads):
        return sc
    from solver.replay.plan_replay import with_replay_windows  # numpy: only where a trace is
    from solver.replay.trace_burst import located_in_scenario, with_trace_bursts

    try:
        return with_replay_windows(with_trace_bursts(sc))
    except InputError as err:  # a linked trace unreadable: named with the field linking it
        raise type(err)(located_in_scenario(sc, err.problems)) from None


def sources_of(scenarios: Iterable[Scenario]) -> list[str]:
    """Every file the scenarios were read from (scenario, overlays, tables, measurements): the
    inputs an output must not replace."""
    return [source for sc in scenarios for source in sc.sources]


def echo_json(data: Any) -> None:
    """Print JSON deterministically (sorted keys are not used: field order is meaningful)."""
    click.echo(json.dumps(data, indent=2, default=str))


def finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """Option callback: refuse ``nan`` and ``inf``, which click's ranges let through."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number; give a number")
    return value

