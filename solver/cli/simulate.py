"""``fleetplan simulate``: replay a request trace against a fleet (plan.json or inventory).

Parse → validate → compute → print. The fleet's replicas of one workload in one slice (reserved
ones plus the slice's elastic ones; by default the slice of the workload's peak hour) serve
the trace; see docs/replay.md for the engine's rules. A verdict per SLO ends the report
(:mod:`solver.cli.slo_verdict`), and the exit code follows it.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import numpy as np

from models.common import PurchaseKind
from models.errors import InputError, Problem, did_you_mean
from models.input_files import missing_trace_fix
from models.inventory import Fleet
from models.limits import MAX_RATE_SCALE, MAX_REPLAY_REQUESTS, MIN_RATE_SCALE
from models.names import resolve_gpu
from models.plan import PeriodPlan
from models.scenario import Scenario
from models.units import amount_text
from models.workload import Workload
from solver.cli.common import (
    echo_json,
    finite,
    given_file,
    json_option,
    load,
    read_as_given,
    scenario_argument,
)
from solver.cli.periods import (
    InventoryPeriod,
    demand_scenario_option,
    inventory_period,
    one_cell,
    period_option,
)
from solver.cli.show import Col, progress, table_lines
from solver.cli.slo_verdict import (
    Group,
    SloVerdict,
    basis_line,
    cut_off_line,
    over_context_line,
    verdict_json,
    verdict_line,
    verdicts,
)
from solver.outputs.labels import plural
from solver.replay.engine import (
    DEFAULT_MAX_BATCHED_TOKENS,
    DEFAULT_MAX_SEQS,
    EngineConfig,
    Outage,
    PreemptMode,
    ReplayResult,
    ReplaySummary,
    ZoneFailure,
    fleet_replica_groups,
    peak_slice,
    replay,
    summarize,
)
from solver.replay.outages import Groups, node_loss
from solver.replay.profile import minute_rates_rps, over_context
from solver.replay.traces import Trace, TraceFormat, read_trace, scale_arrivals
from solver.survivability.fleet import load_fleet, read_plan

#: Least time a verdict's requests should span (all of them; those after each failure) for
#: its P95 to say how the fleet holds its load [s]: the fleet is planned for a peak held over
#: its busiest minute (and its bursts within), and the replay's worst-minute, queue and KV
#: figures are per minute; a judgment, not a measurement. A new user's 58-min trace at
#: --rate-scale 118 lasted 30 s, and its verdicts rested on 22 s after a zone failure.
MIN_VERDICT_SPAN_S = 300.0

#: Most replicas one replay builds (10^5 take ~5 s and 0.3 GB); a plan.json edited to 10^9
#: replicas built one object per replica and never finished.
MAX_REPLAY_REPLICAS = 100_000

FAIL_PATTERN = re.compile(r"^(?P<kind>zone|node):(?P<what>[^@]+)@(?P<minute>\d+(\.\d+)?)$")
FAIL_HELP = ("write zone:<zone id>@<minute> or node:<zone id>/<GPU>@<minute>, e.g. "
             "zone:use1-az1@30 or node:use1-az1/H100-SXM@30")


@dataclass(frozen=True)
class ReplayedRate:
    """The rate a replay ran at, beside the rate the scenario plans the workload's slice for:
    a replay at the trace's own rate may be a fraction of the load the fleet was sized for."""

    mean_rps: float
    """Requests ÷ span of the trace, × --rate-scale [1/s]."""
    busiest_minute_rps: float
    """The trace's busiest whole minute (the mean if it spans less), × --rate-scale [1/s]."""
    planned_rps: float
    """The slice's busiest hour of the scenario's peak day (its demand in the plan) [1/s]."""
    mean_scale: float
    """--rate-scale that replays the mean at ``planned_rps`` [1]."""
    busiest_minute_scale: float
    """--rate-scale that replays the busiest minute at ``planned_rps`` (how the plan's own
    replay scales a linked trace, ``scale_to: peak_minute``) [1]."""


