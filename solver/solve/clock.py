"""One clock for a solve: the deadline every stage draws its time from, and the stop request.

A plan is given ``--time-limit`` seconds of wall time, counted by ``fleetplan plan`` from the
process's start (:func:`process_origin`: the interpreter's and the imports' seconds, 0.2–4 s on a
loaded machine, are the user's seconds too) and shortened by the time kept back to write its
outputs (:meth:`Deadline.keep_back`). Every stage of the solve — starts,
improvement steps, the joint solve — asks the same :class:`Deadline` how long it may run: its
share of the limit, never more than what is left less the time kept back to assemble the plan.
No stage has a floor of its own, so none can run past the limit; a stage offered too little
time is skipped. A user's interrupt (SIGINT, SIGTERM) is a stop request on the same clock: every
stage polls :meth:`Deadline.expired`, which is true past the deadline or once stopped.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

#: Share of the time limit kept back for reading the fleet and assembling the plan (costs,
#: survivability rows, the verifier), at least ``ASSEMBLE_MIN_S`` [1], [s].
ASSEMBLE_SHARE = 0.03
ASSEMBLE_MIN_S = 0.15

#: The safety stop of a plan over periods when no ``--time-limit`` is given: its blocks solved
#: whole and its joint solve end at limits counted in work, quarterly.yaml's in 90–250 s on a
#: loaded 2-core machine (benchmarks/results/over-periods.md, "Over periods"), so the default
#: 60 s stopped it there and its plan depended on the load; stages planned in shares of the time
#: (blocks too large to solve whole) still take the default limit [s].
HORIZON_SAFETY_S = 600.0


def horizon_limits(time_limit_s: float, limit_given: bool) -> tuple[float, float]:
    """The clocks of a plan over periods, ``(time_limit_s, share_limit_s)`` of
    :func:`~solver.solve.horizon.plan_horizon`, as ``fleetplan plan`` sets them — and so
    ``compare`` and ``sweep`` for each variant over periods: a limit the user gave bounds both;
    without one the stages limited in work end at their limits, the clock a safety stop at
    :data:`HORIZON_SAFETY_S`, and the stages planned in shares of the time take the default
    ``time_limit_s`` [s]."""
    return (time_limit_s if limit_given else HORIZON_SAFETY_S), time_limit_s


#: The longest a process may have run before its command starts for its start to be the
#: command's: an interpreter and fleetplan's imports take 0.2–4 s (the longest at load 8); a
#: process that ran longer before (a program calling the command) counts from the command [s].
STARTUP_MOST_S = 30.0

#: The longest a process may have run before fleetplan's first import for its start to be the
#: command's: the interpreter's own start takes well under a second. A shell that ran a set-up
#: and then exec'd ``fleetplan`` in its own process (``bash -c "pip install … && fleetplan
#: plan"``: bash execs the last command) has its start at the shell's: the README's one-liner
#: put pip's ~25 s on the demo's clock (solver.seconds 39.9 s for a 14-s solve) [s].
PRE_IMPORT_MOST_S = 5.0

#: The most a machine's load is taken to slow this process (wall ÷ CPU seconds), so that a
#: stalled start (a cold disk) does not keep most of the limit back.
SLOWDOWN_MOST = 8.0


@dataclass(frozen=True)
class Origin:
    """Where a command's clock starts: ``wall_s`` on ``time.perf_counter``'s scale and
    ``cpu_s`` on ``time.process_time``'s, taken together."""

    wall_s: float
    cpu_s: float

    @classmethod
    def now(cls) -> Origin:
        """This instant."""
        return cls(time.perf_counter(), time.process_time())

    def slowdown(self) -> float:
        """Wall seconds per CPU second of this process since the origin, within
        [1, :data:`SLOWDOWN_MOST`]: how much a loaded machine stretches single-threaded work
        here (measured before the solve, while only the main thread works)."""
        wall_s = time.perf_counter() - self.wall_s
        cpu_s = time.process_time() - self.cpu_s
        if cpu_s <= 0.0:
            return 1.0
        return min(max(wall_s / cpu_s, 1.0), SLOWDOWN_MOST)


