"""A linked trace's burst block, measured where the workload states none.

A workload that names a trace (``arrival.trace``) but gives no ``arrival.burst`` was sized as
a Poisson stream, and only the plan's replay corrected it, by de-rating, at a dearer fleet
than the trace's own block gives (docs/replay.md, "Replay in the plan"). Measured numbers beat
assumed ones: :func:`with_trace_bursts` measures the block from the trace exactly as
``fleetplan profile`` prints it (:func:`~solver.replay.profile.workload_fields` of
:func:`~solver.replay.profile.profile_trace`, rounded as printed) and puts it in the scenario,
``measured_from`` naming the trace, so the resolved scenario a plan writes carries it. A stated
``burst`` always wins where the queueing model sizes the workload (where the trace carries
the window its replay replays, ``solver.replay.plan_replay.with_replay_windows``, both P95s
are taken on that window and the block sizes nothing). A stated block
that names ``measured_from`` (a plan's ``scenario.resolved.yaml`` planned again) is checked
against that trace: while its figures equal what profiling the trace gives it stays measured,
and the notes say the scenario states it; once a figure was edited it is taken as stated
(``measured_from`` dropped) and the notes
say so. A trace of fewer than :data:`~solver.replay.profile.MIN_PEAK_MINUTES`
whole minutes (its followers' windows are set by a busiest minute of a handful) or fewer than
three arrivals apart in time gives none: the workload stays Poisson (or, cut to its replayed
window, is sized on that short trace's window), and :func:`trace_burst_warnings` says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from models.errors import InputError, Problem
from models.scenario import Scenario
from models.workload import Burst, TraceLink, Workload
from solver.capacity.replica import trace_window_sizing
from solver.replay.profile import MIN_PEAK_MINUTES, profile_trace, workload_fields
from solver.replay.traces import TraceFormat, read_trace


@dataclass(frozen=True)
class Measured:
    """What a trace gives: its burst block, or why none (exactly one is set)."""

    burst: Burst | None
    why_not: str | None = None
    batched: str | None = None
    """That the trace records its arrivals in batches
    (:meth:`~solver.replay.profile.TraceProfile.batched_arrivals`), else ``None``."""


#: Measured blocks by (path, format, modification time [ns], size [bytes]): a process that loads
#: a scenario more than once (compare, sweep, tests) reads each trace once.
_CACHE: dict[tuple[str, str | None, int, int], Measured] = {}


def measure(link: TraceLink) -> Measured:
    """The burst block ``fleetplan profile`` prints for the linked trace (path absolute, as the
    loader makes it), ``measured_from`` its path; or why the trace gives none."""
    path = Path(link.path)
    stat = path.stat()
    key = (link.path, link.format, stat.st_mtime_ns, stat.st_size)
    if key not in _CACHE:
        _CACHE[key] = _measure(path, link.format)
    return _CACHE[key]


def _measure(path: Path, fmt: str | None) -> Measured:
    profile = profile_trace(read_trace(path, TraceFormat(fmt) if fmt else None))
    batched = profile.batched_arrivals()
    minutes = profile.whole_minutes
    if minutes < MIN_PEAK_MINUTES:
        return Measured(None, f"it spans {minutes} whole minute{'' if minutes == 1 else 's'}, "
                              f"under the {MIN_PEAK_MINUTES} a burst block is measured over",
                        batched)
    block = workload_fields(profile)["arrival"].get("burst")
    if block is None:
        return Measured(None, "it has fewer than three arrivals apart in time", batched)
    return Measured(Burst.model_validate({**block, "measured_from": str(path)}), None, batched)


def _figures(burst: Burst) -> dict[str, object]:
    """A block's figures: what the capacity model and the report read, not where it is from."""
    return burst.model_dump(mode="json", exclude={"measured_from"})


def checked_stated(w: Workload) -> Burst | None:
    """The block a workload states with ``measured_from``, as it is to be taken: itself while
    its figures equal what profiling the named trace gives; else a copy without
    ``measured_from`` that says why (``Burst.edited_from``). ``None`` for a workload stating
    no such block."""
    burst = w.arrival.burst if w.arrival is not None else None
    if burst is None or burst.measured_from is None:
        return None
    link = w.arrival.trace if w.arrival is not None else None
    fmt = link.format if link is not None and Path(link.path) == Path(burst.measured_from) else None
    try:
        found = measure(TraceLink(path=burst.measured_from, format=fmt))
    except (OSError, InputError):
        why = f"its trace {burst.measured_from} could not be read to check it"
    else:
        if found.burst is not None and _figures(found.burst) == _figures(burst):
            return burst
        why = (f"profiling {burst.measured_from} gives no block ({found.why_not})"
               if found.burst is None else
               f"its figures differ from what profiling {burst.measured_from} gives"
               + (f" (inter-arrival SCV {burst.interarrival_scv:.3g} stated, "
                  f"{found.burst.interarrival_scv:.3g} measured)"
                  if found.burst.interarrival_scv != burst.interarrival_scv else ""))
    stated = burst.model_copy(update={"measured_from": None})
    stated._edited_from = why
    return stated


