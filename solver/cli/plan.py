"""``fleetplan plan``: the cheapest fleet for a scenario, written to ``outputs/<scenario>/``."""

from __future__ import annotations

import math
import os
import signal
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path

import click

from models.capacity import CapacityTable
from models.common import CLOUD_KINDS, PurchaseKind
from models.errors import InputError, Problem
from models.loader import read_document
from models.plan import (
    CAPACITY_STAGE,
    READ_STAGE,
    Plan,
    Replanned,
    SolverStage,
    SolveStatus,
    with_gap_limit,
)
from models.scenario import Scenario
from solver.capacity.measured import implausible_measurements, stale_measurements
from solver.capacity.table import build_capacity_table, cached_tables
from solver.cli import QUICK_EXIT_META, command_origin
from solver.cli.common import (
    echo_json,
    given_file,
    json_option,
    load,
    scenario_argument,
    solve_options,
    time_limit_given,
)
from solver.cli.lead_times import past_order_lines, with_date_warnings, with_lead_time_causes
from solver.cli.progress import STOP_NOTICE, SolveReporter, stop_on_signals
from solver.cli.replay_step import (
    replay_lines,
    replayed_first_period,
    replayed_plan,
    status_note,
)
from solver.cli.show import Col, is_terminal, progress, table_lines
from solver.cli.signoff import sign_off, sign_off_periods
from solver.cli.validate import scenario_warnings
from solver.outputs.assumptions import borrowed_sentence
from solver.outputs.destinations import PlanDirectory
from solver.outputs.figures import (
    Margin,
    peak_utilization,
    slice_figures,
    survivability_margins,
)
from solver.outputs.labels import (
    RERUN_NOTE,
    TO_EXCLUSIVE,
    WORK_LIMIT_HELP,
    WORK_LIMIT_NOTE,
    config_label,
    failure_label,
    label,
    margin_label,
    plural,
    status_label,
)
from solver.outputs.plan_dir import (
    PLAN_DIR_FILES,
    import_writers_beside,
    with_inventory,
    write_plan_outputs,
    write_seconds,
)
from solver.outputs.schedule import schedule_lines, work_limited
from solver.outputs.slo_cause import with_slo_causes
from solver.program.data import ELASTIC_KINDS
from solver.program.orders import plan_date_of
from solver.solve.assemble import solver_summary
from solver.solve.clock import HORIZON_SAFETY_S, Deadline, Origin, horizon_limits
from solver.solve.highs import Progress
from solver.solve.horizon import first_period_scenario, keep_orders, plan_horizon
from solver.solve.replan import replan_workloads
from solver.solve.replay_loop import replay_misses
from solver.solve.strategy import plan_scenario
from solver.survivability.fleet import is_plan_document, plan_document

#: Bytes of a directory name on common file systems (ext4, xfs, btrfs, APFS, NTFS: 255).
NAME_MAX_BYTES = 255

#: Statuses that may carry a fleet (exit 0 when they do; ``interrupted`` exits 128 + the
#: signal's number, as a shell reports a process a signal stopped); the others exit 1.
HAS_FLEET = (SolveStatus.optimal, SolveStatus.feasible, SolveStatus.time_limit,
             SolveStatus.interrupted)


def gpu_table(plan: Plan, scenario: Scenario | None = None) -> list[str]:
    """GPUs by type × zone × purchase kind: reserved, and the most elastic in any slice; zones
    with the account's name beside the id where the scenario maps one."""
    peak: dict[tuple[str, str, PurchaseKind], int] = defaultdict(int)
    for n in plan.nodes:
        key = (n.gpu, n.zone, n.purchase)
        peak[key] = max(peak[key], n.gpus)
    kinds = [k for k in PurchaseKind if any(key[2] is k for key in peak)] or list(CLOUD_KINDS)
    rows = [(gpu, scenario.zone_label(zone) if scenario is not None else zone,
             *(peak.get((gpu, zone, k), 0) for k in kinds))
            for gpu, zone in sorted({(g, z) for g, z, _ in peak})]
    elastic = [label(k).lower() for k in kinds if k in ELASTIC_KINDS]
    note = ([f"  ({' and '.join(elastic)}: the most running in any slice)"] if elastic else [])
    return [*table_lines(["GPU", "Zone", *(Col(f"{label(k)} [GPUs]", right=True)
                                           for k in kinds)], rows), *note]


def workload_lines(plan: Plan, scenario: Scenario) -> list[str]:
    """Per workload: configurations used and peak utilization of the SLO-holding rate (as the
    report and workbook give it: :func:`solver.outputs.figures.peak_utilization`)."""
    rows = []
    figures = slice_figures(plan, scenario)
    for wl in sorted(scenario.workloads, key=lambda w: w.name):
        configs = sorted({f"{config_label(a.gpu, a.tp)} {label(a.capacity_source).lower()}"
                          for a in plan.allocations if a.workload == wl.name})
        util = peak_utilization(figures, wl.name)
        cost = next((c for c in plan.workload_costs if c.workload == wl.name), None)
        per_mtok = None if cost is None or cost.per_million_tokens is None else (
            f"{cost.per_million_tokens:,.3f}")
        rows.append((wl.name, "; ".join(configs) or None,
                     None if util is None else f"{util:.1%}", per_mtok))
    return table_lines(["Workload", "Configurations (capacity)",
                        Col("Peak utilization", right=True),
                        Col(f"Cost [{plan.cost.currency}/Mtok]", right=True)], rows)


