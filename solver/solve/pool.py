"""HiGHS's thread pool: one per process, sized for the thread count a solve asks for.

HiGHS 1.16 keeps one pool of threads per process (its global scheduler), made by the first solve
with that solve's ``threads`` option, and refuses a later solve that asks for another count
(model status not set, no solution). Its MIP search runs one search worker per thread, so the
count changes the search, not only its speed. Every HiGHS solve of the planner
(:func:`solver.solve.highs.run`, :func:`solver.solve.backends.solve`) runs inside
:func:`highs_pool`, which resizes the pool where the count asked for differs from the pool's and
no other solve of this module's runs, and puts it down again after such a solve: one solve (the
joint solve on programs of a few slices, :func:`solver.solve.strategy.joint_threads`) can ask
for one thread, and the next solve — the planner's or anyone's in the process — for two.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

_lock = threading.Lock()
#: Threads of the pool a solve here last made (``None``: none made, or put down since).
_size: int | None = None
#: Solves inside :func:`highs_pool` now, in any thread.
_running = 0


def _put_down() -> None:
    """End the process's pool (made again, at its own count, by the next solve)."""
    import highspy

    highspy.Highs.resetGlobalScheduler(True)


@contextlib.contextmanager
def highs_pool(threads: int) -> Iterator[int]:
    """Run one HiGHS solve inside: yields the thread count to give it — ``threads``, the pool
    made afresh for it where it had another count (and put down after the solve, so that the
    count the process had is free to run next); the pool's own count where another solve is
    still running in it (a solve abandoned past the deadline: ending the pool under it would
    abort it), so that no solve is refused."""
    global _size, _running
    with _lock:
        resized = _size is not None and _size != threads and _running == 0
        if resized:
            _put_down()
        if _size is None or resized:
            _size = threads
        count = _size
        _running += 1
    try:
        yield count
    finally:
        with _lock:
            _running -= 1
            if resized and _running == 0:
                _put_down()
                _size = None