def replayed_rate(trace: Trace, rate_scale: float, scenario: Scenario, workload: Workload,
                  slice_name: str) -> ReplayedRate:
    """The replay's rate and the planned one (``trace`` before --rate-scale)."""
    mean = len(trace) / trace.duration_s if trace.duration_s > 0 else float(len(trace))
    minutes = minute_rates_rps(trace)
    busiest = float(minutes.max()) if minutes.size else mean
    hours = next(b.hours for b in scenario.policy.time_blocks if b.name == slice_name)
    hourly = workload.hourly_demand_rps()
    planned = max(hourly[h] for h in hours)
    return ReplayedRate(mean_rps=mean * rate_scale, busiest_minute_rps=busiest * rate_scale,
                        planned_rps=planned, mean_scale=planned / mean,
                        busiest_minute_scale=planned / busiest)


@dataclass(frozen=True)
class SimulationRun:
    """Everything the simulate command shows."""

    workload: Workload
    slice_name: str
    replica_names: tuple[str, ...]
    rate_scale: float
    rate: ReplayedRate
    failures: tuple[Outage, ...]
    """In time order."""
    result: ReplayResult
    overall: ReplaySummary
    before: ReplaySummary | None
    """Requests arriving before the first failure."""
    after: ReplaySummary | None
    """Requests arriving from the first failure on."""
    periods: tuple[ReplaySummary, ...]
    """Requests arriving from each failure to the next (the last: to the end)."""
    wall_seconds: float
    verdicts: tuple[SloVerdict, ...] = ()
    """TTFT, per-token and (where stated) end-to-end: held or missed, over all requests and
    after each failure."""
    period: PeriodPlan | None = None
    """A plan over periods: the period (of a demand scenario) whose fleet and demand served."""
    inventory_period: InventoryPeriod | None = None
    """An inventory against a scenario over periods: the period and demand scenario whose
    demand and workloads it served (:func:`~solver.cli.periods.inventory_period`)."""
    max_context_tokens: int | None = None
    """The workload's model context [tokens]: a longer request is rejected
    (:func:`~solver.cli.slo_verdict.over_context_line`)."""

    @property
    def held(self) -> bool:
        """Every SLO held."""
        return all(v.held for v in self.verdicts)

    @property
    def failure(self) -> Outage | None:
        """The first failure."""
        return self.failures[0] if self.failures else None


@click.command("simulate")
@scenario_argument()
@click.option("--fleet", "fleet_path", required=True, type=click.Path(path_type=Path),
              callback=given_file(),
              help="plan.json, or an inventory YAML/JSON of owned nodes.")
@click.option("--trace", "trace_path", required=True, type=click.Path(path_type=Path),
              callback=given_file(missing_trace_fix),
              help="Request trace (Azure CSV, Mooncake JSONL or a CSV with named columns).")
@click.option("--format", "fmt", type=click.Choice([f.value for f in TraceFormat]),
              default=None, help="Trace format (default: detected from the file).")
@click.option("--workload", "workload_name", default=None,
              help="Workload whose replicas serve the trace (default: the only one).")
@click.option("--slice", "slice_name", default=None,
              help="Time block whose elastic replicas run (default: the workload's peak).")
@click.option("--rate-scale", type=click.FloatRange(min=MIN_RATE_SCALE, max=MAX_RATE_SCALE),
              default=1.0,
              show_default=True, help="Divide inter-arrival times by K (K× the trace's rate).",
              callback=finite)
@click.option("--fail", "fail_specs", multiple=True, metavar="zone:Z@MINUTE|node:Z/GPU@MINUTE",
              help="At MINUTE of the replay every replica in zone Z vanishes (zone:), or the "
                   "replicas of the node of pool Z/GPU that holds most of the workload, as "
                   "`check` loses a node (node:). Repeat for several failures.")
@click.option("--max-batched-tokens", type=click.IntRange(min=2),
              default=DEFAULT_MAX_BATCHED_TOKENS, show_default=True,
              help="Tokens per iteration (decode first, prompt chunks fill the rest).")