def survivability_lines(plan: Plan) -> list[str]:
    """Per workload: the failures it must survive, and the worst margin over slices
    (:func:`~solver.outputs.figures.survivability_margins`, as the report and workbook give it)."""
    by_workload: dict[str, list[Margin]] = {}
    for m in survivability_margins(plan):
        if m.failure != "none" and m.margin is not None:
            by_workload.setdefault(m.workload, []).append(m)
    rows = []
    for w, items in sorted(by_workload.items()):
        failing = sorted(m.failure for m in items if not m.holds)
        tightest = min(items, key=lambda m: (m.margin, m.failure))
        assert tightest.margin is not None  # kept above only with a margin
        verdict = "holds" if not failing else "FAILS " + ", ".join(
            failure_label(f) for f in failing)
        rows.append((w, len(items), verdict, failure_label(tightest.failure),
                     margin_label(tightest.margin)))
    if not rows:
        return ["  no workload asks to survive the loss of a node or a zone"]
    return table_lines(["Workload", Col("Failures checked", right=True), "Result",
                        "Tightest failure", Col("Its margin", right=True)], rows)


def unproven_lines(plan: Plan, scenario: Scenario) -> list[str]:
    """What a plan stopped at its time limit (or, over periods, at its search limit) proves,
    and how to prove more (else nothing)."""
    s = plan.solver
    stopped = plan.status is SolveStatus.interrupted
    searched = work_limited(plan)
    if plan.status is not SolveStatus.time_limit and not stopped and not searched:
        return []
    cur, h = plan.cost.currency, plan.horizon
    if stopped and replay_misses(plan):
        # stopped between rounds (solver.solve.replay_loop): the round's fleet, which missed
        last = max(c.round for c in plan.replay)
        return [f"stopped by the user after trace-replay round {last} missed: this is that "
                "round's fleet, not re-planned on its de-rated rates (docs/replay.md, \"Replay "
                "in the plan\"); re-plan and let it finish before acting on it"]
    if stopped and s.gap is None:
        return [] if s.bound is None else [
            f"stopped before any fleet was found; no fleet costs less than {s.bound:,.0f} "
            f"{cur}/month"]
    if not plan.allocations and s.bound is not None and h is None:
        # with a budget, fleets above it may have been found: the diagnosis gives the cheapest
        within = (" within the budget (policy.monthly_budget)"
                  if scenario.policy.monthly_budget is not None else "")
        return [f"stopped at the time limit before any fleet{within} was found (the capacity "
                f"table and the program are built within it); no fleet costs less than "
                f"{s.bound:,.0f} {cur}/month", "  to find one: a longer --time-limit"]
    if s.gap is None or s.bound is None:
        return [f"stopped at its search limit with nothing proven: {WORK_LIMIT_NOTE}"
                if searched else f"stopped at the time limit with nothing proven: {RERUN_NOTE}"]
    what = (f"no plan costs less than {s.bound:,.0f} {cur} over the horizon (its objective, "
            f"{h.objective.replace('_', ' ')} cost)" if h is not None else
            f"no fleet costs less than {s.bound:,.0f} {cur}/month")
    why = ("a solve of the trace-replay loop stopped at its time limit" if plan.replay else
           "not proven within the requested gap")
    # a fallback fleet was found by no stage: fallback_lines has said what it is, so it is
    # not called the best verified fleet so far
    out = [("stopped by the user: the best verified fleet so far; "
            if stopped and not s.fallback else "")
           + f"{why}: {what}, so {above_cheapest(s.gap)}"]
    hint = "a longer --time-limit"
    if scenario.policy.share_nodes:
        hint += ("; or dedicated pools (policy.share_nodes: false), which are solved workload by "
                 "workload and proven much faster, but cost more")
    if searched:
        return [*out, f"  stopped at its search limit: {WORK_LIMIT_NOTE}",
                f"  to narrow it: {WORK_LIMIT_HELP}"]
    return [*out, f"  to narrow it: {hint} (docs/program.md, \"Where the gap comes from\")",
            *([] if stopped else [f"  stopped at the time limit: {RERUN_NOTE}"])]


def above_cheapest(gap: float) -> str:
    """How far above the cheapest a fleet of relative ``gap`` may be: the gap is
    (cost − bound) ÷ cost (HiGHS's), so the cost is at most gap ÷ (1 − gap) above the bound,
    and so above the cheapest. Read as "gap above" it was far too low where the gap is large:
    a new user's 2-s plan at 8,667,533 USD/month against a bound of 1,315,241 (gap 84.8 %) was
    said to be "at most 84.8% above the cheapest" — it may be 559 % above. With no bound above
    zero (gap 1) nothing limits it."""
    if gap >= 1.0:
        return "nothing yet limits how far above the cheapest this one is (no bound above 0)"
    return f"this one is at most {gap / (1.0 - gap):,.1%} above the cheapest"


