"""The joint program over periods solved by HiGHS in a process of its own, beside the blocks,
for its bound (solver/solve/horizon.py, ``plan_horizon``).

A plan over periods whose blocks are planned in shares of the time runs in one process: the
blocks' solves (HiGHS with two threads) kept about 1.1–1.3 of a 2-core machine busy in the
harness's × 25 case, and the joint solve after them has the seconds they leave (about 10 s
of 120) — its root reaches 20.86 M there, where HiGHS's root on the same program from no start
reaches 20.98 M with a minute of CPU (benchmarks/results/over-periods.md, "Over periods"). Here that
root runs on the idle core from the build on: the program's arrays (:class:`~solver.solve.highs.
Model`) go to a process of the fork server (:mod:`solver.solve.workers`), which solves it
with one thread, no start and no fleet wanted, at a lower priority (``BESIDE_NICE``: the core
the blocks leave, not theirs), until the plan's clock or until its bound stalls; the plan
takes the bound HiGHS proved by then (a bound of the same program, as the joint solve's is),
and the joint solve after the blocks runs as before. Its fleets are not used: from no start
they are most of their cost from the bound.

The process ignores SIGINT (a terminal sends Ctrl-C to the whole process group): the plan's
stop request ends it through :meth:`RootBeside.bound`, which ends it in any case.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import time
from multiprocessing.connection import Connection
from typing import Any

from solver.solve.backends import SOLVER_SEED, quiet_stdout
from solver.solve.clock import Deadline
from solver.solve.highs import Model

#: Least time the plan's clock must leave the root beside the blocks for it to start: a root
#: of fewer seconds would not end its first LP on the × 25 program (about 5 s of one core) [s].
BESIDE_MIN_S = 20.0
#: Seconds before the plan's clock ends at which the process's HiGHS stops, so its bound is
#: there when the plan asks for it [s].
BESIDE_MARGIN_S = 1.0
#: Seconds the plan waits for the process to end once terminated [s].
BESIDE_GRACE_S = 2.0
#: Seconds between two bounds the process sends (the plan takes the last one sent) [s].
BESIDE_REPORT_S = 0.5
#: Seconds between two reports of the process's CPU time where its bound did not rise: few
#: enough that the pipe, read only when the plan takes the bound, never fills (a 64-KiB pipe
#: holds some 2,000 reports: 10,000 s at this rate) [s].
BESIDE_CPU_REPORT_S = 5.0
#: The process stops once its bound has risen by less than ``BESIDE_STALL_GAIN`` of itself in
#: its last ``BESIDE_STALL_S`` of CPU: on the × 25 harness case (one thread, no load of its own) the
#: root's bound rose 20.963 → 20.985 M from 42 to 69 s, then by 32 in the 38 s after [s], [1].
BESIDE_STALL_S = 10.0
BESIDE_STALL_GAIN = 1e-4
#: Niceness the process adds to its own: it takes the core the blocks leave idle, not theirs.
#: At the planner's niceness, on the machine shared with other sessions (load 9–13, each
#: session's processes sharing one slice of the CPU), the plan's process got 79–117 CPU-s in
#: 117 s where it got 119–146 alone, and its fleet was 0.4–1.0 % dearer
#: (benchmarks/results/over-periods.md, "Over periods") [1].
BESIDE_NICE = 10
#: Cores a machine needs for the root to run beside the blocks: on one core it would take
#: the blocks' time [1].
BESIDE_CORES = 2


def _arrays(model: Model) -> tuple[Any, ...]:
    """What a process needs to rebuild ``model``'s HiGHS program: its arrays (they pickle;
    a ``highspy.HighsLp`` does not)."""
    return (model.cost, model.lower, model.upper, model.integer, model.row_lower,
            model.row_upper, model.starts, model.columns, model.values)


def _root_bound(arrays: tuple[Any, ...], until: float, out: Connection) -> None:
    """In the process: the program of ``arrays`` solved by HiGHS with one thread, no start,
    until ``until`` (a ``time.monotonic`` reading: one clock for every process on the machine;
    the process's start and the program's copy count); each higher bound it proves sent on
    ``out`` as it goes (every ``BESIDE_REPORT_S`` at most) and the last as it ends, each with
    the process's CPU seconds so far (also every ``BESIDE_CPU_REPORT_S`` where the bound is
    flat)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(BESIDE_NICE)
    import highspy

    cost, lower, upper, integer, row_lower, row_upper, starts, columns, values = arrays
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = len(cost), len(row_lower)
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = cost, lower, upper
    lp.row_lower_, lp.row_upper_ = row_lower, row_upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = len(cost), len(row_lower)
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = starts, columns, values
    lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                       for i in integer]
    with quiet_stdout():  # its banner
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(lp)
    limit_s = max(until - time.monotonic(), 0.0)
    for option, value in (("time_limit", float(limit_s)), ("threads", 1),
                          ("random_seed", SOLVER_SEED)):
        h.setOptionValue(option, value)
    sent = [-math.inf, 0.0]  # the highest bound sent, and when the last report went
    seen: list[tuple[float, float]] = []  # (CPU seconds, bound) as HiGHS reported them

    def send(bound: float, now: float) -> None:
        # every report carries the process's CPU seconds so far: the plan's own clock of CPU
        # does not see a process of the fork server's (benchmarks' CPU column adds it)
        if math.isfinite(bound):
            sent[0] = max(sent[0], bound)
        out.send((sent[0], time.process_time()))
        sent[1] = now

    def heard(event: Any) -> None:
        now = time.monotonic()
        bound = float(event.data_out.mip_dual_bound)
        waited_s = now - sent[1]
        if waited_s >= BESIDE_CPU_REPORT_S or (waited_s >= BESIDE_REPORT_S and bound > sent[0]):
            send(bound, now)
        if not math.isfinite(bound):
            return
        # on the process's own CPU clock: at its niceness a loaded machine may give it none
        # for seconds, and a bound that did not move then has not stalled
        cpu = time.process_time()
        seen.append((cpu, bound))
        if cpu - seen[0][0] < BESIDE_STALL_S:
            return
        then = next(b for t, b in reversed(seen) if t <= cpu - BESIDE_STALL_S)
        if bound - then <= BESIDE_STALL_GAIN * abs(bound):
            event.interrupt()  # the root's cuts have done what they do: the core is the blocks'

    h.cbMipInterrupt.subscribe(heard)
    h.run()
    send(float(h.getInfo().mip_dual_bound), time.monotonic())
    out.close()


