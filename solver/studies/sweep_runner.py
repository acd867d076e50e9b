"""Run a sweep: plan what is not done yet, record each variant as it lands, count as it goes.

Variants whose key already has a record (``--resume``) are read back, not planned; variants that
are the same plan (same key) are planned once. Progress is a :class:`Progress` snapshot handed
to a callback at every event: finished, running, failed and waiting counts, and an ETA from the
rate at which this run has finished variants so far.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from solver.studies.executors import (
    Executor,
    Finished,
    Retrying,
    SolveOptions,
    Started,
    Task,
    run_tasks,
)
from solver.studies.sweep import SweepVariant
from solver.studies.sweep_results import SweepResult
from solver.studies.sweep_store import SweepStore


@dataclass(frozen=True)
class Progress:
    """Where a sweep stands."""

    total: int
    """Variants to plan in this run (resumed ones not counted)."""
    finished: int
    running: int
    failed: int
    retried: int
    elapsed_s: float
    last: SweepResult | None = None
    """The variant that just finished, if that is the news."""

    @property
    def waiting(self) -> int:
        """Not started yet."""
        return self.total - self.finished - self.failed - self.running

    @property
    def eta_s(self) -> float | None:
        """Seconds left at this run's rate so far; ``None`` before anything finished."""
        done = self.finished + self.failed
        if done == 0:
            return None
        return self.elapsed_s / done * (self.total - done)


def run_sweep(variants: Sequence[SweepVariant], options: SolveOptions, store: SweepStore | None,
              executor: Executor, progress: Callable[[Progress], None] | None = None
              ) -> list[SweepResult]:
    """Every variant's result, in the sweep's order. With a ``store``, finished variants are
    read back from it and each variant planned here is recorded the moment it lands."""
    done: dict[str, SweepResult] = {}
    if store is not None:
        for key in store.finished() & {v.key for v in variants}:
            record = store.read(key)
            if record is not None:
                variant = next(v for v in variants if v.key == key)
                done[key] = SweepResult(variant, record.plan, record.seconds, record.attempts,
                                        resumed=True)
    first: dict[str, SweepVariant] = {}
    for variant in variants:
        if variant.key not in done:
            first.setdefault(variant.key, variant)
    tasks = [Task(v.key, v.label, v.scenario, options) for v in first.values()]
    started = time.perf_counter()
    running: set[str] = set()
    finished = failed = retried = 0

    def report(last: SweepResult | None = None) -> None:
        if progress is not None:
            progress(Progress(len(tasks), finished, min(len(running), executor.slots), failed,
                              retried, time.perf_counter() - started, last))

    report()
    for event in run_tasks(tasks, executor):
        if isinstance(event, Started):
            running.add(event.task.key)
        elif isinstance(event, Retrying):
            running.discard(event.task.key)
            retried += 1
        elif isinstance(event, Finished):
            running.discard(event.task.key)
            variant = first[event.task.key]
            if event.planned is None:
                failed += 1
                result = SweepResult(variant, None, None, event.attempts, event.error)
            else:
                finished += 1
                planned = event.planned
                if store is not None:
                    store.write(variant, planned.plan, planned.seconds, event.attempts)
                result = SweepResult(variant, planned.plan, planned.seconds, event.attempts)
            done[variant.key] = result
            report(result)
            continue
        report()
    return [_as_variant(done[v.key], v) for v in variants]


def _as_variant(result: SweepResult, variant: SweepVariant) -> SweepResult:
    """A result carried over to another variant of the same key (its own label and values)."""
    if result.variant is variant:
        return result
    return SweepResult(variant, result.plan, result.seconds, result.attempts, result.error,
                       resumed=result.resumed)