@click.option("--max-seqs", type=click.IntRange(min=1), default=DEFAULT_MAX_SEQS,
              show_default=True, help="Running requests per replica.")
@click.option("--preempt", type=click.Choice([m.value for m in PreemptMode]),
              default=PreemptMode.recompute.value, show_default=True,
              help="What a request preempted for KV room becomes: its KV recomputed on "
                   "readmission, or swapped to host memory and back.")
@period_option
@demand_scenario_option
@json_option
def command(scenario: Path | None, fleet_path: Path, trace_path: Path, fmt: str | None,
            workload_name: str | None, slice_name: str | None, rate_scale: float,
            fail_specs: tuple[str, ...], max_batched_tokens: int, max_seqs: int, preempt: str,
            period: str | None, demand_scenario: str | None, as_json: bool) -> None:
    """Replay TRACE on the replicas FLEET gives a workload of SCENARIO (default: the demo).

    Ends with one verdict per SLO: its P95 over all requests, and over the requests arriving
    after each --fail, at most the SLO (held) or by how much it is missed; a request that got
    no answer counts as late, and those a failure cut off while streaming, or longer than the
    model's context, are counted apart and left out of the verdicts and the Within SLO row
    (no fleet serves them), as the plan's own replay counts them. Exit 0 when every SLO held,
    1 when one was missed, 2 on bad input.

    A plan over periods replays the fleet of one period of one demand scenario (--period and
    --demand-scenario; default: its first period of the scenario it shows), against that
    period's workloads (a migration changes a workload's model) and demand.
    """
    sc = load(scenario)
    plan = read_plan(fleet_path)
    against = None
    if plan is None:  # an inventory: one period's demand of a scenario over periods
        against = inventory_period(sc, period, demand_scenario, str(fleet_path))
        sc = sc if against is None else against.scenario
    cell = None if plan is None else one_cell(plan, sc, period, demand_scenario,
                                              str(fleet_path))
    if cell is not None:
        load_fleet(fleet_path, sc)  # the file checked as any plan.json is
        sc = cell.scenario
    workload = pick_workload(sc, workload_name)
    slice_name = pick_slice(sc, workload, slice_name)
    if max_seqs >= max_batched_tokens:
        raise click.BadParameter("must be smaller than --max-batched-tokens",
                                 param_hint="--max-seqs")
    config = EngineConfig(max_batched_tokens=max_batched_tokens, max_seqs=max_seqs,
                          prefix_cache_hit_rate=workload.prefix_cache_hit_rate,
                          preempt=PreemptMode(preempt),
                          max_context_tokens=sc.model(workload.model).max_context_tokens)
    fleet = load_fleet(fleet_path, sc) if cell is None else cell.node_fleet(str(fleet_path))
    count = sum(g.replicas for g in fleet.replicas if g.workload == workload.name
                and (g.slice is None or g.slice == slice_name))
    if count > MAX_REPLAY_REPLICAS:
        raise InputError([Problem(str(fleet_path), "", f"{count:,} replicas of `{workload.name}` "
                                  f"run in slice `{slice_name}`, more than a replay builds "
                                  f"({MAX_REPLAY_REPLICAS:,})",
                                  "check the replica counts, or replay part of the fleet")])
    try:
        groups = fleet_replica_groups(fleet, sc, workload, slice_name)
    except ValueError as exc:
        raise InputError([Problem(str(fleet_path), "", str(exc),
                                  "fix the fleet's configuration")]) from None
    replicas = [spec for _, specs in groups for spec in specs]
    failures = tuple(sorted((parse_failure(sc, spec, fleet, workload, slice_name, groups)
                             for spec in fail_specs), key=lambda f: f.at_s))
    if not replicas:
        raise InputError([Problem(str(fleet_path), "",
                                  f"no replicas of `{workload.name}` run in slice `{slice_name}`",
                                  "choose another --workload or --slice")])
    with read_as_given("--trace", trace_path):
        unscaled = read_trace(trace_path, TraceFormat(fmt) if fmt else None)
    if not as_json:
        for line in length_warnings(unscaled, workload, sc.policy.measured_length_tolerance):
            click.echo(line, err=True)
        for line in context_warnings(unscaled, workload.model,
                                     sc.model(workload.model).max_context_tokens):
            click.echo(line, err=True)
    rate = replayed_rate(unscaled, rate_scale, sc, workload, slice_name)
    trace = scale_arrivals(unscaled, rate_scale)
    if len(trace) > MAX_REPLAY_REQUESTS:
        raise InputError([Problem(str(trace_path), "", f"{len(trace):,} requests; a replay takes "
                                  f"at most {MAX_REPLAY_REQUESTS:,}", "replay a part of the trace, "
                                  "e.g. its busiest day (docs/limits.md)")])
    late = [f for f in failures if f.at_s > trace.duration_s]
    if late:
        # no request would arrive after the failure: a replay "surviving" it proves nothing
        end_min = math.floor(trace.duration_s / 60 * 100) / 100  # down: a minute below it works
        raise InputError([Problem("--fail", "", f"{f.label} fails at minute {f.at_s / 60:g}, "
                                  f"after the trace ends (its last request arrives at minute "
                                  f"{end_min:.2f} at --rate-scale {rate_scale:g}), so no "
                                  "request would meet the failure",
                                  f"choose a minute up to {end_min:.2f}, or a longer trace")
                          for f in late])
    if not as_json:
        for line in short_span_warnings(trace, unscaled, rate_scale, failures):
            click.echo(line, err=True)
    start = time.perf_counter()
    with progress(f"replaying {plural(len(trace), 'request')} on "
                  f"{plural(len(replicas), 'replica')}…", enabled=not as_json):
        result = replay(trace, replicas, config, failures)
    wall_seconds = time.perf_counter() - start
    ttft_slo, tpot_slo = workload.slo.ttft_p95_ms, workload.tpot_slo_ms
    e2e_slo = workload.slo.e2e_p95_ms
    first = failures[0] if failures else None
    ends = [f.at_s for f in failures[1:]] + [math.inf] * bool(failures)
    run = SimulationRun(
        workload=workload, slice_name=slice_name,
        replica_names=tuple(r.name for r in replicas), rate_scale=rate_scale, rate=rate,
        failures=failures,
        result=result, overall=summarize(result, ttft_slo, tpot_slo, e2e_slo_ms=e2e_slo),
        before=None if first is None else summarize(result, ttft_slo, tpot_slo,
                                                    until_s=first.at_s, e2e_slo_ms=e2e_slo),
        after=None if first is None else summarize(result, ttft_slo, tpot_slo,
                                                   since_s=first.at_s, e2e_slo_ms=e2e_slo),
        periods=tuple(summarize(result, ttft_slo, tpot_slo, since_s=f.at_s, until_s=end,
                                e2e_slo_ms=e2e_slo)
                      for f, end in zip(failures, ends, strict=True)),
        wall_seconds=wall_seconds,
        verdicts=verdicts(result, ttft_slo, tpot_slo, verdict_groups(failures), e2e_slo),
        period=None if cell is None else cell.period,
        inventory_period=against,
        max_context_tokens=config.max_context_tokens,
    )
    if as_json:
        echo_json(to_json(run))
    else:
        click.echo(render(run))
    if not run.held:
        raise SystemExit(1)