class RootBeside:
    """HiGHS on ``model`` (the joint program) in a process of the fork server until
    ``clock`` leaves ``BESIDE_MARGIN_S``; :meth:`bound` takes what it has proved."""

    def __init__(self, model: Model, clock: Deadline) -> None:
        ctx = multiprocessing.get_context("forkserver")
        from solver.solve.workers import PRELOAD

        ctx.set_forkserver_preload(PRELOAD)
        self._receive, send = ctx.Pipe(duplex=False)
        self.limit_s = max(clock.left() - BESIDE_MARGIN_S, 0.0)
        self._until = time.monotonic() + self.limit_s
        self._process = ctx.Process(target=_root_bound, args=(_arrays(model), self._until, send),
                                    daemon=True)
        self._process.start()
        send.close()
        self.seconds = 0.0
        #: CPU seconds the process had used at its last report (every ``BESIDE_REPORT_S``) [s].
        self.cpu_s = 0.0

    def bound(self, wait_s: float = 0.0) -> float | None:
        """The highest bound HiGHS has proved beside the blocks (``None``: none yet), waiting
        up to ``wait_s`` for the process to end (its last bound; none: what it has sent so
        far — a plan whose joint solve stopped on the clock has no time left to wait, and one
        that proved its gap needs no more bound); the process is ended after."""
        began = time.monotonic()
        best: float | None = None
        try:
            while self._receive.poll(max(wait_s - (time.monotonic() - began), 0.0)):
                got, cpu_s = self._receive.recv()  # EOFError once the process has ended
                self.cpu_s = max(self.cpu_s, float(cpu_s))
                if math.isfinite(got):
                    best = float(got) if best is None else max(best, float(got))
        except (EOFError, OSError):  # the process has ended (or died): what it sent
            pass
        finally:
            self.close()
            self.seconds = time.monotonic() - began
        return best

    def close(self) -> None:
        """End the process (at once, if it still runs)."""
        if self._process.is_alive():
            self._process.terminate()
        self._process.join(timeout=BESIDE_GRACE_S)
        self._receive.close()


def beside_worth(clock: Deadline) -> bool:
    """Whether a root beside the blocks may start now: the machine has ``BESIDE_CORES`` and
    ``clock`` leaves it ``BESIDE_MIN_S``."""
    from solver.solve.workers import machine_cores

    return machine_cores() >= BESIDE_CORES and clock.left() >= BESIDE_MIN_S and not clock.stopped

