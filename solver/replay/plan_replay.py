"""Replay a plan against the traces its workloads name, at the planned peak, intact and after
every failure each workload must survive (docs/replay.md, "Replay in the plan").

For a workload whose ``arrival.trace`` names a trace: the trace is scaled so its busiest minute
(``scale_to: peak_minute``), or its busiest hour's mean, is the workload's planned peak rate;
the replay covers :data:`WINDOW_S` centred on the busiest minute after :data:`WARMUP_S` of
warm-up, on the replicas the plan runs in the workload's peak slice; the P95s are over the
requests arriving in the window. Each failure the workload must survive (each pool's fullest
node for ``n_plus_1``, and each zone for ``zone_loss``, as ``check`` defines them) happens at
the window's start. A check holds when each P95 is within its SLO (TTFT, per-token and, where
the workload states one, end-to-end), by ``fleetplan simulate``'s rule
(:mod:`solver.replay.verdict`): a request left without an answer counts as infinitely late;
requests longer than the model's context, and those streaming on a replica at the instant it
fails, are counted on the check (``over_context``, ``cut_off``) and left out of its P95s and
attainment: no fleet serves them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.plan import REPLAY_WARMUP_S, REPLAY_WINDOW_S, Plan, ReplayCheck
from models.scenario import Scenario
from models.workload import ReplayedArrivals, TraceLink, Workload
from solver.replay.engine import (
    EngineConfig,
    Outage,
    fleet_replica_groups,
    peak_slice,
    replay,
    summarize,
)
from solver.replay.outages import Groups, outage_for
from solver.replay.profile import over_context
from solver.replay.traces import Trace, TraceFormat, read_trace
from solver.replay.verdict import Group, verdicts
from solver.survivability.failures import failure_domains, required_failures
from solver.survivability.fleet import fleet_from_plan

#: Replayed window around the busiest minute [s of the scaled trace].
WINDOW_S = REPLAY_WINDOW_S
#: Replayed before the window so its queues start loaded [s].
WARMUP_S = REPLAY_WARMUP_S
SECONDS_PER_MINUTE = 60.0
SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class PeakWindow:
    """A trace scaled to a planned peak and cut around its busiest minute."""

    trace: Trace
    """The cut: warm-up and window, times from the cut's start [s]."""
    start_s: float
    """Start of the window in the cut (the failure instant) [s]."""
    rate_scale: float
    """Factor the trace's rate was multiplied by [1]."""
    window_s: float
    """Seconds of the window the trace covers: ``window_s`` asked, less where it ends sooner
    (to its last arrival) [s]."""
    warmup_s: float
    """Seconds of warm-up before the window: ``warmup_s`` asked, less where the busiest minute
    is near the trace's start [s]."""


@dataclass(frozen=True)
class Miss:
    """What a failed check implies for the configurations that served it."""

    check: ReplayCheck
    configurations: frozenset[tuple[str, int]]
    """(GPU, TP) of the replicas serving in the case."""


def read_linked(link: TraceLink) -> Trace:
    """The trace a workload names (its path made absolute by the loader)."""
    return read_trace(Path(link.path), TraceFormat(link.format) if link.format else None)


def linked_context_warnings(scenario: Scenario) -> list[str]:
    """A warning per workload whose linked trace holds requests longer than its model's
    context, in ``fleetplan simulate``'s words (:meth:`~solver.replay.profile.OverContext.
    replayed`): ``validate`` and ``plan`` said nothing of them, while the plan's replay counts
    them on each check (``over_context``) and ``simulate`` warns of the same trace."""
    out = []
    for w in scenario.workloads:
        link = None if w.arrival is None else w.arrival.trace
        context = scenario.model(w.model).max_context_tokens
        if link is None or context is None:
            continue
        words = over_context(read_linked(link), w.model, context).replayed()
        if words is not None:
            out.append(f"`{w.name}` links {link.path}: {words} (the plan's replay counts those "
                       "of its window on each check)")
    return out