#: Share of a plan's seconds its build took above which a fallback fleet is put down to the
#: build, not to the search [1].
BUILD_MOST = 0.5


def fallback_lines(plan: Plan) -> list[str]:
    """Where a fleet over periods came from when no stage found one in time (else nothing)."""
    if not plan.solver.fallback or plan.solver.objective is None:
        return []
    stopped = plan.status is SolveStatus.interrupted
    when, then = (("stopped by the user before any stage found a fleet",
                   "re-plan and let it finish") if stopped else
                  ("no stage found a fleet within the time limit",
                   "re-plan with a longer --time-limit"))
    built, read = plan.solver.build_seconds, plan.solver.read_seconds
    if not stopped and built is not None and built + read >= BUILD_MOST * plan.solver.seconds:
        # the stages had next to no time: say where it went and what limit gives them some
        # (a new user's re-plan: 632 s, of which the stages 0.3 s)
        took = (f"the start-up took {read:,.0f} s, building the capacity tables and the "
                f"program {built:,.0f} s" if read > 0 else
                f"building the capacity tables and the program took {built:,.0f} s")
        when += (f" ({took} of its {plan.solver.seconds:,.0f} s, leaving the search "
                 f"{max(plan.solver.seconds - built - read, 0.0):,.1f} s)")
        then = (f"re-plan with a --time-limit well above the {read + built:,.0f} s the "
                f"{'start-up and the ' if read > 0 else ''}build took")
    return [f"  {when}: this is the fallback fleet, "
            f"{plan.solver.objective:,.0f} {plan.cost.currency} over the horizon (each "
            f"period's fleet as far as it was planned, else a greedy one, and the orders that "
            f"hold it), not a searched plan: {then} before acting on it"]


def with_measured_warnings(plan: Plan, scenario: Scenario) -> Plan:
    """``plan`` carrying in ``warnings`` the measured rows it does not use (stale, no such
    candidate, weights that cannot fit) and those it uses above their datasheet ceiling, in the
    words ``plan`` printed on stderr. A platform team's four load tests, set aside for their
    token lengths, were named on stderr only: report.md and plan.json, what a director reads,
    said the pool's rates were predicted and nothing of the tests."""
    found = (*stale_measurements(scenario), *implausible_measurements(scenario))
    return plan.model_copy(update={"warnings": (*plan.warnings, *found)}) if found else plan


def today_note(sc: Scenario) -> str:
    """A plan from an inventory without a ``horizon`` or ``policy.as_of`` is one month from
    the day it is run (docs/program.md): its dates, and so its plan, change with the day for
    the same scenario, which nothing said (a new user's finding). Empty otherwise."""
    if not sc.multi_period or sc.horizon is not None or sc.policy.as_of is not None:
        return ""
    today = plan_date_of(sc).isoformat()
    return (f"note: no `horizon`: planned over one month from today ({today}), so the same "
            "scenario planned on another day gives other dates — give `policy.as_of: "
            f"{today}` (or a `horizon`) to plan from a fixed day")


def render(plan: Plan, scenario: Scenario, written: list[Path]) -> list[str]:
    """The readable summary."""
    cur = plan.cost.currency
    bound_unit = f"{cur} over the horizon" if plan.horizon is not None else f"{cur}/month"
    out = [f"plan {plan.scenario}: {status_label(plan.status, plan.solver).lower()} "
           f"({solver_summary(plan.solver, bound_unit)}){status_note(plan)}"]
    out += fallback_lines(plan)
    out += unproven_lines(plan, scenario)
    out += schedule_lines(plan, scenario)
    if plan.horizon is not None and plan.nodes:
        out.append(f"the fleet below is the first period's ({plan.horizon.start}) if demand "
                   f"follows `{plan.horizon.fleet_shown}`:")
    if plan.status not in HAS_FLEET or not plan.nodes:
        # only a proven infeasible plan is one no fleet meets; else (a budget none was found
        # within in time: solver.solve.budget) the diagnosis says why none was found
        out.append(("no fleet meets every requirement:" if plan.status is SolveStatus.infeasible
                    else "no fleet found:") if plan.diagnosis else "no fleet found")
        out += [f"  - {d.message}" for d in plan.diagnosis]
    else:
        c = plan.cost
        mtok = "-" if c.per_million_tokens is None else f"{c.per_million_tokens:.3f}"
        out_mtok = ("-" if c.per_million_output_tokens is None
                    else f"{c.per_million_output_tokens:.3f}")
        out.append(f"cost: {c.per_month:,.0f} {c.currency}/month; {mtok} {c.currency} per "
                   f"million tokens ({out_mtok} {c.currency} per million output tokens)")
        out.append("GPUs:")
        out += gpu_table(plan, scenario)
        out.append("workloads:")
        out += workload_lines(plan, scenario)
        borrowed = borrowed_sentence(plan, scenario)
        if borrowed:
            out.append(f"  {borrowed}")
        out.append("survivability:")
        out += survivability_lines(plan)
        out += replay_lines(plan)
    out.append("wrote " + ", ".join(str(p) for p in written))
    return out


