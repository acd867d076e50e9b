"""Work spread over processes, one per core: the blocks of a plan over periods planned side by
side (solver/solve/block_plans.py, ``plan_blocks`` with ``workers`` above 1).

A HiGHS model cannot be pickled, and a program's build is Python (it holds the interpreter's
lock), so each job runs in a process of its own and builds what it solves there: a job is a
module-level function and arguments that pickle (a block's :class:`ProgramData`, numbers), and
its result comes back pickled (the block's PuLP program, its fleet's values, its outcome).

- **Order.** :meth:`Workers.map` returns the results in the order of the jobs, whatever order
  the processes finish them in, so a plan is the same for the same results.
- **Clock.** Each job is handed the moment (``time.monotonic``, one clock for every process
  on the machine) at which the caller's :class:`~solver.solve.clock.Deadline` expires, and runs
  on a clock of its own that ends then; a job still running ``GRACE_S`` after it is ended with
  its process (its result ``None``).
- **Stop.** The processes ignore SIGINT (a terminal sends Ctrl-C to the whole process group):
  the caller's handler stops its clock, :meth:`Workers.map` sees it and sets an event every
  process watches, which stops the clock of the job it runs (the job then returns its best so
  far, as a serial stage does), and the pool is ended ``GRACE_S`` later at most.

Processes come from a fork server (``multiprocessing``'s ``forkserver``): a clean process that
imported the solver once, forked per pool. Forking the planner itself is not safe: HiGHS's
thread pool, running in it after the first solve, does not survive a fork.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing.pool import AsyncResult, Pool
from typing import Any

from solver.solve.backends import THREADS
from solver.solve.clock import Deadline

#: Seconds a job may run past its deadline (or a stop request) before its process is ended:
#: a step that does not look at the clock (a program's build: about 0.4 s on a × 25 block)
#: finishes within it [s].
GRACE_S = 2.0
#: Seconds between two looks at the caller's stop request while waiting for results [s].
POLL_S = 0.05
#: Modules the fork server imports once, so each worker starts with them loaded.
PRELOAD = ["solver.solve.block_plans"]

#: Limit of a worker's root clock, which only stops jobs' clocks (finite: a clock of infinite
#: limit has an infinite reserve, and ``left()`` would be inf − inf) [s].
ROOT_LIMIT_S = 1e9
#: In a worker process: the clock every job's clock follows; the stop event stops it.
_ROOT: list[Deadline] = []



def machine_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS says, else the machine's):
    more workers than that only share them, each block then with less than the core its
    share was sized for."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)

def _start_worker(stop: Any) -> None:
    """A worker process's set-up: ignore SIGINT (the parent asks through ``stop``), and a
    thread that stops the worker's clock once ``stop`` is set."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    root = Deadline(ROOT_LIMIT_S)
    _ROOT.append(root)

    def watch() -> None:
        stop.wait()
        root.stop("interrupted")

    threading.Thread(target=watch, daemon=True).start()


def _run_job(fn: Callable[..., Any], args: tuple[Any, ...], until: float, threads: int
             ) -> Any:
    """One job in a worker: ``fn(clock, *args)`` with ``clock`` ending at ``until`` (a
    ``time.monotonic`` reading) and stopped by the parent's stop request."""
    root = _ROOT[0] if _ROOT else Deadline(ROOT_LIMIT_S)
    clock = root.follower(max(until - time.monotonic(), 0.0))
    token = THREADS.set(threads)
    try:
        return fn(clock, *args)
    finally:
        THREADS.reset(token)


def warm_up() -> None:
    """Start the fork server in the background (its imports take a second or two), so that the
    first :class:`Workers` forks at once; nothing if it runs already."""
    from multiprocessing import forkserver

    multiprocessing.get_context("forkserver").set_forkserver_preload(PRELOAD)
    threading.Thread(target=forkserver.ensure_running, daemon=True).start()


class Workers:
    """``count`` worker processes; close it (or use it as a context manager) to end them."""

    def __init__(self, count: int) -> None:
        self.count = count
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        self._stop = ctx.Event()
        self._pool: Pool | None = ctx.Pool(count, initializer=_start_worker,
                                           initargs=(self._stop,))
        self._started = set(self.pids)
        self.broken = False
        """A worker process died (its job is lost: ``multiprocessing.Pool`` replaces the
        process, not the job), and the pool was ended."""

    @property
    def pids(self) -> list[int]:
        """The worker processes' ids (none once closed)."""
        pool = self._pool
        return [] if pool is None else [p.pid for p in getattr(pool, "_pool", []) if p.pid]

    def map(self, fn: Callable[..., Any], jobs: Sequence[tuple[Any, ...]],
            deadline: Deadline) -> list[Any | None]:
        """``fn(clock, *job)`` for each job in the workers, each ``clock`` ending when
        ``deadline`` leaves no time (its ``left()``) and stopped with it; the results in the
        order of ``jobs``, ``None`` for a job not finished ``GRACE_S`` after that, or at once
        for every job not finished when a worker process dies (:attr:`broken`; e.g. a script
        without ``if __name__ == "__main__":`` that the workers import again). The pool is then
        ended, and a later call returns only ``None``."""
        if self._pool is None:
            return [None] * len(jobs)
        until = time.monotonic() + deadline.left()
        pending: list[AsyncResult[Any]] = [
            self._pool.apply_async(_run_job, (fn, tuple(job), until, THREADS.get()))
            for job in jobs]
        results: list[Any | None] = [None] * len(jobs)
        done = [False] * len(jobs)
        ended_at: float | None = None
        while True:
            for i, r in enumerate(pending):
                if not done[i] and r.ready():
                    results[i] = r.get()  # a job's error is the caller's
                    done[i] = True
            if all(done):
                return results
            if set(self.pids) != self._started:
                self.broken = True
                self.close()
                return results
            if deadline.stopped:
                self._stop.set()
            if ended_at is None and (deadline.stopped or time.monotonic() >= until):
                ended_at = time.monotonic()
            if ended_at is not None and time.monotonic() - ended_at > GRACE_S:
                self.close()
                return results
            time.sleep(POLL_S)

    def close(self) -> None:
        """End the worker processes (at once: a job still running is lost)."""
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
