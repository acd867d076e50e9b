"""Where the plans of a study run: local worker processes (the default), or Ray tasks.

Every plan is :func:`plan_task` on a :class:`Task`, in a process of its own, with the solver
threads the task names (never a number the executor picks), so a variant's plan is the same
whichever executor ran it. :func:`run_tasks` streams what happens — a task started, retried,
finished — in the order it happens; a task that raises, or whose worker dies, is tried once
more, then reported as failed: never dropped.

Ray is an optional extra (``pip install fleetplan[ray]``), imported only by
:class:`RayExecutor`.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from models.capacity import CapacityTable
from models.errors import InputError, MissingExtra, Problem
from models.plan import Plan
from models.scenario import Scenario
from solver.solve import clock

#: A task is tried this many times before it is reported as failed.
MAX_ATTEMPTS = 2
#: Object store of a local Ray instance started by a sweep [bytes] (Ray's default is 30 % of
#: the machine's memory; a variant's result is a plan and its capacity table, well under 1 MiB).
LOCAL_OBJECT_STORE_BYTES = 256 * 1024**2


@dataclass(frozen=True)
class SolveOptions:
    """Solver settings of every plan of a study."""

    solver: str = "highs"
    time_limit_s: float = 60.0
    gap: float = 0.01
    threads: int = 1
    """Solver threads per plan, fixed for the study (never chosen by the executor): HiGHS's
    search may differ with its thread count, and a plan must not depend on where it ran."""
    time_limit_given: bool = True
    """Whether the user gave ``time_limit_s`` (``--time-limit``); ``False``: it is the
    default, and a variant over periods is planned as ``fleetplan plan`` plans it without one —
    to its work limits, the clock a safety stop (:func:`solver.solve.clock.horizon_limits`) —
    so a variant's plan is the one ``plan`` makes of it."""

    def horizon_limits(self) -> tuple[float, float]:
        """``(time_limit_s, share_limit_s)`` of a variant planned over periods [s]."""
        return clock.horizon_limits(self.time_limit_s, self.time_limit_given)


@dataclass(frozen=True)
class Task:
    """One plan to make."""

    key: str
    """The variant's content hash."""
    label: str
    scenario: Scenario
    options: SolveOptions


@dataclass(frozen=True)
class Planned:
    """What a worker returns: the plan, its capacity table, and the worker's wall time."""

    plan: Plan
    table: CapacityTable
    seconds: float
    """Wall time of the task in its worker, capacity table included [s]."""


def plan_task(task: Task) -> Planned:
    """Plan one task (runs in a worker process) with the threads it names, as ``fleetplan
    plan`` plans it: over its horizon where it has one (the table is then its first period's)."""
    from solver.capacity.table import build_capacity_table
    from solver.outputs.slo_cause import with_slo_causes
    from solver.solve.backends import solver_threads
    from solver.solve.horizon import first_period_scenario, plan_horizon
    from solver.solve.strategy import plan_scenario

    started = time.perf_counter()
    options = task.options
    with solver_threads(options.threads):
        if task.scenario.multi_period:
            horizon_s, share_s = options.horizon_limits()
            plan = plan_horizon(task.scenario, solver=options.solver, time_limit_s=horizon_s,
                                share_limit_s=share_s, gap=options.gap)
            table = build_capacity_table(first_period_scenario(plan, task.scenario),
                                         task.scenario.gpus_sold_or_held())
        else:
            table = build_capacity_table(task.scenario, task.scenario.gpus_sold_or_held())
            plan = plan_scenario(task.scenario, table, solver=options.solver,
                                 time_limit_s=options.time_limit_s, gap=options.gap)
    # an SLO no configuration meets is named, as `plan` names it (solver/outputs/slo_cause.py)
    plan = with_slo_causes(plan, task.scenario, table)
    return Planned(plan, table, time.perf_counter() - started)


class Executor(Protocol):
    """Runs tasks somewhere and hands back each as it finishes."""

    name: str
    slots: int
    """Tasks that run at once."""
    depth: int
    """Tasks handed over at once (slots, plus a queue where handing over takes a round trip)."""

    def submit(self, task: Task) -> None:
        """Start ``task`` (or queue it behind the running ones)."""

    def next_done(self) -> tuple[Task, Planned | BaseException]:
        """Block until a task ends: its result, or what went wrong."""

    def close(self) -> None:
        """Release the workers."""


