"""Blocks planned side by side in worker processes (solver/solve/workers.py): results in the
order of the jobs whatever order the processes end them in, and a stop request (Ctrl-C) ends
the workers."""

from __future__ import annotations

import os
import threading
import time

from solver.solve.clock import Deadline
from solver.solve.workers import GRACE_S, Workers


def sleep_then_name(clock: Deadline, name: str, seconds: float) -> tuple[str, float, bool]:
    """A job: sleep ``seconds`` (or until its clock is stopped), then say which job it was,
    when it ended (``time.monotonic``) and whether it was stopped."""
    stopped = clock.wait(seconds)
    return name, time.monotonic(), stopped


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a process ended but not yet reaped is a zombie: not running
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_results_come_in_the_order_of_the_jobs_not_the_order_they_end() -> None:
    # the first job sleeps longest: the second worker ends the later jobs before it
    jobs = [("a", 1.5), ("b", 0.0), ("c", 0.1)]
    with Workers(2) as pool:
        results = pool.map(sleep_then_name, jobs, Deadline(60.0))
    assert [r[0] for r in results] == ["a", "b", "c"]
    ended = [r[1] for r in results]
    assert ended[0] > ended[1] and ended[0] > ended[2]  # they did end in another order


def test_a_stop_request_stops_the_jobs_and_the_workers_end() -> None:
    clock = Deadline(600.0)
    with Workers(2) as pool:
        pids = pool.pids
        assert len(pids) == 2 and all(_alive(p) for p in pids)
        began = time.monotonic()
        threading.Timer(0.5, clock.stop).start()  # Ctrl-C: the handler stops the clock
        results = pool.map(sleep_then_name, [("a", 300.0), ("b", 300.0)], clock)
        assert time.monotonic() - began < 0.5 + GRACE_S + 1.0
        assert [r is not None and r[2] for r in results] == [True, True]  # stopped, returned
    assert not any(_alive(p) for p in pids)


def test_a_job_past_its_deadline_and_grace_is_ended_with_its_process() -> None:
    clock = Deadline(1.0)
    with Workers(1) as pool:
        pids = pool.pids
        began = time.monotonic()
        results = pool.map(_ignores_its_clock, [(30.0,)], clock)
        assert time.monotonic() - began < clock.limit_s + GRACE_S + 1.0
        assert results == [None]
    assert not any(_alive(p) for p in pids)


def _ignores_its_clock(clock: Deadline, seconds: float) -> str:
    time.sleep(seconds)
    return "done"


def _dies(clock: Deadline) -> str:
    os._exit(1)


def test_a_worker_that_dies_ends_the_pool_at_once_not_at_the_deadline() -> None:
    """``multiprocessing.Pool`` replaces a dead worker but loses its job: waiting for it would
    wait for the deadline. The pool is ended and the job's result is ``None`` (the caller
    plans it itself)."""
    with Workers(1) as pool:
        began = time.monotonic()
        results = pool.map(_dies, [()], Deadline(600.0))
        assert results == [None] and pool.broken
        assert time.monotonic() - began < 10.0


PLAN_IN_WORKERS = """
import sys
from benchmarks.bench_quarterly import _scenario
from solver.cli.progress import stop_on_signals
from solver.solve import block_plans
from solver.solve.clock import Deadline
from solver.solve.horizon import plan_horizon

block_plans.DIRECT_COLUMNS = 0  # every block planned in a share of the time: in the workers
sc = _scenario("small", 1, 0, True)
deadline = Deadline(600.0)
with stop_on_signals(deadline) as received:
    plan = plan_horizon(sc, time_limit_s=600.0, stop=deadline, workers=2)
print(plan.status.value, received, flush=True)
"""


def _descendants(pid: int) -> set[int]:
    """Processes whose parent, or parent's parent and so on, is ``pid``."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().split(")")[-1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found: set[int] = set()
    todo = [pid]
    while todo:
        p = todo.pop()
        children = {c for c, parent in parents.items() if parent == p}
        todo += list(children - found)
        found |= children
    return found


def test_ctrl_c_stops_a_plan_whose_blocks_are_in_workers_and_the_workers_end() -> None:
    """SIGINT to a plan over periods planning its blocks in two worker processes (blocks of
    the harness's small size, every one planned in a share of the time): the plan ends
    ``interrupted`` within seconds, not its ten minutes, and no worker process is left."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen([sys.executable, "-c", PLAN_IN_WORKERS], cwd=root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    began = time.monotonic()
    workers: set[int] = set()
    while time.monotonic() - began < 240 and proc.poll() is None:
        # the fork server and the two workers it forked
        workers = _descendants(proc.pid)
        if len(workers) >= 3:
            break
        time.sleep(0.2)
    assert len(workers) >= 3, proc.communicate()
    time.sleep(1.0)  # the blocks are being planned
    proc.send_signal(signal.SIGINT)
    stopped = time.monotonic()
    stdout, stderr = proc.communicate(timeout=120)
    assert time.monotonic() - stopped < 30, stdout + stderr
    assert stdout.startswith("interrupted"), stdout + stderr
    deadline = time.monotonic() + 5.0
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in workers)
