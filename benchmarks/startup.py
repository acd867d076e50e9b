"""Start-up cost of the CLI: CPU seconds of `fleetplan --help`, `--version` and `validate`
beyond a bare `python -c pass`, measured in the same run (best of N), and the slowest imports.

    .venv/bin/python benchmarks/startup.py [--runs 5]

CPU time (user + system of the child) rather than wall time, so other processes on the machine
do not decide the figures. tests/test_startup.py holds the 0.5 s limit and the list of heavy
libraries these commands must not import.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLEETPLAN = "import sys; from solver.cli import main; sys.argv[0] = 'fleetplan'; main()"
COMMANDS = {
    "--help": ["--help"],
    "--version": ["--version"],
    "validate tiny.yaml": ["validate", str(ROOT / "inputs" / "scenarios" / "tiny.yaml")],
    "validate (demo, AWS price table)": ["validate"],
}


def cpu_seconds(args: list[str], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, *args], capture_output=True, check=True, cwd=ROOT)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    bare = cpu_seconds(["-c", "pass"], runs)
    print(f"| command | CPU [s] | beyond `python -c pass` [s] |\n|---|---|---|\n"
          f"| `python -c pass` | {bare:.3f} | — |")
    for name, args in COMMANDS.items():
        cpu = cpu_seconds(["-c", FLEETPLAN, *args], runs)
        print(f"| `fleetplan {name}` | {cpu:.3f} | {cpu - bare:.3f} |")


if __name__ == "__main__":
    main()