def output_dir(scenario: Scenario, scenario_path: Path | None, out_dir: Path | None) -> Path:
    """``--out``, else ``outputs/<scenario name>/``; a name that is not one plain directory name
    (``../x``, ``a/b``) would write elsewhere, so it is refused."""
    if out_dir is not None:
        return out_dir
    name = scenario.name
    if Path(name).name != name or name in (".", "..") or "\\" in name:
        raise InputError([Problem(str(scenario_path or "demo"), "name",
                                  f"`{name}` cannot name the output directory outputs/{name}/",
                                  "use a name without `/`, `\\` or `..`, or give --out")])
    if len(os.fsencode(name)) > NAME_MAX_BYTES:
        raise InputError([Problem(str(scenario_path or "demo"), "name",
                                  f"`{name[:40]}…` is {len(os.fsencode(name))} bytes: too long "
                                  f"for a directory name (at most {NAME_MAX_BYTES})",
                                  "give --out, or a shorter name")])
    return Path("outputs") / name


def keep_earlier_orders(sc: Scenario, existing: Path) -> tuple[Scenario, Replanned]:
    """``--existing``: the scenario with the earlier plan's placed orders held, and the record
    of what was kept. An "earlier" plan made for a later day than this one is refused (a new
    user passed the next quarter's plan and its orders were kept with no word); one whose
    horizon ended before this plan's day gets a warning. A scenario renamed from one quarter to
    the next is no error (README's re-plan does so): every output names the earlier plan's
    scenario and day beside the orders kept (docs/program.md, "Re-planning")."""
    doc = read_document(existing)
    if not (isinstance(doc, Mapping) and is_plan_document(doc)):
        # an inventory here was 22 "Field required" problems of a plan's fields
        raise InputError([Problem(
            str(existing), "", "not a plan.json (no `status`, no `allocations`)"
            + (": an inventory of nodes held" if isinstance(doc, Mapping) and "nodes" in doc
               else ""),
            "--existing takes the plan.json an earlier `fleetplan plan` wrote over periods; "
            "nodes you already hold go in the scenario's `inventory` (README, \"Quarterly "
            "procurement\")")])
    earlier = plan_document(doc, str(existing))
    today = plan_date_of(sc)
    h = earlier.horizon
    if h is not None and h.plan_date > today:
        raise InputError([Problem(
            str(existing), "horizon.plan_date",
            f"this plan (of `{earlier.scenario}`) was made for {h.plan_date}, after this "
            f"scenario's plan date {today}: it is not an earlier plan, and its orders were not "
            "placed before this one", "give the plan.json of the plan made before this one "
            "(the previous quarter's), or none")])
    sc = keep_orders(sc, earlier, str(existing))  # refuses a plan of one peak day
    assert h is not None
    if today >= h.end:
        click.echo(f"warning: --existing {existing} covers {h.start} to {h.end} ({TO_EXCLUSIVE}), "
                   f"which ended before this plan's date {today}: its orders may have been "
                   "re-planned since; give the latest plan.json", err=True)
    return sc, Replanned(file=str(existing), scenario=earlier.scenario, plan_date=h.plan_date,
                         kept=earlier.placed_before(today),
                         not_yet_due=earlier.due_from(today))


@click.command("plan")
@scenario_argument()
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=None,
              help="Output directory (default: outputs/<scenario name>/).")
@solve_options("Time limit [s]; default: {default:g} s for a plan of one period, counted from the "
               "command's start and covering writing the files (their time is kept back from "
               "the solve). A plan over periods (a horizon, an inventory or demand scenarios) "
               "without it ends at its search limits, with a safety stop at {safety:g} s; its "
               "blocks too large to solve whole share {default:g} s.")
@json_option
@click.option("--existing", "existing", type=click.Path(path_type=Path), default=None,
              callback=given_file(),
              help="An earlier plan.json over periods: keep the orders it placed already "
                   "(due before this plan's date) and re-plan the rest.")
@click.option("--robust", is_flag=True, help="Over demand scenarios: minimise the worst "
              "case, then the expected cost at it (docs/program.md, P7).")
@click.option("--no-replay", is_flag=True, help="Do not replay the traces workloads name "
              "(arrival.trace) against the plan.")
@click.option("--quiet", is_flag=True, help="No progress on stderr while solving.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Over periods: processes the blocks too large to solve whole are planned "
                   "in side by side, one per core (measured cheaper only for blocks of "
                   "hundreds of GPUs; docs/program.md); at most the cores this process may use.")
