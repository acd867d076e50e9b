"""The one incumbent of a solve: the best verified fleet, the best proven bound, and the status.

Every stage — a start, an improvement step, the joint solve — offers the fleets it finds to the
same :class:`Incumbent`; a fleet is kept only if it breaks no row of the program (checked here,
whoever found it) and is cheaper than the one held. Every valid lower bound (the capacity cost of
the demand, the LP relaxation, the joint solver's bound) raises the same bound. The status and
gap of the plan are decided in one place, :meth:`Incumbent.outcome`, from what it holds and how
the solve ended. The stages run in a thread of their own while the caller reads progress (and
a signal handler may end the solve), so every method holds a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from models.plan import SolverReport, SolverStage, SolveStatus
from solver.solve.clock import Deadline
from solver.solve.highs import Model, Progress, Vector

#: A fleet must be this much cheaper (relatively) than the one held to replace it [1].
IMPROVEMENT = 1e-9
#: A gap within this of the target counts as the target [1].
GAP_TOL = 1e-6


@dataclass(frozen=True)
class Status:
    """What the plan says about its solve: status, gap and bound (``None``: not known)."""

    status: SolveStatus
    gap: float | None
    bound: float | None


class Incumbent:
    """Best verified fleet and best proven bound of one solve, and the record of its stages."""

    def __init__(self, model: Model, deadline: Deadline, target_gap: float,
                 on_progress: Callable[[Progress, str], None] | None = None) -> None:
        self.model = model
        self.deadline = deadline
        self.target_gap = target_gap
        self.on_progress = on_progress
        self.x: Vector | None = None
        self.cost: float | None = None
        self.source: str | None = None
        self.bound: float | None = None
        self.rejected: list[tuple[str, list[str]]] = []
        """Fleets a stage offered that broke rows: (stage, the first rows broken)."""
        self.stages: list[SolverStage] = []
        self.forward_to: Incumbent | None = None
        """An incumbent every fleet held here is offered to as well (:meth:`around`)."""
        self._lock = threading.Lock()
        self._version = 0
        self._running: list[str] = []

    # --- fleets and bounds -----------------------------------------------------------------

    def offer(self, x: Vector, stage: str) -> bool:
        """Keep ``x`` if it breaks no row and is cheaper than the fleet held; whether kept."""
        return self._hold(x, stage, _cheaper)

    def around(self, x: Vector, stage: str) -> Incumbent | None:
        """An incumbent of its own holding ``x`` (``None`` where ``x`` breaks a row), with this
        one's bound, whose every fleet is offered to this one too: a search around a fleet
        dearer than the one held, that still hands on whatever beats it."""
        side = Incumbent(self.model, self.deadline, self.target_gap)
        side.raise_bound(self.bound, stage)
        if not side.offer(x, stage):
            return None
        side.forward_to = self
        return side

    def settle(self, x: Vector, stage: str) -> bool:
        """Hold ``x`` instead of the fleet held if it breaks no row and costs no more (the
        canonical choice among fleets of one cost); whether held."""
        return self._hold(x, stage, _no_dearer)

    def _hold(self, x: Vector, stage: str,
              accepts: Callable[[float, float | None], bool]) -> bool:
        """Hold ``x`` (integers rounded) if ``accepts(its cost, the cost held)`` before and
        after its rows are checked (another stage may have offered meanwhile) and it breaks
        no row; whether held. The rows are checked outside the lock: they take the longest."""
        x = np.where(self.model.integer, np.round(x), x)
        cost = self.model.cost_of(x)
        with self._lock:
            if not accepts(cost, self.cost):
                return False
        broken = self.model.broken_rows(x)
        with self._lock:
            if broken:
                self.rejected.append((stage, broken[:5]))
                return False
            if not accepts(cost, self.cost):
                return False
            held = cost if self.cost is None else min(cost, self.cost)
            self.x, self.cost, self.source = x, held, stage
            self._version += 1
        self.deadline.fleet_found()  # the time kept back for writing, once there is a fleet
        self._report(stage)
        if self.forward_to is not None:
            self.forward_to.offer(x, stage)
        return True

    def raise_bound(self, bound: float | None, stage: str) -> None:
        """Take a valid lower bound (kept where it is higher than the one held)."""
        if bound is None or bound != bound:
            return
        with self._lock:
            if self.bound is not None and bound <= self.bound:
                return
            self.bound = bound
        self._report(stage)

    def fleet(self) -> tuple[Vector | None, float | None]:
        """The fleet held and its cost."""
        with self._lock:
            return self.x, self.cost

    def newer_than(self, version: int) -> tuple[int, Vector | None]:
        """The fleet held if it changed since ``version`` (else ``None``), and its version."""
        with self._lock:
            return self._version, (self.x if self._version > version else None)

    def gap(self) -> float | None:
        """(cost − bound) / cost of what is held [1]."""
        with self._lock:
            return _gap(self.cost, self.bound)

    def proven(self) -> bool:
        """The fleet held is proven within the target gap."""
        g = self.gap()
        return g is not None and g <= self.target_gap + GAP_TOL

    # --- stages -------------------------------------------------------------------------------

    def record(self, name: str, seconds: float) -> None:
        """Note that a stage ended after ``seconds``, with what is held now."""
        with self._lock:
            self.stages.append(SolverStage(name=name, seconds=max(seconds, 0.0),
                                           cost_after=self.cost, bound_after=self._bound()))

    def running(self, name: str, on: bool) -> None:
        """Note that a stage started (``on``) or ended, for progress reports."""
        with self._lock:
            if on:
                self._running.append(name)
            elif name in self._running:
                self._running.remove(name)

    def progress(self, seen: Progress) -> None:
        """A running joint solve's figures: its bound is valid whenever read, so it is kept."""
        self.raise_bound(seen.bound, "joint")
        self._report(None)

    def _report(self, stage: str | None) -> None:
        if self.on_progress is None:
            return
        with self._lock:
            cost, bound = self.cost, self._bound()
            names = " + ".join(self._running) or stage or ""
        self.on_progress(Progress(self.deadline.elapsed(), cost, bound), names)

    def _bound(self) -> float | None:
        """The bound, never above the cost held (a proven bound cannot exceed a fleet's cost
        but by the solver's tolerance)."""
        if self.bound is None or self.cost is None:
            return self.bound
        return min(self.bound, self.cost)

    # --- the end ------------------------------------------------------------------------------

    def outcome(self, *, infeasible: bool = False, timed_out: bool = False) -> Status:
        """Status, gap and bound of the plan: decided here, once.

        ``optimal`` when the fleet is proven within the target gap; else ``interrupted`` when a
        stop was asked for; ``time_limit`` when the clock ran out (or a stage stopped on its
        own time limit) holding a fleet; ``feasible`` otherwise. Without a fleet: ``infeasible``
        if the joint solve proved it (no bound then), ``interrupted`` if stopped, else
        ``time_limit``.
        """
        with self._lock:
            cost, bound = self.cost, self._bound()
        gap = _gap(cost, bound)
        if cost is None:
            if infeasible:
                status = SolveStatus.infeasible
            elif self.deadline.stopped:
                status = SolveStatus.interrupted
            else:
                status = SolveStatus.time_limit
            # a program proven infeasible has no finite bound: no fleet meets it at any cost
            return Status(status, None, None if status is SolveStatus.infeasible else bound)
        if gap is not None and gap <= self.target_gap + GAP_TOL:
            status = SolveStatus.optimal
        elif self.deadline.stopped:
            status = SolveStatus.interrupted
        elif timed_out or self.deadline.expired():
            status = SolveStatus.time_limit
        else:
            status = SolveStatus.feasible
        return Status(status, gap, bound)

    def report(self, name: str, status: Status) -> SolverReport:
        """The plan's solver report: the status's gap and bound, the cost, every stage."""
        with self._lock:
            return SolverReport(name=name, seconds=self.deadline.elapsed(), gap=status.gap,
                                bound=status.bound, objective=self.cost,
                                stages=tuple(self.stages))


def _cheaper(cost: float, held: float | None) -> bool:
    """An offered fleet replaces the one held: nothing is held, or it is cheaper."""
    return held is None or cost < held * (1 - IMPROVEMENT)


def _no_dearer(cost: float, held: float | None) -> bool:
    """A settled fleet replaces the one held: one is held and it costs no more."""
    return held is not None and cost <= held * (1 + IMPROVEMENT)


def _gap(cost: float | None, bound: float | None) -> float | None:
    if cost is None or bound is None:
        return None
    if cost <= 0:
        return 0.0
    return max(cost - bound, 0.0) / cost