def length_warnings(trace: Trace, workload: Workload, tolerance: float) -> list[str]:
    """A warning per token P50 or P95 (input, output) of the trace more than ``tolerance``
    (``policy.measured_length_tolerance``, as for a measured row) × the workload's away from
    it: the replay then measures the trace's requests, not the workload's. A new user
    replayed a 230-token tagging pool with a trace of 1,469-token prompts and read "MISSED by
    +2175%" with no word of it."""
    out = []
    for direction in ("input", "output"):
        tokens = getattr(trace, f"{direction}_tokens")
        stats = getattr(workload, f"{direction}_tokens")
        if len(tokens) == 0:
            continue
        for name, q in (("P50", 50), ("P95", 95)):
            got = float(np.percentile(tokens, q))
            want = float(getattr(stats, name.lower()))
            if abs(got - want) > tolerance * want:
                out.append(
                    f"warning: the trace's {direction} {name} is {got:,.0f} tokens, workload "
                    f"`{workload.name}`'s {want:,.0f} ({got / want - 1:+.0%}, beyond "
                    f"policy.measured_length_tolerance ±{tolerance:.0%}): the replay measures "
                    "the trace's requests, not the workload's — replay a trace of its traffic, "
                    "or read the verdicts as that trace's")
    return out


def context_warnings(trace: Trace, model: str, max_context_tokens: int | None) -> list[str]:
    """A warning where requests of the trace are longer (input + output) than the model's
    context: the replay rejects them as too long (never truncated) and the verdicts are over
    the rest (:func:`~solver.cli.slo_verdict.over_context_line`). A platform team replaying
    the Azure conversation trace on Llama-2-70B after a zone loss read "MISSED" twice: 1,612 of
    19,366 requests (8.3 %) are longer than its 4,096 tokens, while the fleet's TTFT P95 after
    the loss was 334 ms against 1,500; the only word of it was a "Too long" row."""
    if max_context_tokens is None or len(trace) == 0:
        return []
    words = over_context(trace, model, max_context_tokens).replayed()
    return [] if words is None else [f"warning: {words}"]


