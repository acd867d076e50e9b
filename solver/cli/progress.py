"""What ``plan`` shows while it solves, and how Ctrl-C (SIGINT) or SIGTERM stops it.

A solve of a real fleet takes its whole minute; the user sees where it stands: on a terminal one
line rewritten in place a few times a second, else (a log, a pipe) one line every few seconds —
elapsed time, the best verified fleet's cost, the proven bound, the gap between them and the
stages running. Off a terminal, inside :meth:`SolveReporter.heartbeat` the lines come on the
solve's clock at every multiple of ``LINE_EVERY_S`` (5.0 s, 10.0 s, …), each with the latest
state heard: written when a report arrived, they drifted to 5.6–6.1 s apart at load 6 (HiGHS
reports only between its steps), and the first showed a stage's weak bound that the LP
relaxation's replaced 0.04 s later. Everything goes to stderr, so ``--json`` output on stdout
stays clean; ``--quiet`` shows nothing.

A signal asks the solve's clock to stop (:meth:`~solver.solve.clock.Deadline.stop`): the solve
ends at once with the best verified fleet so far, status ``interrupted``, and its bound, which
``plan`` writes as it writes any plan. A second Ctrl-C, however soon after the first, stops
without writing anything: Python runs a handler once for signals that arrive before it runs
(two Ctrl-C within a few milliseconds were one, and the plan was written whole), so the
signals are counted on a wakeup pipe (:func:`signal.set_wakeup_fd`, one byte a signal); and
while a native solve runs the handler asks it to stop and raises once it has returned
(:func:`~solver.solve.clock.native_solve`: raised into HiGHS, the exception aborted the
process).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import TextIO

from solver.solve.clock import Deadline, native_running
from solver.solve.highs import Progress

#: Seconds between lines when stderr is not a terminal, and between redraws on one [s].
LINE_EVERY_S = 5.0
REDRAW_EVERY_S = 0.25


def progress_line(p: Progress, stage: str, currency: str, per: str = "/month") -> str:
    """``  12.3 s  best 1,234,567 USD/month  bound 1,100,000  gap 10.9 %  [joint]``; ``per``
    follows the currency: over periods the objective is a cost over the whole horizon
    (`` over the horizon``), as the summary's bound says."""
    cost = "no fleet yet" if p.cost is None else f"best {p.cost:,.0f} {currency}{per}"
    bound = "bound –" if p.bound is None else f"bound {p.bound:,.0f}"
    gap = ("gap –" if p.cost is None or p.bound is None or p.cost <= 0
           else f"gap {max(p.cost - p.bound, 0.0) / p.cost:.1%}")
    return f"{p.seconds:6.1f} s  {cost}  {bound}  {gap}" + (f"  [{stage}]" if stage else "")