def _unstated(w: Workload) -> TraceLink | None:
    """The workload's trace where it states no burst (else ``None``)."""
    if w.arrival is None or w.arrival.trace is None or w.arrival.burst is not None:
        return None
    return w.arrival.trace


def with_trace_bursts(scenario: Scenario) -> Scenario:
    """``scenario`` with each workload that links a trace and states no ``arrival.burst``
    given the block measured from its trace (where the trace gives one), and each stated block
    naming ``measured_from`` checked against that trace (:func:`checked_stated`)."""
    workloads = []
    for w in scenario.workloads:
        link = _unstated(w)
        burst = measure(link).burst if link is not None else None
        if burst is not None:
            burst = burst.model_copy()  # the cached block stays as measured, unmarked
            burst._planner_measured = True
        else:
            burst = checked_stated(w)
        if burst is not None and w.arrival is not None and burst is not w.arrival.burst:
            w = w.model_copy(update={"arrival": w.arrival.model_copy(update={"burst": burst})})
        workloads.append(w)
    if all(a is b for a, b in zip(workloads, scenario.workloads, strict=True)):
        return scenario
    return scenario.model_copy(update={"workloads": tuple(workloads)})


def trace_burst_warnings(scenario: Scenario) -> list[str]:
    """A warning for each workload that links a trace, states no burst, and whose trace gives
    none (after :func:`with_trace_bursts`: the only ones left): it is sized as Poisson, or,
    where it is sized on the trace's replayed window (``trace_window_sizing``), on that
    window, whose bursts a trace this short may not hold."""
    out = []
    for w in scenario.workloads:
        link = _unstated(w)
        if link is None:
            continue
        why = measure(link).why_not or "it gives no burst block"
        if (window := trace_window_sizing(w)) is not None:
            out.append(f"`{w.name}` names a trace ({link.path}) but no arrival.burst, and none "
                       f"can be measured from the trace ({why}): it is sized on the trace's "
                       f"replayed window ({window}), which a trace this short may cut "
                       f"from traffic calmer than the real peak — link a longer trace of the "
                       f"same traffic")
            continue
        then = ("a plan over periods replays its first period's fleet but is not re-planned "
                "on it, so nothing corrects that"
                if scenario.multi_period else
                "only the plan's trace replay corrects that, by de-rating every configuration "
                "of it where the replay misses, which may buy more than the traffic needs")
        out.append(f"`{w.name}` names a trace ({link.path}) but no arrival.burst, and none can "
                   f"be measured from the trace ({why}): it is sized as a Poisson stream, and "
                   f"{then} — give arrival.burst as `fleetplan profile` prints it for a longer "
                   f"trace of the same traffic")
    return out


def batched_trace_warnings(scenario: Scenario) -> list[str]:
    """A warning for each workload whose linked trace records its arrivals in batches (as
    ``fleetplan profile`` warns of the trace: Mooncake's conversation trace stamps about ten
    arrivals at once every 3 s): what the plan sizes on those arrivals, and that its replay
    replays each batch as simultaneous arrivals. Read on the scenario as the CLI loads it
    (bursts measured, windows cut: :func:`solver.cli.common.load`)."""
    out = []
    for w in scenario.workloads:
        link = w.arrival.trace if w.arrival is not None else None
        if link is None:
            continue
        batched = measure(link).batched
        if batched is None:
            continue
        burst = w.arrival.burst if w.arrival is not None else None
        window = trace_window_sizing(w)
        if window is not None:
            sized = f"it is sized on the replay of its window ({window})"
        elif burst is not None and burst.measured_from is not None and (
                Path(burst.measured_from) == Path(link.path)):
            sized = "it is sized with the burst block measured from them"
        else:
            sized = "the capacity model does not read them"
        out.append(f"`{w.name}` links {link.path}: {batched}: {sized}, and the plan's trace "
                   "replay (unless --no-replay) replays each batch as arrivals at one instant, "
                   "which the traffic may not have had — the fleet may be sized for the "
                   "recording, not the "
                   "traffic: link a trace of the same traffic with finer timestamps, or leave "
                   "arrival.trace out and give arrival.burst (else Poisson)")
    return out


def located_in_scenario(scenario: Scenario, problems: tuple[Problem, ...]) -> list[Problem]:
    """``problems`` found reading the traces the scenario links, each a trace's one located at
    the workload field linking it, in the scenario's file (``sources[0]``): an empty trace was
    refused naming the trace alone, not which scenario, workload and field link it. Problems
    of no linked trace are kept as they are."""
    file = scenario.sources[0] if scenario.sources else scenario.name
    links = [(i, Path(w.arrival.trace.path)) for i, w in enumerate(scenario.workloads)
             if w.arrival is not None and w.arrival.trace is not None]
    out = []
    for p in problems:
        at = [i for i, path in links if Path(p.file) == path]
        if not at:
            out.append(p)
            continue
        where = f"{p.file}: {p.location}" if p.location else p.file
        out += [Problem(file, f"workloads[{i}].arrival.trace.path", f"trace {where}: {p.message}",
                        f"{p.fix}; or link a trace with requests" if p.fix else
                        "link a trace with requests") for i in at]
    return out