def default_workers(threads: int) -> int:
    """Worker processes that fit this machine: cores ÷ solver threads, at least one."""
    return max(1, (os.cpu_count() or 1) // threads)


class LocalExecutor:
    """Worker processes on this machine (``spawn``ed: a child forked after HiGHS ran in the
    parent inherits its thread pool in a broken state and can spin inside the next solve)."""

    name = "local"

    def __init__(self, workers: int, fn: Callable[[Task], Planned] = plan_task) -> None:
        self.slots = self.depth = workers
        self._fn = fn
        self._pool: ProcessPoolExecutor | None = None
        self._futures: dict[Future[Planned], Task] = {}

    def _new_pool(self) -> ProcessPoolExecutor:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = ProcessPoolExecutor(max_workers=self.slots,
                                         mp_context=multiprocessing.get_context("spawn"))
        return self._pool

    def submit(self, task: Task) -> None:
        pool = self._pool or self._new_pool()
        try:
            future = pool.submit(self._fn, task)
        except BrokenProcessPool:  # a worker died: the pool takes no more work, a new one does
            future = self._new_pool().submit(self._fn, task)
        self._futures[future] = task

    def next_done(self) -> tuple[Task, Planned | BaseException]:
        done, _ = wait(self._futures, return_when=FIRST_COMPLETED)
        future = min(done, key=lambda f: list(self._futures).index(f))  # oldest first
        task = self._futures.pop(future)
        error = future.exception()
        return task, (error if error is not None else future.result())

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def _ray_module(address: str) -> tuple[Any, bool]:
    """``ray`` connected to ``address``, and whether this call started it: ``local`` starts a
    private instance on this machine, bound to the loopback address; ``auto`` joins the cluster
    this machine belongs to (``RAY_ADDRESS``, or the one ``ray start`` left) and else does as
    ``local``; anything else is a cluster's address."""
    local = address == "local" or (address == "auto" and not os.environ.get("RAY_ADDRESS") and not (
        Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster").exists())
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if local:  # Ray's single-machine mode: every service listens on 127.0.0.1 only
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
    except ImportError:
        raise MissingExtra([Problem("--ray", address, "Ray is not installed",
                                  "pip install 'fleetplan[ray]', or leave out --ray to plan "
                                  "on this machine's cores")]) from None
    if ray.is_initialized():
        return ray, False
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                               "configure_logging": False}
    try:
        if local:  # results are fetched as they land: a small object store holds them
            ray.init(num_cpus=os.cpu_count() or 1, object_store_memory=LOCAL_OBJECT_STORE_BYTES,
                     **options)
        else:
            ray.init(address=address, **options)
    except ConnectionError as exc:
        raise InputError([Problem("--ray", address, f"no Ray cluster there: {exc}",
                                  "give the address `ray start --head` printed, or auto")]
                         ) from None
    return ray, True


class RayExecutor:
    """Each task a Ray task holding ``threads`` CPUs; results come back as they finish.

    Ray's own retries are off (``max_retries=0``): :func:`run_tasks` retries a failed or lost
    task once, as for local workers, so both report failures alike.
    """

    name = "ray"

    def __init__(self, address: str, threads: int,
                 fn: Callable[[Task], Planned] = plan_task) -> None:
        self._ray, self._started = _ray_module(address)
        cpus = int(self._ray.cluster_resources().get("CPU", 0))
        self.slots = max(1, cpus // threads)
        self.depth = 2 * self.slots  # the next task waits on the worker, not on a round trip
        self._remote = self._ray.remote(fn).options(num_cpus=threads, max_retries=0)
        self._refs: dict[Any, Task] = {}

    def submit(self, task: Task) -> None:
        self._refs[self._remote.remote(task)] = task

    def next_done(self) -> tuple[Task, Planned | BaseException]:
        ready, _ = self._ray.wait(list(self._refs), num_returns=1)
        task = self._refs.pop(ready[0])
        try:
            return task, self._ray.get(ready[0])
        except self._ray.exceptions.RayTaskError as exc:  # the task raised: its own error
            cause = exc.cause if isinstance(exc.cause, BaseException) else exc
            return task, cause
        except self._ray.exceptions.RayError as exc:  # worker or node lost, object lost
            return task, exc

    def close(self) -> None:
        for ref in self._refs:
            self._ray.cancel(ref, force=True)
        self._refs.clear()
        if self._started:
            self._ray.shutdown()


@dataclass(frozen=True)
class Started:
    """A task was handed to the executor."""

    task: Task
    attempt: int


@dataclass(frozen=True)
class Retrying:
    """A task failed once and is tried again."""

    task: Task
    error: str


@dataclass(frozen=True)
class Finished:
    """A task ended: planned, or failed on its last attempt (``planned`` is then ``None``)."""

    task: Task
    planned: Planned | None
    error: str | None
    attempts: int


Event = Started | Retrying | Finished


def describe(error: BaseException) -> str:
    """One line for people: an input problem as rendered, else the type, message and place."""
    if isinstance(error, InputError):
        return " ".join(error.render().split())
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(error).__name__}: {error}{where}"


def run_tasks(tasks: Sequence[Task], executor: Executor) -> Iterator[Event]:
    """Run every task on ``executor``; events as they happen, each task ending in one
    :class:`Finished`. Tasks are handed over in order, at most ``executor.depth`` at a time."""
    queue = deque(tasks)
    attempts: dict[str, int] = {}
    in_flight = 0
    while queue or in_flight:
        while queue and in_flight < executor.depth:
            task = queue.popleft()
            attempts[task.key] = attempts.get(task.key, 0) + 1
            executor.submit(task)
            in_flight += 1
            yield Started(task, attempts[task.key])
        task, result = executor.next_done()
        in_flight -= 1
        if not isinstance(result, BaseException):
            yield Finished(task, result, None, attempts[task.key])
        elif attempts[task.key] < MAX_ATTEMPTS:
            queue.appendleft(task)
            yield Retrying(task, describe(result))
        else:
            yield Finished(task, None, describe(result), attempts[task.key])