def short_span_warnings(trace: Trace, unscaled: Trace, rate_scale: float,
                        failures: tuple[Outage, ...]) -> list[str]:
    """A warning per verdict group (all requests; those after each failure) whose arrivals
    span less than ``MIN_VERDICT_SPAN_S``: its P95 rests on a few seconds of load."""
    if trace.duration_s >= MIN_VERDICT_SPAN_S and not failures:
        return []
    how = (f"the trace's arrivals span {_span_text(trace.duration_s)}" if rate_scale == 1
           else f"at --rate-scale {amount_text(rate_scale, grouped=False)} the trace's "
                f"{_span_text(unscaled.duration_s)} of arrivals replay in "
                f"{_span_text(trace.duration_s)}")
    fix = ("a longer trace, or a smaller --rate-scale (the busiest minute then runs below "
           "the planned peak)")
    out = []
    if trace.duration_s < MIN_VERDICT_SPAN_S:
        out.append(f"warning: {how}: under {MIN_VERDICT_SPAN_S / 60:g} minutes, too short for "
                   f"the verdicts to say how the fleet holds its load — replay {fix}")
    ends = [f.at_s for f in failures[1:]] + [trace.duration_s] * bool(failures)
    for k, (f, end) in enumerate(zip(failures, ends, strict=True), start=1):
        span = end - f.at_s
        if span < MIN_VERDICT_SPAN_S and trace.duration_s >= MIN_VERDICT_SPAN_S:
            which = "the failure" if len(failures) == 1 else f"failure {k}"
            out.append(f"warning: the requests arriving after {which} span "
                       f"{_span_text(span)}: under {MIN_VERDICT_SPAN_S / 60:g} minutes, too "
                       f"short for its verdict to say how the fleet holds its load — fail "
                       f"earlier, or replay {fix}")
    return out


def _span_text(seconds: float) -> str:
    """``30 s``, ``58.3 min``."""
    return f"{seconds:,.0f} s" if seconds < 120 else f"{seconds / 60:,.1f} min"


def verdict_groups(failures: tuple[Outage, ...]) -> list[Group]:
    """All requests, then those arriving after each failure (up to the next), named as the
    latency table's columns."""
    groups = [Group("all requests")]
    if len(failures) == 1:
        return [*groups, Group("those arriving after the failure", since_s=failures[0].at_s)]
    ends = [f.at_s for f in failures[1:]] + [math.inf] * bool(failures)
    return groups + [Group(f"those arriving after failure {k}", since_s=f.at_s, until_s=end)
                     for k, (f, end) in enumerate(zip(failures, ends, strict=True), start=1)]