def process_origin(fallback: Origin) -> Origin:
    """The start of this process, on ``time.perf_counter``'s scale, with no CPU spent yet.

    Read from ``/proc/self/stat`` (the start in clock ticks since boot, field 22) against
    ``CLOCK_BOOTTIME``; ``fallback`` (taken at fleetplan's first import) where that cannot be
    read (not Linux), where the process ran more than :data:`STARTUP_MOST_S` before this call
    (it was not started for this command), or more than :data:`PRE_IMPORT_MOST_S` before
    ``fallback`` (a shell's process that exec'd the command after other work).
    """
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()  # after the command name
        started_s = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime
        age_s = time.clock_gettime(time.CLOCK_BOOTTIME) - started_s
    except (OSError, ValueError, IndexError, AttributeError):
        return fallback
    before_import_s = age_s - (time.perf_counter() - fallback.wall_s)
    if not 0.0 <= age_s <= STARTUP_MOST_S or before_import_s > PRE_IMPORT_MOST_S:
        return fallback
    return Origin(time.perf_counter() - age_s, 0.0)


class Deadline:
    """A wall-clock deadline ``limit_s`` seconds from ``started`` (default: its creation), and a
    stop request.

    ``clock`` is the time source (``time.perf_counter`` unless a test gives another).
    """

    def __init__(self, limit_s: float, clock: Callable[[], float] | None = None,
                 started: float | None = None) -> None:
        self.limit_s = float(limit_s)
        self._clock = clock or time.perf_counter
        self.started = self._clock() if started is None else started
        self.kept_back_s = 0.0
        """Seconds of the limit kept back for the work after the solve (:meth:`keep_back`)."""
        self.extended_s = 0.0
        """Seconds added to the limit as given (:meth:`extend`)."""
        self.pending_s = 0.0
        """Seconds to keep back once a fleet is held (:meth:`keep_back_after_a_fleet`)."""
        self._pending_lock = threading.Lock()
        self.reserve_s = min(max(ASSEMBLE_SHARE * self.limit_s, ASSEMBLE_MIN_S),
                             0.2 * self.limit_s)
        """Seconds kept back at the end for assembling the plan."""
        self._stop = threading.Event()
        self.stop_reason: str | None = None
        self._followers: list[Deadline] = []

    def elapsed(self) -> float:
        """Seconds since the clock started [s]."""
        return self._clock() - self.started

    @property
    def given_s(self) -> float:
        """The limit as given, before any time was kept back (what messages name) [s]."""
        return self.limit_s + self.kept_back_s - self.extended_s

    def extend(self, seconds: float) -> None:
        """Move the deadline ``seconds`` later (the limit as given, :attr:`given_s`, is
        unchanged): a limit the process's start-up alone used up counts from its end
        (``fleetplan plan``)."""
        added = max(seconds, 0.0)
        self.limit_s += added
        self.extended_s += added

    def keep_back(self, seconds: float) -> None:
        """End the solve ``seconds`` earlier: the limit is shortened by them (kept for writing
        the plan's files after it), and so is every stage's share of it."""
        kept = min(max(seconds, 0.0), self.limit_s)
        self.limit_s -= kept
        self.kept_back_s += kept

    def keep_back_after_a_fleet(self, seconds: float) -> None:
        """:meth:`keep_back` ``seconds`` once the solve holds a fleet (:meth:`fleet_found`):
        until then it keeps the whole limit (at load 18–20, keeping the writing's time back
        from the start left large ×25's 60 s without a fleet, where main's found one)."""
        self.pending_s += max(seconds, 0.0)

    def fleet_found(self) -> None:
        """The solve holds a fleet: the time :meth:`keep_back_after_a_fleet` asked for is kept
        back now (the stages see a shorter limit from here on)."""
        with self._pending_lock:  # stages in several threads may each find one
            pending, self.pending_s = self.pending_s, 0.0
        if pending > 0.0:
            self.keep_back(pending)

    def left(self) -> float:
        """Seconds a stage may still use: to the deadline less the assembly reserve, ≥ 0 [s]."""
        return max(self.limit_s - self.reserve_s - self.elapsed(), 0.0)

    def share(self, fraction: float) -> float:
        """A stage's budget: ``fraction`` of the limit, at most what is left (0 once stopped)."""
        if self.stopped:
            return 0.0
        return min(fraction * self.limit_s, self.left())

    def stop(self, reason: str = "interrupted") -> None:
        """Ask every stage to stop now (from a signal handler or another thread), the stages
        on a clock that follows this one too."""
        if not self._stop.is_set():
            self.stop_reason = reason
        self._stop.set()
        for follower in self._followers:
            follower.stop(reason)

    def follower(self, limit_s: float) -> Deadline:
        """A clock of its own ``limit_s`` seconds from now that this one's stop request stops
        too (stopped already if this one is): a solve planned in several clocks of its own —
        a plan over periods: a safety stop and the shares of the time — still stops on Ctrl-C."""
        follower = Deadline(limit_s, self._clock)
        self._followers.append(follower)
        if self.stopped:
            follower.stop(self.stop_reason or "interrupted")
        return follower

    def along(self, limit_s: float) -> Deadline:
        """A follower of ``limit_s`` seconds counted from this clock's start, not from now, less
        the time this one keeps back for writing (:meth:`keep_back`): a stage's clock on the
        same stopwatch. A plan over periods planned its stages on clocks of ``--time-limit``
        seconds from the start of its planning, after the process's start-up, and wrote its
        files after them: quarterly.yaml at ``--time-limit 30`` ran 47.6 s at load 9.5
        (benchmarks/results/clock.md, "The time limit on the user's stopwatch")."""
        follower = self.follower(limit_s)
        follower.started = self.started
        follower.keep_back(self.kept_back_s)
        return follower

    def twin(self) -> Deadline:
        """A clock of this one's limit and start — the same shares, the same deadline — that
        this one's stop request stops too, and that can be stopped alone: a search that ends
        on a condition of its own (its bound above the budget, :mod:`solver.solve.budget`)
        without stopping the plan. A follower started later has a shorter limit and so
        smaller shares: a budgeted plan's stages, given them, took another path than the same
        plan without the budget (the trust sweep's medium ×2)."""
        twin = self.follower(self.limit_s)
        twin.started, twin.kept_back_s = self.started, self.kept_back_s
        twin.pending_s = self.pending_s
        return twin

    @property
    def stopped(self) -> bool:
        """Whether a stop was asked for."""
        return self._stop.is_set()

    def expired(self) -> bool:
        """Past the deadline (less the assembly reserve), or stopped."""
        return self.stopped or self.left() <= 0.0

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds`` or until stopped; whether a stop was asked for."""
        return self._stop.wait(max(seconds, 0.0))


#: Native solves (HiGHS) running now, in any thread. A Python exception raised into one — a
#: second Ctrl-C raising KeyboardInterrupt inside a HiGHS callback, or in the main thread while
#: HiGHS threads still run — aborted the process ("terminate called without an active
#: exception", exit −6): the handler asks the solve to stop instead and raises once it returns
#: (solver.cli.progress.stop_on_signals).
_native = 0
_native_lock = threading.Lock()


@contextlib.contextmanager
def native_solve() -> Iterator[None]:
    """Mark a native solve running while inside (:func:`native_running`)."""
    global _native
    with _native_lock:
        _native += 1
    try:
        yield
    finally:
        with _native_lock:
            _native -= 1


def native_running() -> bool:
    """Whether a native solve runs now, in any thread."""
    return _native > 0