def command(scenario: Path | None, out_dir: Path | None, solver: str, time_limit_s: float,
            gap: float, as_json: bool, existing: Path | None, robust: bool,
            no_replay: bool, quiet: bool, workers: int) -> None:
    """Plan the cheapest fleet for SCENARIO (default: the built-in demo).

    The time limit is wall time from the command's start: the start-up, building the capacity
    tables and the program, the solve, the plan and writing its files (a load that changes
    during the run can still move the end by seconds; a limit of a few seconds is overrun by
    what no plan skips; over periods, a plan whose stages found no fleet in time builds its
    fallback fleet after the limit). Ctrl-C
    (or SIGTERM) stops the solve and writes the best verified fleet found so far, status
    ``interrupted``, with its proven bound.
    """
    origin = command_origin()
    deadline = Deadline(time_limit_s, started=origin.wall_s)
    # its files written whole or not at all, its threads done: the interpreter's teardown
    # (seconds under load) would only follow the limit
    click.get_current_context().meta[QUICK_EXIT_META] = True
    given = time_limit_given()
    sc = load(scenario)
    if not as_json:  # validate's warnings (its SLO ones: the diagnosis of a plan names them)
        for line in scenario_warnings(sc, slo=False):
            click.echo(line, err=True)
        if note := today_note(sc):
            click.echo(note, err=True)
    replanned = None
    if existing is not None:
        sc, replanned = keep_earlier_orders(sc, existing)
    out = output_dir(sc, scenario, out_dir)
    received: list[int] = []
    late_s = start_past_the_limit(deadline, given)
    with PlanDirectory(out, "--out", PLAN_DIR_FILES,
                       inputs=[scenario, existing, *sc.sources]) as target:
        plan, shown, table, table_for = _plan(sc, solver, time_limit_s, gap, as_json, robust,
                                              no_replay, quiet, deadline, received,
                                              limit_given=given, workers=workers, origin=origin)
        if replanned is not None:
            plan = plan.model_copy(update={"replanned_from": replanned})
        if plan.status is SolveStatus.infeasible:
            plan = with_slo_causes(plan, sc, table or build_capacity_table(
                sc, sc.gpus_sold_or_held()))
            plan = with_lead_time_causes(plan, sc)
        plan = with_date_warnings(plan, sc)  # stderr's words, kept in plan.json and report.md
        plan = with_measured_warnings(plan, sc)
        write_plan_outputs(plan, sc, target.staging, shown, table, table_for)
        written = target.commit()
    if as_json:
        echo_json(plan.model_dump(mode="json"))
    else:
        for line in render(plan, with_inventory(shown, sc), written):
            click.echo(line)
        for line in past_order_lines(plan, sc):  # a stale policy.as_of: never silent
            click.echo(line, err=True)
    if late_s > 0.0:
        click.echo(late_start_note(late_s, deadline), err=True)
    if plan.status is SolveStatus.interrupted and received:
        raise SystemExit(128 + received[0])  # as a shell reports a process a signal stopped
    if received:  # e.g. during the trace replay's last round: nothing was cut short
        click.echo(f"note: {signal.Signals(received[0]).name} received after the search had "
                   "ended: the plan is complete, written as planned", err=True)
    if plan.status not in HAS_FLEET or not plan.allocations:
        raise SystemExit(1)  # infeasible, or no fleet found within the time limit
    if any(not c.holds for c in plan.replay if c.round == max(r.round for r in plan.replay)):
        raise SystemExit(1)  # the trace replay still misses an SLO after the last round


def start_past_the_limit(deadline: Deadline, limit_given: bool) -> float:
    """The seconds the process's start-up took (the interpreter, fleetplan's imports, reading
    the scenario) where they alone used up the ``--time-limit`` given, else 0; the deadline is
    then moved (:meth:`~solver.solve.clock.Deadline.extend`) so that the limit counts from the
    start-up's end and is at least the start-up's seconds again. Such a limit cannot be met
    whatever is planned — at load 13–18 the start-up of a 2-s plan took 4–10 s (60 s at load
    12–14 beside this session's other work, where a table's build takes as long: a 2-s build
    after it ran out too), and the build's clock stopped the plan before its first table, with
    no plan and a fix that named a build of 0 s — so the plan is late, at most by about twice
    the start-up, and says so (:func:`late_start_note`)."""
    startup_s = deadline.elapsed()
    if not limit_given or startup_s < deadline.limit_s:
        return 0.0
    deadline.extend(startup_s + max(startup_s - deadline.limit_s, 0.0))
    return startup_s


def late_start_note(startup_s: float, deadline: Deadline) -> str:
    """What a plan whose start-up alone used up its limit says at its end: the start-up's
    seconds, and the limit that would have held this run (its whole wall time so far)."""
    took_s = round(deadline.elapsed(), 1)  # as shown, and the limit rounded up from it
    return (f"note: the start-up (the interpreter, fleetplan's imports, reading the scenario) "
            f"took {startup_s:.1f} s, more than the {deadline.given_s:g}-s --time-limit, which "
            f"was counted from its end (at least as long again): this plan took {took_s:.1f} s "
            f"from the process's start; at this machine's load give a --time-limit of at least "
            f"{math.ceil(took_s)} s for one that holds from the start")


