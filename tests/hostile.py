"""Run ``fleetplan`` on hostile input as a user would: in process (:func:`run`), or in a child
process bounded in memory and time (:func:`run_bounded`).

A bounded child is used where a regression would hang the test run or take the machine's
memory: it gets an address-space limit (``RLIMIT_AS``, as issue 18's "Done when" states:
3 GiB) and a wall-clock timeout, and the test asserts what it printed.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner, Result

from solver.cli import main

GIB = 1024**3
#: Address space a command may use (its virtual memory, libraries and numpy's pools included).
ADDRESS_SPACE_BYTES = 3 * GIB
#: Wall-clock time a command may take on a hostile input [s].
TIMEOUT_S = 60.0
#: How the child starts the command line (there is no ``python -m solver.cli``).
ENTRY = "import sys; from solver.cli import main; sys.exit(main())"


@dataclass(frozen=True)
class Bounded:
    """What a bounded run did."""

    exit_code: int | None
    """``None`` when it ran past its timeout (and was killed)."""
    output: str
    """stdout and stderr, in that order."""
    seconds: float

    @property
    def traceback(self) -> bool:
        """A Python traceback reached the user."""
        return "Traceback (most recent call last)" in self.output


def limit_memory(limit: int = ADDRESS_SPACE_BYTES) -> None:
    """``preexec_fn``: cap the child's address space; one thread per numeric library (the
    limit counts every thread's stack and arena, and tests share two cores)."""
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def bounded_env() -> dict[str, str]:
    """The environment of a bounded child: one thread per numeric library."""
    return {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg"}


def run_bounded(*args: str, cwd: Path, timeout_s: float = TIMEOUT_S) -> Bounded:
    """Run ``fleetplan ARGS`` in ``cwd`` under the address-space limit and ``timeout_s``."""
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", ENTRY, *args], cwd=cwd,
                              capture_output=True, timeout=timeout_s, preexec_fn=limit_memory,
                              env=bounded_env(), check=False)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"") + (exc.stderr or b"")
        return Bounded(None, out.decode("utf-8", "replace"), time.perf_counter() - start)
    out = done.stdout + done.stderr
    return Bounded(done.returncode, out.decode("utf-8", "replace"),
                   time.perf_counter() - start)


#: Address space a fresh ``fleetplan`` process maps once its modules are loaded (0.26 GiB
#: measured): what a forked child is allowed above what it inherits keeps 3 GiB's headroom.
FRESH_PROCESS_BYTES = GIB // 4


def forked_limit() -> int:
    """The address-space limit of a forked child: 3 GiB, or the headroom a fresh process would
    have under 3 GiB above what the test process already maps, if that maps more (after a
    long test session, threads' arenas and libraries can map gigabytes that are not used)."""
    with open("/proc/self/statm", encoding="ascii") as fh:
        mapped = int(fh.read().split()[0]) * resource.getpagesize()
    return max(ADDRESS_SPACE_BYTES, mapped + ADDRESS_SPACE_BYTES - FRESH_PROCESS_BYTES)


def run_forked(*args: str, cwd: Path, timeout_s: float = TIMEOUT_S) -> Bounded:
    """Run ``fleetplan ARGS`` in a forked child under the address-space limit and
    ``timeout_s``: the child shares the modules this process has loaded, so a run costs what
    the command does, not an interpreter's start (the fuzz suite runs hundreds). A Python
    exception that reaches click is written out as the traceback a user would see."""
    read_end, write_end = os.pipe()
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        status = 0
        try:
            os.close(read_end)
            os.chdir(cwd)
            limit_memory(forked_limit())
            result = CliRunner().invoke(main, list(args))
            output = result.output
            if result.exception is not None and not isinstance(result.exception, SystemExit):
                output += "".join(traceback.format_exception(result.exception))
            payload = json.dumps([result.exit_code, output]).encode()
            with os.fdopen(write_end, "wb") as fh:
                fh.write(payload)
        except BaseException:  # whatever it is, the parent must hear of it
            status = 3
        finally:
            os._exit(status)
    os.close(write_end)
    chunks: list[bytes] = []
    deadline = start + timeout_s
    timed_out = False
    with os.fdopen(read_end, "rb") as fh:
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                timed_out = True
                os.kill(pid, signal.SIGKILL)
                break
            ready, _, _ = select.select([fh], [], [], left)
            if ready:
                chunk = os.read(fh.fileno(), 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    seconds = time.perf_counter() - start
    if timed_out:
        return Bounded(None, "", seconds)
    if not chunks:  # killed (out of memory in C, a signal) or failed before reporting
        return Bounded(-1, f"the child ended with status {status} and no report", seconds)
    code, output = json.loads(b"".join(chunks))
    return Bounded(int(code), str(output), seconds)


def run(*args: str) -> Result:
    """``fleetplan ARGS`` in process (click's runner)."""
    return CliRunner().invoke(main, list(args))


def refused(result: Result, *texts: str) -> None:
    """Exit 2 through the command group, no traceback, each of ``texts`` in the message."""
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        repr(result.exception))
    for text in texts:
        assert text in result.output, (text, result.output)
