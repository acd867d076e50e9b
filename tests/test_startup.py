"""Start-up: ``fleetplan --help`` and ``fleetplan validate`` import only what they need.

Two readings of each command: ``python -X importtime`` lists the modules it imports (the heavy
libraries a plan needs — pandas, numpy, matplotlib, openpyxl, pulp, highspy — must not be
imported to print the help or validate a scenario without price tables; validate needs numpy
alone, for the performance model's no-load latencies it checks each SLO against), and the
process's CPU time is compared with a bare ``python -c pass`` (with validate: ``python -c
"import numpy"``) in the same run: the command may add at most half a second. CPU time (user +
system), not wall time, so other processes on the machine do not decide the result; the best
of three runs of each.
"""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from inputs import scenarios_dir

#: Libraries only the commands that compute something may import.
HEAVY = ("pandas", "numpy", "matplotlib", "openpyxl", "pulp", "highspy", "scipy")
LIMIT_S = 0.5
RUNS = 3
#: ``fleetplan ARGS`` as the console script runs it.
FLEETPLAN = "import sys; from solver.cli import main; sys.argv[0] = 'fleetplan'; main()"
COMMANDS = {"help": ("--help",), "validate-tiny": ("validate", str(scenarios_dir() / "tiny.yaml"))}
#: What each command needs beyond python: validate warns of an SLO that no configuration meets
#: even at no load (solver/capacity/slo_floor.py), which the performance model computes with
#: numpy (~0.15 s of CPU to import; the check itself takes milliseconds).
NEEDS = {"help": (), "validate-tiny": ("numpy",)}


def _cpu_seconds(*args: str) -> float:
    """Least CPU time (user + system) of ``python ARGS`` over :data:`RUNS` runs [s]."""
    best = float("inf")
    for _ in range(RUNS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([sys.executable, *args], capture_output=True, timeout=60)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert done.returncode == 0, done.stderr[-2000:]
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def _imported(*args: str) -> set[str]:
    """Every module ``fleetplan ARGS`` imports, read from ``-X importtime``."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", FLEETPLAN, *args],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.split("|")[2].strip() for line in done.stderr.splitlines()
            if line.startswith("import time:") and line.count("|") == 2}


@pytest.mark.parametrize("name", COMMANDS)
def test_start_up_imports_only_what_the_command_needs(name: str) -> None:
    heavy = sorted(m for m in _imported(*COMMANDS[name])
                   if m.split(".")[0] in HEAVY and m.split(".")[0] not in NEEDS[name])
    assert heavy == []


@pytest.mark.parametrize("name", COMMANDS)
def test_start_up_takes_under_half_a_second_beyond_python(name: str) -> None:
    args = COMMANDS[name]
    bare = "; ".join(f"import {m}" for m in NEEDS[name]) or "pass"
    extra = _cpu_seconds("-c", FLEETPLAN, *args) - _cpu_seconds("-c", bare)
    assert extra < LIMIT_S, (f"fleetplan {' '.join(args)}: {extra:.3f} s beyond python "
                             f"running `{bare}`")


def test_the_heavy_imports_are_seen_when_they_happen() -> None:
    """The reading is real: importing the planner brings numpy and pulp in."""
    modules = _imported("plan", "--help")  # help of `plan` imports its module
    assert {"numpy", "pulp"} <= {m.split(".")[0] for m in modules}
