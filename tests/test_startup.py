"""Start-up: ``fleetplan --help`` and ``fleetplan validate`` import only what they need.

``python -X importtime`` lists the modules each command imports: the heavy libraries a plan
needs — pandas, numpy, matplotlib, openpyxl, pulp, highspy — must not be imported to print the
help or validate a scenario without price tables (validate needs numpy alone, for the
performance model's no-load latencies it checks each SLO against). What the start-up costs in
CPU seconds is a figure, measured against a bare python in the same run by
``benchmarks/startup.py`` (benchmarks/results/startup.md, "CLI start-up"), not a timed test: a timed
test's result depends on the machine, its load and whether bytecode may be written.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from inputs import scenarios_dir

#: Libraries only the commands that compute something may import.
HEAVY = ("pandas", "numpy", "matplotlib", "openpyxl", "pulp", "highspy", "scipy")
#: ``fleetplan ARGS`` as the console script runs it.
FLEETPLAN = "import sys; from solver.cli import main; sys.argv[0] = 'fleetplan'; main()"
COMMANDS = {"help": ("--help",), "validate-tiny": ("validate", str(scenarios_dir() / "tiny.yaml"))}
#: What each command needs beyond python: validate warns of an SLO that no configuration meets
#: even at no load (solver/capacity/slo_floor.py), which the performance model computes with
#: numpy (~0.15 s of CPU to import; the check itself takes milliseconds).
NEEDS = {"help": (), "validate-tiny": ("numpy",)}


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

