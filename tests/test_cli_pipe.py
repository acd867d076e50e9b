"""A reader that closes the pipe early (``fleetplan … | head``) ends the command quietly.

Was (qa4 12): ``fleetplan check … | head -1`` ended with "cannot read or write a file: Broken
pipe" and exit 2 — an input error for what Unix tools treat as the normal end of a pipeline.
"""

from __future__ import annotations

import os
import subprocess
import sys

from inputs import scenarios_dir
from solver.cli import BROKEN_PIPE_EXIT

#: ``fleetplan ARGS`` as the console script runs it.
FLEETPLAN = "import sys; from solver.cli import main; sys.argv[0] = 'fleetplan'; main()"


def test_a_closed_pipe_ends_the_command_quietly_with_the_sigpipe_status() -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line: every write meets a closed pipe
    try:
        done = subprocess.run([sys.executable, "-c", FLEETPLAN, "validate",
                               str(scenarios_dir() / "tiny.yaml")],
                              stdout=write, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(write)
    assert done.stderr == b""  # no "Broken pipe", no traceback, no "Exception ignored"
    assert done.returncode == BROKEN_PIPE_EXIT == 141  # as `yes | head -1` reports `yes`


def test_the_same_command_to_an_open_pipe_exits_0() -> None:
    done = subprocess.run([sys.executable, "-c", FLEETPLAN, "validate",
                           str(scenarios_dir() / "tiny.yaml")],
                          capture_output=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith(b"scenario tiny: valid")