def pick_workload(scenario: Scenario, name: str | None) -> Workload:
    """The named workload, or the only one; else an error listing the choices."""
    names = [w.name for w in scenario.workloads]
    if name is None:
        if len(names) == 1:
            return scenario.workloads[0]
        raise InputError([Problem("--workload", "", "the scenario has several workloads and a "
                                  "trace does not say which it belongs to",
                                  f"choose one: {', '.join(names)}")])
    if name not in names:
        raise InputError([Problem("--workload", "", f"unknown workload `{name}`",
                                  did_you_mean(name, names))])
    return scenario.workload(name)


def pick_slice(scenario: Scenario, workload: Workload, name: str | None) -> str:
    """The named time block, else the one holding the workload's peak hour."""
    if name is None:
        return peak_slice(scenario, workload)
    names = [b.name for b in scenario.policy.time_blocks]
    if name not in names:
        raise InputError([Problem("--slice", "", f"unknown time block `{name}`",
                                  did_you_mean(name, names))])
    return name


def parse_failure(scenario: Scenario, spec: str, fleet: Fleet, workload: Workload,
                  slice_name: str, groups: Groups) -> Outage:
    """``zone:Z@MINUTE`` → a zone failure at MINUTE × 60 s; ``node:Z/GPU@MINUTE`` → the loss
    of the fullest node of that pool (:func:`solver.replay.outages.node_loss`)."""
    match = FAIL_PATTERN.match(spec.strip())
    if match is None:
        raise InputError([Problem("--fail", "", f"cannot read `{spec}`", FAIL_HELP)])
    at_s = float(match["minute"]) * 60.0
    what = match["what"]
    zone, _, rest = what.partition("/") if match["kind"] == "node" else (what, "", "")
    zones = [z.id for z in scenario.zones]
    if zone not in zones:
        raise InputError([Problem("--fail", "", f"unknown zone `{zone}`",
                                  did_you_mean(zone, zones))])
    if match["kind"] == "zone":
        return ZoneFailure(zone=zone, at_s=at_s)
    gpu, _, kind = rest.partition("/")
    gpus = [g.name for g in scenario.gpus]
    if not gpu:
        raise InputError([Problem("--fail", "", f"`{spec}` names no GPU", FAIL_HELP)])
    # named as a scenario names it: `H100` and `p5.48xlarge` are the H100-SXM
    resolved, _, why = resolve_gpu(gpu, gpus)
    if resolved is None:
        raise InputError([Problem("--fail", "", f"`{spec}`: unknown GPU `{gpu}`", why)])
    gpu = resolved
    kinds = [k.value for k in PurchaseKind]
    if kind and kind not in kinds:
        raise InputError([Problem("--fail", "", f"`{spec}`: unknown purchase kind `{kind}`",
                                  f"choose one of {', '.join(kinds)}, or leave it out")])
    loss = node_loss(fleet, scenario, workload, slice_name, groups, zone, gpu, at_s,
                     PurchaseKind(kind) if kind else None)
    if loss is None:
        pools = sorted({f"{g.zone}/{g.gpu}" for g, specs in groups if specs})
        raise InputError([Problem("--fail", "", f"no replica of `{workload.name}` runs on "
                                  f"{gpu} in {zone} in slice `{slice_name}`",
                                  "name a pool that serves it: " + ", ".join(pools))])
    return loss


def summary_json(s: ReplaySummary) -> dict[str, Any]:
    """The contract keys of one summary (``wall_seconds`` aside)."""
    return {
        "requests": s.requests,
        "completed": s.completed,
        "rejected": s.rejected,
        "rejected_too_long": s.rejected_too_long,
        "rejected_over_context": s.rejected_over_context,
        "preempted": s.preempted,
        "preemptions": s.preemptions,
        "ttft_ms": s.ttft_ms.as_dict(),
        "tpot_ms": s.tpot_ms.as_dict(),
        "e2e_ms": s.e2e_ms.as_dict(),
        "slo_attainment": s.slo_attainment,
        "failed": s.failed,
    }


