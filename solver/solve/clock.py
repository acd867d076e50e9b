"""One clock for a solve: the deadline every stage draws its time from, and the stop request.

A plan is given ``--time-limit`` seconds of wall time. Every stage of the solve — starts,
improvement steps, the joint solve — asks the same :class:`Deadline` how long it may run: its
share of the limit, never more than what is left less the time kept back to assemble the plan.
No stage has a floor of its own, so none can run past the limit; a stage offered too little
time is skipped. A user's interrupt (SIGINT, SIGTERM) is a stop request on the same clock: every
stage polls :meth:`Deadline.expired`, which is true past the deadline or once stopped.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

#: Share of the time limit kept back for reading the fleet and assembling the plan (costs,
#: survivability rows, the verifier), at least ``ASSEMBLE_MIN_S`` [1], [s].
ASSEMBLE_SHARE = 0.03
ASSEMBLE_MIN_S = 0.15

#: The safety stop of a plan over periods when no ``--time-limit`` is given: its blocks solved
#: whole and its joint solve end at limits counted in work, quarterly.yaml's in 90–250 s on a
#: loaded 2-core machine (benchmarks/README.md, "Over periods"), so the default 60 s stopped it
#: there and its plan depended on the load; stages planned in shares of the time (blocks too
#: large to solve whole) still take the default limit [s].
HORIZON_SAFETY_S = 600.0


def horizon_limits(time_limit_s: float, limit_given: bool) -> tuple[float, float]:
    """The clocks of a plan over periods, ``(time_limit_s, share_limit_s)`` of
    :func:`~solver.solve.horizon.plan_horizon`, as ``fleetplan plan`` sets them — and so
    ``compare`` and ``sweep`` for each variant over periods: a limit the user gave bounds both;
    without one the stages limited in work end at their limits, the clock a safety stop at
    :data:`HORIZON_SAFETY_S`, and the stages planned in shares of the time take the default
    ``time_limit_s`` [s]."""
    return (time_limit_s if limit_given else HORIZON_SAFETY_S), time_limit_s


class Deadline:
    """A wall-clock deadline ``limit_s`` seconds from creation, and a stop request.

    ``clock`` is the time source (``time.perf_counter`` unless a test gives another).
    """

    def __init__(self, limit_s: float, clock: Callable[[], float] | None = None) -> None:
        self.limit_s = float(limit_s)
        self._clock = clock or time.perf_counter
        self.started = self._clock()
        self.reserve_s = min(max(ASSEMBLE_SHARE * self.limit_s, ASSEMBLE_MIN_S),
                             0.2 * self.limit_s)
        """Seconds kept back at the end for assembling the plan."""
        self._stop = threading.Event()
        self.stop_reason: str | None = None
        self._followers: list[Deadline] = []

    def elapsed(self) -> float:
        """Seconds since the clock started [s]."""
        return self._clock() - self.started

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

    def twin(self) -> Deadline:
        """A clock of this one's limit and start — the same shares, the same deadline — that
        this one's stop request stops too, and that can be stopped alone: a search that ends
        on a condition of its own (its bound above the budget, :mod:`solver.solve.budget`)
        without stopping the plan. A follower started later has a shorter limit and so
        smaller shares: a budgeted plan's stages, given them, took another path than the same
        plan without the budget (the trust sweep's medium ×2)."""
        twin = self.follower(self.limit_s)
        twin.started = self.started
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