class BuildClock:
    """The plan's clock over its capacity tables' build: a plan over periods builds a table
    per distinct :func:`~solver.capacity.table.table_key` (with a bursty or traced workload,
    one per peak of each period and demand scenario, seconds each) before anything is solved,
    and the build did not look at the clock — a new user's ``--time-limit 20`` ran 103 s at
    load 6.5, and a plan's fleet depended on the load. A single-period plan builds one table,
    which with a bursty workload takes seconds too (benchmarks/results/clock.md, "A single-period
    plan's capacity table against the clock"). :meth:`check` (before each configuration) stops
    the build once ``limit_s`` has passed, with what the user can do."""

    def __init__(self, scenario: Scenario, clock: Deadline, limit_s: float, given: bool
                 ) -> None:
        self.scenario, self.clock, self.limit_s, self.given = scenario, clock, limit_s, given
        self.watching = True
        self.began_s = clock.elapsed()
        """Seconds on the clock before the build: the start-up and reading the scenario."""

    def check(self, built: int) -> None:
        """Raise a located :class:`InputError` (``--time-limit``) once the limit has passed
        while tables are still being built, :class:`KeyboardInterrupt` once the user stopped
        the plan (Ctrl-C, SIGTERM: a build of a minute ignored them; there is no fleet yet to
        write); nothing once the plan's build is over."""
        if not self.watching:
            return
        if self.clock.stopped:
            raise KeyboardInterrupt
        if self.clock.elapsed() <= self.limit_s:
            return
        elapsed = self.clock.elapsed()
        if not self.scenario.multi_period:
            raise self._one_table_error(elapsed)
        why = self._bursty(", so each period and demand scenario whose peak differs gets "
                           "a table of its own")
        if self.given:
            fix = (f"give a --time-limit well above the build ({self._build_pace(built)}), "
                   "or leave --time-limit out: a plan "
                   f"over periods then ends at its search limits, with a safety stop at "
                   f"{HORIZON_SAFETY_S:g} s")
        else:
            fix = ("run it on a less loaded machine, or cut the periods or demand scenarios "
                   "whose peaks differ")
        raise InputError([Problem(
            "--time-limit", "", f"the {'time limit' if self.given else 'safety stop'} "
            f"({self.shown_s:g} s) ran out while building "
            f"the capacity tables, before anything was solved: {elapsed:.1f} s{self._before()}, "
            f"{plural(built, 'table')} built{why}; no plan was written", fix)])

    def _build_pace(self, built: int) -> str:
        """What the build itself took at this load, the start-up left out: a new user's
        "each table took about 89 s" counted 75–89 s of start-up, with no table built."""
        build_s = max(self.clock.elapsed() - self.began_s, 0.0)
        if built == 0:
            return f"at this machine's load no table was done after {build_s:.0f} s of building"
        return f"at this machine's load each table took about {build_s / built:.0f} s"

    @property
    def shown_s(self) -> float:
        """The limit as the user gave it (the clock's, less what a long start-up added)."""
        return self.limit_s - self.clock.extended_s

    def _before(self) -> str:
        """`` (N s of them before the build: …)``: the limit counts from the process's start,
        which at load 13 took seconds of a short one before any table was built — or, where
        the start-up alone used it up, from the start-up's end (:func:`start_past_the_limit`)."""
        late = (f", more than the limit, which was counted from their end: the build had "
                f"{self.limit_s - self.began_s:.1f} s" if self.clock.extended_s > 0 else "")
        return (f" ({self.began_s:.1f} s of them before the build: the start-up and reading "
                f"the scenario{late})")

    def _bursty(self, then: str) -> str:
        """``; `a`, `b` are bursty<then>`` for the scenario's bursty workloads (what makes a
        table's configurations slow), empty when none is."""
        bursty = [w.name for w in self.scenario.workloads
                  if w.arrival is not None and w.arrival.burst is not None]
        if not bursty:
            return ""
        return (f"; {', '.join(f'`{n}`' for n in bursty)} "
                f"{'is' if len(bursty) == 1 else 'are'} bursty{then}")

    def _one_table_error(self, elapsed: float) -> InputError:
        """A single-period plan's one table outlasted the limit: which workloads make its
        configurations slow (bursty ones: benchmarks/results/clock.md, "A single-period plan's
        capacity table against the clock"), and what to give."""
        why = self._bursty(" (arrival.burst, or measured from a linked trace), and each "
                           "configuration's latency under bursts takes seconds to compute")
        build_s = max(elapsed - self.began_s, 0.0)
        fix = (f"give a --time-limit well above the build (at this machine's load it had "
               f"taken {build_s:.0f} s, the start-up left out, and was not done)"
               if self.given else
               f"give a --time-limit above the default {self.limit_s:g} s, or run it on a "
               "less loaded machine")
        return InputError([Problem(
            "--time-limit", "", f"the time limit ({self.shown_s:g} s) ran out while building "
            f"the capacity table, before anything was solved: {elapsed:.1f} s{self._before()}"
            f"{why}; no plan of "
            f"`{self.scenario.name}` was written", fix)])