def to_json(run: SimulationRun) -> dict[str, Any]:
    """Machine output: the contract keys, then the context and the per-minute series."""
    out = summary_json(run.overall)
    out["wall_seconds"] = run.wall_seconds
    out |= {
        "workload": run.workload.name,
        "slice": run.slice_name,
        "replicas": list(run.replica_names),
        "rate_scale": run.rate_scale,
        "replayed_mean_rps": run.rate.mean_rps,
        "replayed_busiest_minute_rps": run.rate.busiest_minute_rps,
        "planned_peak_rps": run.rate.planned_rps,
        "rate_scale_mean_at_peak": run.rate.mean_scale,
        "rate_scale_busiest_minute_at_peak": run.rate.busiest_minute_scale,
        "requeued": run.result.requeued,
        "slo_held": run.held,
        "verdicts": [verdict_json(v) for v in run.verdicts],
        "per_minute": per_minute(run),
    }
    if run.period is not None:
        out["period"] = {"period": run.period.period, "start": run.period.start.isoformat(),
                         "demand_scenario": run.period.scenario}
    if run.inventory_period is not None:
        out["demand_of"] = run.inventory_period.as_json()
    if run.failure is not None and run.before is not None and run.after is not None:
        out["failure"] = failure_json(run.failure)
        out["before_failure"] = summary_json(run.before)
        out["after_failure"] = summary_json(run.after)
        out["failures"] = [failure_json(f) | {"until_next_failure": summary_json(p)}
                           for f, p in zip(run.failures, run.periods, strict=True)]
    return out


def failure_json(failure: Outage) -> dict[str, Any]:
    """What failed, when, and what became of the requests it held."""
    out: dict[str, Any] = {"label": failure.label, "at_s": failure.at_s}
    if isinstance(failure, ZoneFailure):
        out["zone"] = failure.zone
    else:
        out["replicas_lost"] = sorted(failure.names)
    out["in_flight"] = ("requests without a first token are re-routed; requests streaming "
                        "tokens are counted as failed")
    return out


def per_minute(run: SimulationRun) -> list[dict[str, Any]]:
    """One row per minute of the replay: attainment, deepest queue, KV in use."""
    attain = run.overall.per_minute_attainment
    rows = []
    for m in range(run.result.queue_depth_max.size):
        kv = float(run.result.kv_use[m])
        rows.append({
            "minute": m,
            "slo_attainment": attain[m] if m < len(attain) else None,
            "queue_depth_max": int(run.result.queue_depth_max[m]),
            "kv_use": None if math.isnan(kv) else kv,
        })
    return rows


def _ms(v: float) -> str | None:
    return None if math.isnan(v) else f"{v:,.0f}"


def latency_table(columns: list[tuple[str, ReplaySummary]], workload: Workload) -> list[str]:
    """Latency percentiles [ms] of each group of requests, then the request counts."""
    slo = {"TTFT": workload.slo.ttft_p95_ms,
           "Per-token": workload.tpot_slo_ms if workload.has_second_token else None,
           "End-to-end": workload.slo.e2e_p95_ms}
    many = len(columns) > 1
    heads: list[Col | str] = ["Latency [ms]"]
    for label, _ in columns:
        prefix = f"{label}: " if many else ""
        heads += [Col(f"{prefix}P50", right=True), Col("P95", right=True), Col("P99", right=True)]
    heads.append(Col("SLO P95", right=True))
    rows: list[list[object]] = []
    for name, attr in (("TTFT", "ttft_ms"), ("Per-token", "tpot_ms"), ("End-to-end", "e2e_ms")):
        cells: list[object] = [name]
        for _, s in columns:
            p = getattr(s, attr)
            cells += [_ms(p.p50), _ms(p.p95), _ms(p.p99)]
        target = slo[name]
        rows.append([*cells, None if target is None else f"{target:,.0f}"])
    lines = table_lines(heads, rows, indent=0)
    counts: list[list[object]] = [
        [title, *(f"{getattr(s, key):,}" for _, s in columns)]
        for title, key in (("Requests", "requests"), ("Completed", "completed"),
                           ("Rejected", "rejected"), ("Too long", "rejected_too_long"),
                           ("> context", "rejected_over_context"),
                           ("Preempted", "preempted"), ("Failed", "failed"))]
    counts.append(["Within SLO", *(None if s.slo_attainment is None
                                   else f"{s.slo_attainment:.1%}" for _, s in columns)])
    return [*lines, "", *table_lines(["Requests", *(Col(label, right=True)
                                                    for label, _ in columns)], counts, indent=0)]