def peak_window(trace: Trace, peak_rps: float, scale_to: str = "peak_minute",
                window_s: float = WINDOW_S, warmup_s: float = WARMUP_S) -> PeakWindow:
    """``trace`` with its inter-arrival times divided so its busiest minute (or busiest hour's
    mean) is ``peak_rps``, cut to ``warmup_s`` + ``window_s`` centred on its busiest minute."""
    arrival = trace.arrival_s
    minutes = max(int(trace.duration_s // SECONDS_PER_MINUTE), 1)
    per_minute = np.bincount((arrival // SECONDS_PER_MINUTE).astype(np.int64),
                             minlength=minutes)[:minutes]
    if trace.duration_s < SECONDS_PER_MINUTE:
        per_minute = np.array([len(trace)])
    if scale_to == "peak_hour":
        hours = np.bincount((arrival // SECONDS_PER_HOUR).astype(np.int64))
        span_s = min(SECONDS_PER_HOUR, max(trace.duration_s, 1e-9))
        reference_rps = float(hours.max()) / span_s
    else:
        reference_rps = float(per_minute.max()) / min(SECONDS_PER_MINUTE,
                                                      max(trace.duration_s, 1e-9))
    scale = peak_rps / reference_rps
    scaled = arrival / scale
    centre = (int(per_minute.argmax()) + 0.5) * SECONDS_PER_MINUTE / scale
    start = max(0.0, centre - window_s / 2)
    begin = max(0.0, start - warmup_s)
    keep = (scaled >= begin) & (scaled < start + window_s)
    cut = Trace(source=trace.source, arrival_s=scaled[keep] - begin,
                input_tokens=trace.input_tokens[keep], output_tokens=trace.output_tokens[keep])
    covered = min(window_s, max(trace.duration_s / scale - start, 0.0))
    return PeakWindow(trace=cut, start_s=start - begin, rate_scale=scale, window_s=covered,
                      warmup_s=start - begin)


def busiest_minute(trace: Trace, peak_rps: float, scale_to: str = "peak_minute") -> Trace:
    """The trace's busiest minute alone, its inter-arrival times divided as :func:`peak_window`
    divides them (so at ``scale_to: peak_minute`` the minute's rate is ``peak_rps``), times
    from the minute's start [s]: the arrivals the capacity model's trace-driven TTFT takes
    (:func:`~solver.capacity.replica.with_trace`)."""
    scale = peak_window(trace, peak_rps, scale_to, window_s=0.0, warmup_s=0.0).rate_scale
    return peak_window(trace, peak_rps, scale_to, window_s=SECONDS_PER_MINUTE / scale,
                       warmup_s=0.0).trace


#: Windows already cut, by (path, format, modification time [ns], size [bytes], peak [1/s],
#: scale_to, model context [tokens]): a process that loads a scenario more than once reads each
#: trace once per peak.
_WINDOWS: dict[tuple[str, str | None, int, int, float, str, int | None], ReplayedArrivals] = {}


def replayed_arrivals(link: TraceLink, peak_rps: float,
                      max_context_tokens: int | None = None) -> ReplayedArrivals:
    """The arrivals :func:`replay_plan` replays of the linked trace at the planned peak
    ``peak_rps`` (:func:`peak_window`: warm-up and window), as the capacity model takes them
    (``TraceLink.window``): those longer than ``max_context_tokens`` (input + output) left out,
    as the replay rejects them at arrival and no replica ever holds them (docs/replay.md,
    "Requests no replica can serve: one rule"). Counted in, 5 % of 131,000-token prompts on
    Llama-3.1-8B set the window's P95 prompt and made a plan infeasible ("the fastest time to
    first token of a P95 prompt … 693 ms") where the replay holds."""
    stat = Path(link.path).stat()
    key = (link.path, link.format, stat.st_mtime_ns, stat.st_size, peak_rps, link.scale_to,
           max_context_tokens)
    if key not in _WINDOWS:
        window = peak_window(read_linked(link), peak_rps, link.scale_to)
        cut = window.trace
        if max_context_tokens is not None:
            fits = cut.total_tokens <= max_context_tokens
            cut = Trace(source=cut.source, arrival_s=cut.arrival_s[fits],
                        input_tokens=cut.input_tokens[fits],
                        output_tokens=cut.output_tokens[fits])
        _WINDOWS[key] = ReplayedArrivals(
            arrival_s=tuple(cut.arrival_s.tolist()),
            input_tokens=tuple(cut.input_tokens.tolist()),
            since_s=window.start_s, peak_rps=peak_rps,
            output_tokens=tuple(cut.output_tokens.tolist()))
    return _WINDOWS[key]


def with_replay_windows(scenario: Scenario) -> Scenario:
    """``scenario`` with each workload's linked trace carrying the arrivals the plan's replay
    replays at its planned peak (:func:`replayed_arrivals`): the capacity model's TTFT P95 of
    the workload is then taken over them (``solver.capacity.replica.load_profile``,
    docs/capacity-model.md, "The TTFT P95 on the replayed window")."""
    workloads = []
    for w in scenario.workloads:
        link = None if w.arrival is None else w.arrival.trace
        if w.arrival is not None and link is not None:
            cut = link.model_copy()
            cut._window = replayed_arrivals(link, max(w.hourly_demand_rps()),
                                            scenario.model(w.model).max_context_tokens)
            w = w.model_copy(update={"arrival": w.arrival.model_copy(update={"trace": cut})})
        workloads.append(w)
    return scenario.model_copy(update={"workloads": tuple(workloads)})


#: Checks already replayed, by workload and the allocations it had (see :func:`replay_plan`).
ReplayCache = dict[tuple[str, str], list[tuple[ReplayCheck, frozenset[tuple[str, int]]]]]


def replay_plan(plan: Plan, scenario: Scenario, traces: dict[str, Trace], round_: int,
                cache: ReplayCache | None = None, *, share_same_loss: bool = True
                ) -> tuple[list[ReplayCheck], list[Miss]]:
    """Every check of every workload named in ``traces`` (workload → its trace), and the
    misses among them.

    A workload's checks depend on its own replicas only (its trace, the failures of the pools
    and zones holding them, the node of each pool that holds most of it), so with ``cache`` a
    workload whose allocations are those of an earlier call gets that call's checks again
    (this round's number) instead of a second replay of the same thing: the replay loop
    re-plans the workloads that missed and keeps the others' replicas. Within a call, two
    failures that lose the same replicas at the same instant (a zone holding one node of the
    workload, and that node) are one replay, reported under each failure's name: the replay is
    deterministic and sees only which replicas vanish and when (``share_same_loss=False``
    replays each on its own: benchmarks/replay_cost.py measures both)."""
    fleet = fleet_from_plan(plan, scenario)
    domains = failure_domains(fleet, scenario)
    checks: list[ReplayCheck] = []
    misses: list[Miss] = []
    for wl in scenario.workloads:
        trace = traces.get(wl.name)
        if trace is None or wl.arrival is None or wl.arrival.trace is None:
            continue
        key = (wl.name, repr(sorted(a.model_dump_json() for a in plan.allocations
                                    if a.workload == wl.name)))
        if cache is not None and key in cache:
            for check, configs in cache[key]:
                again = check.model_copy(update={"round": round_})
                checks.append(again)
                if not again.holds:
                    misses.append(Miss(again, configs))
            continue
        done: list[tuple[ReplayCheck, frozenset[tuple[str, int]]]] = []
        slice_name = peak_slice(scenario, wl)
        groups = fleet_replica_groups(fleet, scenario, wl, slice_name)
        replicas = [spec for _, specs in groups for spec in specs]
        if not replicas:
            continue
        window = peak_window(trace, max(wl.hourly_demand_rps()), wl.arrival.trace.scale_to)
        cases: list[tuple[str, Outage | None]] = [("none", None)]
        for failure in required_failures(wl, domains):
            outage = outage_for(failure, fleet, scenario, wl, slice_name, groups,
                                window.start_s)
            if outage is not None and any(outage.hits(r) for r in replicas):
                cases.append((failure.label, outage))
        same: dict[tuple[frozenset[str], float], tuple[ReplayCheck, frozenset[tuple[str, int]]]]
        same = {}
        for label, outage in cases:
            lost = (frozenset(r.name for r in replicas if outage is not None and outage.hits(r)),
                    math.inf if outage is None else outage.at_s)
            if share_same_loss and lost in same:  # the same replicas lost at the same instant
                check, configs = same[lost]
                check = check.model_copy(update={"failure": label})
            else:
                check, configs = _one_case(scenario, wl, slice_name, groups, window, label,
                                           outage, round_)
                same[lost] = (check, configs)
            done.append((check, configs))
            checks.append(check)
            if not check.holds:
                misses.append(Miss(check, configs))
        if cache is not None:
            cache[key] = done
    return checks, misses


def _one_case(scenario: Scenario, wl: Workload, slice_name: str,
              groups: Groups, window: PeakWindow, label: str,
              outage: Outage | None, round_: int
              ) -> tuple[ReplayCheck, frozenset[tuple[str, int]]]:
    replicas = [spec for _, specs in groups for spec in specs]
    config = EngineConfig(prefix_cache_hit_rate=wl.prefix_cache_hit_rate,
                          max_context_tokens=scenario.model(wl.model).max_context_tokens)
    result = replay(window.trace, replicas, config, outage)
    ttft_slo, tpot_slo, e2e_slo = wl.slo.ttft_p95_ms, wl.tpot_slo_ms, wl.slo.e2e_p95_ms
    s = summarize(result, ttft_slo, tpot_slo, since_s=window.start_s, e2e_slo_ms=e2e_slo)
    # simulate's verdicts over the window (solver.replay.verdict): the unanswered count as late,
    # the over-context and cut-off requests are counted apart
    found = verdicts(result, ttft_slo, tpot_slo, [Group("the window", since_s=window.start_s)],
                     e2e_slo)
    p95 = {v.key: v.groups[0] for v in found}

    def measured(key: str) -> float | None:
        group = p95.get(key)
        return None if group is None or not math.isfinite(group.p95_ms) else group.p95_ms

    ttft, tpot, e2e = measured("ttft_p95_ms"), measured("tpot_p95_ms"), measured("e2e_p95_ms")
    holds = all(v.held for v in found if math.isfinite(v.target_ms))
    serving = frozenset((g.gpu, g.tp) for g, specs in groups
                        if any(outage is None or not outage.hits(r) for r in specs))
    check = ReplayCheck(round=round_, workload=wl.name, failure=label, slice=slice_name,
                        requests=s.requests, ttft_p95_ms=ttft, ttft_slo_ms=ttft_slo,
                        tpot_p95_ms=tpot,
                        tpot_slo_ms=tpot_slo if math.isfinite(tpot_slo) else None,
                        slo_attainment=s.slo_attainment, holds=holds,
                        e2e_p95_ms=e2e, e2e_slo_ms=e2e_slo,
                        window_s=round(window.window_s, 1), warmup_s=round(window.warmup_s, 1),
                        over_context=s.rejected_over_context, cut_off=s.failed)
    return check, serving