def planning_line(sc: Scenario, time_limit_s: float, limit_given: bool) -> str:
    """The line a plan begins with: what it plans and what will stop it. A plan over periods
    without ``--time-limit`` ends at its search's work limits, which on a large input takes
    minutes (a forecast-sized one ran 361 s, its progress lines "no fleet yet" for minutes,
    and nothing said up front how long it might take or how to cap it): the line says at
    most how long, and how to stop it sooner."""
    if sc.multi_period and not limit_given:
        limit = (f"search limited in work: it may take minutes, at most {HORIZON_SAFETY_S:g} s "
                 "(its safety stop); --time-limit SECONDS stops it sooner, at a plan that then "
                 "depends on the machine's load")
    else:
        limit = f"time limit {time_limit_s:g} s"
    return (f"planning {sc.name}: {plural(len(sc.workloads), 'workload')}, "
            f"{plural(len(sc.zones), 'zone')} ({limit})…")


#: The most of a limit kept back for writing the outputs: a short limit still gets a solve [1].
WRITE_SHARE_MOST = 0.5
#: The least of a limit the solve keeps in front of it when time is kept back for writing: at
#: load 10–13 the start and the demo's capacity table took 13 s of a 20-s limit, the writing's
#: 7 s were kept back, and the plan came out in 20.4 s without a fleet (main's, in 38 s, had
#: one); a plan late by up to its writing is worth more than one on time without a fleet [1].
SOLVE_SHARE_LEAST = 0.25


def keep_time_to_write(deadline: Deadline, sc: Scenario, origin: Origin,
                       at_once: bool = False) -> None:
    """End the solve early enough for the outputs to be written inside the limit: the writing's
    CPU seconds (:func:`~solver.outputs.plan_dir.write_seconds`) stretched by how much this
    machine has slowed the command so far (wall ÷ CPU seconds since ``origin``, while only the
    main thread worked), at most :data:`WRITE_SHARE_MOST` of the limit, and never so much that
    the solve has less than :data:`SOLVE_SHARE_LEAST` of the limit left — kept back once the
    solve holds a fleet (until then it keeps the whole limit); the writers' libraries are
    imported beside the solve meanwhile. (A plan's files were written after its limit:
    20 s became 26–32 s of wall time at load 5–8.) ``at_once``: kept back now, for a plan
    over periods: it always ends with a fleet (the fallback fleet where no stage found one),
    and its first fleet comes at the end of its first pass, under load at its limit, when
    nothing would be left to keep back (its files then came 9–10 s after the limit at load
    10: benchmarks/results/clock.md, "The time limit on the user's stopwatch")."""
    spare_s = max(deadline.left() - SOLVE_SHARE_LEAST * deadline.limit_s, 0.0)
    keep = deadline.keep_back if at_once else deadline.keep_back_after_a_fleet
    keep(min(write_seconds(sc, origin.slowdown()), WRITE_SHARE_MOST * deadline.limit_s,
             spare_s))
    import_writers_beside()