def rate_lines(run: SimulationRun) -> list[str]:
    """What rate was replayed, against the planned peak, and the --rate-scale reaching it."""
    r = run.rate
    return [f"replayed at {r.mean_rps:,.2f} req/s mean, {r.busiest_minute_rps:,.2f} req/s in "
            "the busiest minute",
            f"planned for {r.planned_rps:,.2f} req/s in slice {run.slice_name}: --rate-scale "
            f"{amount_text(r.mean_scale, grouped=False)} replays the mean at it, "
            f"{amount_text(r.busiest_minute_scale, grouped=False)} the "
            "busiest minute"]


def render(run: SimulationRun) -> str:
    """Readable report: latency table (before/after a failure), worst minutes, wall time."""
    r = run.result
    lines = [f"workload {run.workload.name}, slice {run.slice_name}: "
             f"{len(run.replica_names)} replicas, trace rate ×{run.rate_scale:g}",
             *rate_lines(run)]
    if run.period is not None:
        lines.insert(1, f"a plan over periods: the fleet and demand of period "
                        f"{run.period.period} (from {run.period.start}) if demand follows "
                        f"`{run.period.scenario}` (--period, --demand-scenario)")
    if run.inventory_period is not None:
        lines.insert(1, run.inventory_period.line("the workloads and demand"))
    columns = [("all requests", run.overall)]
    if run.failure is not None and run.before is not None and run.after is not None:
        # by arrival: a request streaming when its replica failed arrived before the failure,
        # and a bare "before failure: failed 32" read as failures before any failure
        columns.append(("arrived before failure", run.before))
        if len(run.failures) == 1:
            columns.append(("arrived after failure", run.after))
        else:
            columns += [(f"arrived after failure {k}", p)
                        for k, p in enumerate(run.periods, start=1)]
        for k, f in enumerate(run.failures, start=1):
            what = (f"zone {f.zone}" if isinstance(f, ZoneFailure)
                    else f"{f.label} ({plural(len(f.names), 'replica')}: "
                         f"{', '.join(sorted(f.names))})")
            number = f"{k}. " if len(run.failures) > 1 else ""
            lines.append(f"{number}{what} fails at minute {f.at_s / 60:g}")
        lines.append(f"{plural(r.requeued, 'request')} without a first token re-routed, "
                     f"{plural(run.overall.failed, 'streaming request')} failed")
    lines += latency_table(columns, run.workload)
    attain = [(a, m) for m, a in enumerate(run.overall.per_minute_attainment) if a is not None]
    if attain:
        worst, minute = min(attain)
        below = sum(1 for a, _ in attain if a < 0.95)
        lines.append(f"per minute: worst SLO attainment {worst:.1%} (minute {minute}); "
                     f"{below} of {len(attain)} minutes below 95 %")
    if r.queue_depth_max.size:
        q = int(r.queue_depth_max.argmax())
        lines.append(f"queue depth: at most {int(r.queue_depth_max[q]):,} requests waiting for "
                     f"a first token (minute {q})")
    kv = [(float(v), m) for m, v in enumerate(r.kv_use) if not math.isnan(v)]
    if kv:
        top, minute = max(kv)
        lines.append(f"KV cache in use: up to {top:.0%} of live capacity (minute {minute})")
    lines.append(f"replayed in {run.wall_seconds:.2f} s")
    cut = cut_off_line(r)
    over = over_context_line(r, run.max_context_tokens)
    basis = basis_line(run.verdicts)
    lines += [*([cut] if cut else []), *([over] if over else []), *([basis] if basis else []),
              *(verdict_line(v) for v in run.verdicts)]
    return "\n".join(lines)