class SolveReporter:
    """Progress of one solve on ``stream`` (stderr): rate-limited, thread-safe."""

    def __init__(self, currency: str, quiet: bool = False, stream: TextIO | None = None,
                 every_s: float | None = None, per: str = "/month") -> None:
        self.stream = stream or sys.stderr
        self.currency = currency
        self.per = per
        self.quiet = quiet
        self.tty = self.stream.isatty()
        self.every_s = every_s if every_s is not None else (
            REDRAW_EVERY_S if self.tty else LINE_EVERY_S)
        self._last = -float("inf")
        self._drawn = False
        self._lock = threading.Lock()
        self._heard: tuple[Progress, str] | None = None
        self._ticking = False  # off a terminal, a heartbeat writes the lines on its clock

    def __call__(self, p: Progress, stage: str) -> None:
        if self.quiet:
            return
        with self._lock:
            self._heard = (p, stage)
            if not self._ticking and time.monotonic() - self._last >= self.every_s:
                self._write(p, stage)

    def now(self, p: Progress, stage: str) -> None:
        """The line of ``p`` at ``stage`` at once, whatever the rate or the heartbeat's clock:
        a stage that begins before the solve (the capacity tables: under load the first line
        of a plan came 15 s in, the start-up and the tables silent)."""
        if self.quiet:
            return
        with self._lock:
            self._heard = (p, stage)
            self._write(p, stage)

    def _write(self, p: Progress, stage: str) -> None:
        """The line of ``p`` at ``stage``, now (the lock held)."""
        self._last = time.monotonic()
        line = progress_line(p, stage, self.currency, self.per)
        try:
            if self.tty:
                self.stream.write(f"\r\033[K{line}")
                self._drawn = True
            else:
                self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed (a pipe's reader gone): stop showing
            self.quiet = True

    @contextlib.contextmanager
    def heartbeat(self, clock: Deadline) -> Iterator[None]:
        """While inside, a line at least every ``every_s`` even when no stage or solve reports
        (a plan over periods plans its blocks for tens of seconds without a word): the last
        fleet, bound and stage heard, with the elapsed time on ``clock``. Off a terminal the
        lines are written here only, at each multiple of ``every_s`` on ``clock`` (module
        docstring); on one, the reports redraw the line and this fills their silences."""
        if self.quiet:
            yield
            return
        done = threading.Event()
        ticking = not self.tty and self.every_s > 0  # every_s 0: each report is a line
        with self._lock:
            self._heard = None  # an earlier solve's state is not this one's
            self._ticking = ticking

        def next_tick() -> int:
            """The multiple of ``every_s`` the next line is due at (0 unless ticking)."""
            return math.floor(clock.elapsed() / self.every_s) + 1 if ticking else 0

        def beat() -> None:
            tick = next_tick()
            while not done.wait(max(tick * self.every_s - clock.elapsed(), 0.0) if ticking
                                else max(self.every_s, 0.05)):
                if ticking and clock.elapsed() < tick * self.every_s:
                    continue  # woken early: the line is due at its multiple
                tick = next_tick()
                with self._lock:
                    if self.quiet or not (ticking or time.monotonic() - self._last
                                          >= self.every_s):
                        continue
                    p, stage = self._heard or (Progress(0.0, None, None), "")
                    self._write(Progress(clock.elapsed(), p.cost, p.bound), stage)

        thread = threading.Thread(target=beat, name="progress-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()
            with self._lock:
                self._ticking = False

    def say(self, text: str) -> None:
        """``text`` as a line of its own at once (a line drawn on a terminal ended first)."""
        if self.quiet:
            return
        with self._lock:
            try:
                self.stream.write(("\r\033[K" if self._drawn else "") + text + "\n")
                self.stream.flush()
            except (OSError, ValueError):  # stderr closed: stop showing
                self.quiet = True
            self._drawn = False
            self._last = -float("inf")  # the next progress line comes at once

    def close(self) -> None:
        """End the line drawn on a terminal."""
        with self._lock:
            if self._drawn:
                self.stream.write("\r\033[K")
                self.stream.flush()
                self._drawn = False


#: What the first signal is answered with on stderr (``plan`` without ``--quiet``): the plan's
#: files take seconds to write after the stop (4–7 s for a ~1,300-GPU fleet at load 6), and
#: with nothing said a new user pressed Ctrl-C again, which writes nothing.
STOP_NOTICE = ("{name} received: stopping the search; writing the best verified fleet so far "
               "(Ctrl-C again stops without writing anything)")


@contextlib.contextmanager
def stop_on_signals(deadline: Deadline, notice: str | None = None) -> Iterator[list[int]]:
    """SIGINT and SIGTERM stop ``deadline`` (the solve ends with its best fleet) while inside;
    a SIGINT after another signal raises :class:`KeyboardInterrupt` — at once, or where a
    native solve runs, as soon as the stopped solve returns (at the latest on leaving the
    block). ``notice`` (``{name}``: the signal's) is written to stderr on the first signal,
    unbuffered, so it shows at once whatever the main thread is doing. Yields the signals
    received."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received  # handlers can only be set in the main thread
        return
    read_fd, write_fd = os.pipe()
    for fd in (read_fd, write_fd):
        os.set_blocking(fd, False)
    sigints = [0, 0]  # SIGINT bytes read from the pipe, SIGINT handler calls
    abort = [False]

    def handle(signum: int, frame: FrameType | None) -> None:
        sigints[0] += _drain(read_fd).count(signal.SIGINT)
        if signum == signal.SIGINT:
            sigints[1] += 1
            if received or max(sigints) >= 2:  # a second: stop, and write nothing
                if not received:
                    received.append(signum)
                deadline.stop(signal.Signals(signum).name)
                abort[0] = True
                if not native_running():
                    raise KeyboardInterrupt
                return
        if notice is not None and not received:
            _say(notice.format(name=signal.Signals(signum).name))
        received.append(signum)
        deadline.stop(signal.Signals(signum).name)

    previous = {s: signal.signal(s, handle) for s in (signal.SIGINT, signal.SIGTERM)}
    wakeup = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    try:
        yield received
    finally:
        signal.set_wakeup_fd(wakeup)
        for s, h in previous.items():
            signal.signal(s, h)
        os.close(read_fd)
        os.close(write_fd)
    if abort[0]:  # a second Ctrl-C during a native solve: raised now that it has returned
        raise KeyboardInterrupt


def _say(line: str) -> None:
    """``line`` on stderr straight to its descriptor (no buffer a handler could re-enter), on a
    line of its own where a terminal shows a progress line being redrawn."""
    start = "\r\033[K" if os.isatty(2) else ""
    with contextlib.suppress(OSError):  # stderr closed: nothing to tell
        os.write(2, f"{start}{line}\n".encode(errors="replace"))


def _drain(fd: int) -> bytes:
    """Every byte waiting on a non-blocking pipe."""
    out = b""
    while True:
        try:
            chunk = os.read(fd, 512)
        except (BlockingIOError, InterruptedError):
            return out
        if not chunk:
            return out
        out += chunk
