"""HiGHS's thread pool: one per process, sized for the thread count a solve asks for.

HiGHS 1.16 keeps one pool of threads per process (its global scheduler), made by the first solve
with that solve's ``threads`` option, and refuses a later solve that asks for another count
(model status not set, no solution). Its MIP search runs one search worker per thread, so the
count changes the search, not only its speed. Every HiGHS solve of the planner
(:func:`solver.solve.highs.run`, :func:`solver.solve.backends.solve`) runs inside
:func:`highs_pool`, which resizes the pool where the count asked for differs from the pool's and
no other solve of this module's runs: one solve (the joint solve on programs of a few slices,
:func:`solver.solve.strategy.joint_threads`) can ask for one thread and the next for the
planner's two.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

_lock = threading.Lock()
#: Threads the pool was last sized for here (``None``: not yet, or by someone else).
_size: int | None = None
#: Solves inside :func:`highs_pool` now, in any thread.
_running = 0


@contextlib.contextmanager
def highs_pool(threads: int) -> Iterator[int]:
    """Run one HiGHS solve inside: yields the thread count to give it — ``threads``, the pool
    resized for it first where needed; the pool's own count where another solve is still running
    in it (a solve abandoned past the deadline: resizing would abort that one), so that no solve
    is refused."""
    global _size, _running
    with _lock:
        if _size != threads and _running == 0:
            import highspy

            highspy.Highs.resetGlobalScheduler(True)  # made again by the next run, at threads
            _size = threads
        count = _size if _size is not None else threads
        _running += 1
    try:
        yield count
    finally:
        with _lock:
            _running -= 1