def _plan(sc: Scenario, solver: str, time_limit_s: float, gap: float, as_json: bool,
          robust: bool, no_replay: bool, quiet: bool, deadline: Deadline,
          received: list[int], limit_given: bool = True, workers: int = 1,
          origin: Origin | None = None) -> tuple[Plan, Scenario, CapacityTable | None,
                     Callable[[Scenario], CapacityTable] | None]:
    """The plan of ``sc``, the single-period scenario its fleet was sized for (signed off
    by the independent verifier; a single-period plan replayed against the traces its workloads
    name unless ``no_replay``) and, for one period, the capacity table it was planned with (the
    outputs are written from it: building it again took as long as the solve at the largest
    sizes under load), over periods the tables it was planned with, by period scenario (the
    outputs' first period and the contract's later ones); the signals that stopped the solve
    are added to ``received``.
    The solve's progress (elapsed, best cost, bound, gap, stage) goes to stderr; over periods
    on a terminal a spinner with the elapsed time instead."""
    message = planning_line(sc, time_limit_s, limit_given)
    if sc.multi_period:
        # off a terminal a line every few seconds (elapsed, best, bound, gap, stage), as one
        # period prints; on one the spinner shows the elapsed time and owns the line
        reporter = SolveReporter(sc.policy.currency,
                                 quiet=quiet or as_json or is_terminal(err=True),
                                 per=" over the horizon")  # the objective: not per month
        with progress(message, enabled=not as_json and not quiet):
            horizon_s, share_s = (limit_s + deadline.extended_s
                                  for limit_s in horizon_limits(time_limit_s, limit_given))
            watch = BuildClock(sc, deadline, horizon_s, limit_given)
            # planned with, then signed off (the clock watches the build inside the plan only)
            tables = cached_tables(sc.gpus_sold_or_held(), watch.check)
            if limit_given:  # the stages' clocks count from the process's start, less it
                keep_time_to_write(deadline, sc, origin or Origin.now(), at_once=True)
            with (stop_on_signals(deadline, None if quiet else STOP_NOTICE) as signals,
                  reporter.heartbeat(deadline)):
                reporter.now(Progress(deadline.elapsed(), None, None), CAPACITY_STAGE)
                try:
                    planned = plan_horizon(sc, solver=solver, gap=gap, robust=robust,
                                           table_for=tables, time_limit_s=horizon_s,
                                           share_limit_s=share_s, stop=deadline,
                                           workers=workers, on_progress=reporter)
                finally:
                    watch.watching = False
                    reporter.close()
            received.extend(signals)
            plan = with_gap_limit(sign_off_periods(planned, sc, tables), gap)
        first = first_period_scenario(plan, sc)
        if not no_replay and not deadline.stopped:
            plan = replayed_first_period(plan, first, quiet or as_json)
        return plan, first, None, tables
    if not as_json and not quiet:
        click.echo(message, err=True)
    reporter = SolveReporter(sc.policy.currency, quiet=quiet)
    clocks = [deadline]

    def solve(table: CapacityTable) -> Plan:
        """One solve, its fleet signed off against the table it was solved with; a replay's
        later round gets a clock of its own (stopped already if the user stopped the first)."""
        clock = clocks.pop() if clocks else Deadline(time_limit_s)
        if deadline.stopped:
            clock.stop(deadline.stop_reason or "interrupted")
        with reporter.heartbeat(clock):  # off a terminal, a line at each 5 s on its clock
            plan = plan_scenario(sc, table, solver=solver, time_limit_s=time_limit_s, gap=gap,
                                 deadline=clock, on_progress=reporter)
        return sign_off(plan, sc, table)

    def replan(table: CapacityTable, previous: Plan, workloads: frozenset[str]) -> Plan:
        """The workloads that missed re-planned, the rest of the fleet kept; signed off."""
        return sign_off(replan_workloads(sc, table, previous, workloads, solve,
                                         solver=solver, time_limit_s=time_limit_s,
                                         gap=gap), sc, table)

    watch = BuildClock(sc, deadline, time_limit_s + deadline.extended_s, limit_given)
    reporter.now(Progress(deadline.elapsed(), None, None), CAPACITY_STAGE)
    table = build_capacity_table(sc, sc.gpus_sold_or_held(), lambda: watch.check(0))
    watch.watching = False  # a replay's later rounds build on clocks of their own
    before = before_the_solve(watch.began_s, deadline.elapsed() - watch.began_s)
    keep_time_to_write(deadline, sc, origin or Origin.now())
    note = build_cost_note(watch.began_s, deadline.elapsed() - watch.began_s, deadline)
    if note is not None:
        reporter.say(note)
    with stop_on_signals(deadline, None if quiet else STOP_NOTICE) as signals:
        try:
            plan = solve(table) if no_replay else replayed_plan(
                sc, table, solve, as_json, replan, user_stopped=lambda: deadline.stopped)
        finally:
            reporter.close()
            received.extend(signals)
    return with_gap_limit(with_stages_before(plan, before), gap), sc, table, None


#: A single-period plan says what its capacity table cost, before the solve, where the build
#: took at least this share of the limit [1]: a bursty workload's table took 40–52 s of a 60-s
#: plan at load 8 (benchmarks/results/trust.md, "Session 23"), and the solve's lines then began at
#: 45 s with nothing said of where the minute went.
BUILD_NOTE_SHARE = 0.1


def build_cost_note(read_s: float, build_s: float, deadline: Deadline) -> str | None:
    """What the capacity table's build cost of the plan's limit, and what the solve has left
    (``None`` where the build took under :data:`BUILD_NOTE_SHARE` of the limit)."""
    limit_s = deadline.given_s
    if build_s < BUILD_NOTE_SHARE * limit_s:
        return None
    return (f"built the capacity table in {build_s:.1f} s of the {limit_s:g}-s limit "
            f"({read_s:.1f} s before it: the start-up and reading the scenario); the solver "
            f"has {deadline.left():.1f} s")


def before_the_solve(read_s: float, capacity_s: float) -> tuple[SolverStage, ...]:
    """The stages of a single-period plan before its solve, on the plan's clock: the
    start-up and reading the scenario (``read``), then the capacity table (``capacity``).
    ``solver.stages`` began at the program's build, and covered 15.6 s of a 29.8-s plan."""
    return (SolverStage(name=READ_STAGE, seconds=max(read_s, 0.0)),
            SolverStage(name=CAPACITY_STAGE, seconds=max(capacity_s, 0.0)))


def with_stages_before(plan: Plan, before: tuple[SolverStage, ...]) -> Plan:
    """``plan`` with ``before`` ahead of its solve's stages."""
    return plan.model_copy(update={"solver": plan.solver.model_copy(
        update={"stages": (*before, *plan.solver.stages)})})
