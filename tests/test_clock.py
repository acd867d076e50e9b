"""``--time-limit`` on the user's stopwatch: the clock counts from the process's start, keeps
back the time to write the plan's files, and the process ends without the interpreter's
teardown.

No test here times a solve (wall-clock checks depend on the machine's load): what the limit
gives in wall time is measured in benchmarks/results/clock.md, "The time limit on the user's
stopwatch". The subprocess tests read the clock's own record (``solver.seconds``)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from models.loader import load_scenario
from solver.cli.plan import SOLVE_SHARE_LEAST, WRITE_SHARE_MOST, keep_time_to_write
from solver.outputs.plan_dir import (
    WRITE_CPU_PER_WORKLOAD_S,
    WRITE_CPU_S,
    WRITE_MARGIN,
    write_seconds,
)
from solver.solve.clock import SLOWDOWN_MOST, Deadline, Origin

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "inputs" / "scenarios" / "demo.yaml"
TINY = ROOT / "inputs" / "scenarios" / "tiny.yaml"


def test_a_deadline_counts_from_the_origin_it_is_given() -> None:
    now = [100.0]
    d = Deadline(20.0, clock=lambda: now[0], started=97.0)  # the process began 3 s ago
    assert d.elapsed() == pytest.approx(3.0)
    assert d.left() == pytest.approx(20.0 - d.reserve_s - 3.0)


def test_keeping_time_back_shortens_the_limit_and_every_share_of_it() -> None:
    now = [0.0]
    d = Deadline(20.0, clock=lambda: now[0])
    reserve_s = d.reserve_s
    d.keep_back(5.0)
    assert (d.limit_s, d.kept_back_s) == (15.0, 5.0)
    assert d.share(0.5) == pytest.approx(7.5)  # half of the 15 s the solve may use
    assert d.left() == pytest.approx(15.0 - reserve_s)
    d.keep_back(100.0)  # never below nothing
    assert (d.limit_s, d.kept_back_s) == (0.0, 20.0) and d.expired()


def test_the_slowdown_is_wall_seconds_per_cpu_second_within_bounds() -> None:
    wall, cpu = time.perf_counter(), time.process_time()
    assert Origin(wall - 10.0, cpu - 2.0).slowdown() == pytest.approx(5.0, rel=0.01)
    assert Origin(wall - 10.0, cpu - 0.1).slowdown() == SLOWDOWN_MOST  # a stalled start
    assert Origin(wall - 1.0, cpu - 2.0).slowdown() == 1.0  # two threads busy: no faster


def test_the_write_reserve_grows_with_the_workloads_and_the_slowdown() -> None:
    demo = load_scenario(DEMO)
    assert len(demo.workloads) == 4
    # (0.45 + 4 × 0.12) CPU-s × 1.25 = 1.1625 s on an idle machine, × 3 at slowdown 3
    assert (WRITE_CPU_S, WRITE_CPU_PER_WORKLOAD_S, WRITE_MARGIN) == (0.45, 0.12, 1.25)
    assert write_seconds(demo, 1.0) == pytest.approx(1.1625)
    assert write_seconds(demo, 3.0) == pytest.approx(3.4875)


def test_the_time_kept_to_write_leaves_the_solve_a_quarter_of_the_limit_and_half_at_least(
        ) -> None:
    demo = load_scenario(DEMO)
    wall, cpu = time.perf_counter(), time.process_time()
    slow = Origin(wall - 8.0, cpu - 1.0)  # slowdown 8: 1.1625 × 8 = 9.3 s to write
    now = [0.0]
    short = Deadline(4.0, clock=lambda: now[0])
    keep_time_to_write(short, demo, slow)
    assert short.pending_s == pytest.approx(WRITE_SHARE_MOST * 4.0)  # not 9.3 s
    long = Deadline(60.0, clock=lambda: now[0])
    keep_time_to_write(long, demo, slow)
    assert long.pending_s == pytest.approx(write_seconds(demo, 8.0), rel=0.01)
    # the start and the table took 13 s of 20: 20 − 0.6 (assembly) − 13 = 6.4 s left, of which
    # the solve keeps 5 s (a quarter of 20), so 1.4 s is kept back, not 9.3 s
    late = Deadline(20.0, clock=lambda: now[0], started=-13.0)
    keep_time_to_write(late, demo, slow)
    assert late.pending_s == pytest.approx(20.0 - late.reserve_s - 13.0
                                           - SOLVE_SHARE_LEAST * 20.0)
    later = Deadline(20.0, clock=lambda: now[0], started=-16.0)
    keep_time_to_write(later, demo, slow)
    assert later.pending_s == 0.0  # nothing kept back: the solve has less than 5 s left


def test_the_time_to_write_is_kept_back_once_the_solve_holds_a_fleet() -> None:
    """Before a fleet, the solve keeps the whole limit (kept back from the start, at load
    18–20 it left large ×25's 60 s without a fleet); the first fleet held shortens it."""
    from solver.capacity.table import build_capacity_table
    from solver.solve.strategy import plan_scenario

    d = Deadline(20.0)
    d.keep_back_after_a_fleet(3.0)
    assert (d.limit_s, d.pending_s) == (20.0, 3.0)
    tiny = load_scenario(TINY)
    plan = plan_scenario(tiny, build_capacity_table(tiny), deadline=d)
    assert plan.allocations  # a fleet was held, so the 3 s were kept back
    assert (d.limit_s, d.kept_back_s, d.pending_s) == (17.0, 3.0, 0.0)
    d.fleet_found()  # once only
    assert d.limit_s == 17.0


def test_a_plan_over_periods_stages_count_from_the_process_start_less_the_writing() -> None:
    """The stages of a plan over periods ran on clocks of ``--time-limit`` seconds from the
    start of their planning, after the start-up, and the files came after them
    (quarterly.yaml at --time-limit 30: 47.6 s of wall time at load 9.5)."""
    from solver.solve.horizon import stage_clocks

    now = [10.0]
    stop = Deadline(30.0, clock=lambda: now[0], started=0.0)  # 10 s of start-up and reading
    stop.keep_back(4.0)  # to write the files
    safety, shares = stage_clocks(stop, 30.0, 20.0)
    assert safety.elapsed() == pytest.approx(10.0) and shares.elapsed() == pytest.approx(10.0)
    assert safety.left() == pytest.approx(30.0 - 4.0 - safety.reserve_s - 10.0)
    assert shares.left() == pytest.approx(20.0 - 4.0 - shares.reserve_s - 10.0)
    now[0] = 27.0  # past 30 less the writing's 4 s
    assert safety.expired() and shares.expired()
    stop.stop()  # and a signal stops them, as before
    assert safety.stopped and shares.stopped


def test_over_periods_the_writing_is_kept_back_at_once() -> None:
    """A plan over periods always ends with a fleet (the fallback's at worst), and its first
    fleet comes at the end of its first pass: kept back only then, nothing would be."""
    demo = load_scenario(DEMO)
    wall, cpu = time.perf_counter(), time.process_time()
    d = Deadline(60.0, clock=lambda: 0.0)
    # slowdown at its most, 8 (a test's load cannot move it): 1.1625 × 8 = 9.3 s to write
    keep_time_to_write(d, demo, Origin(wall - 8.0, cpu - 0.1), at_once=True)
    kept_s = write_seconds(demo, SLOWDOWN_MOST)
    assert d.kept_back_s == pytest.approx(kept_s) and d.pending_s == 0.0
    assert d.limit_s == pytest.approx(60.0 - kept_s)


def test_the_process_start_is_read_not_the_first_import() -> None:
    """A process that spent 0.6 s before importing fleetplan: its origin is its start."""
    code = ("import time; time.sleep(0.6); from solver.solve.clock import Origin, "
            "process_origin; o = process_origin(Origin.now()); "
            "print(time.perf_counter() - o.wall_s, o.cpu_s)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, check=True)
    age_s, cpu_s = map(float, done.stdout.split())
    assert 0.6 <= age_s < 30.0 and cpu_s == 0.0


def test_a_shell_that_execs_fleetplan_after_its_set_up_counts_from_the_import() -> None:
    """``bash -c "pip install … && fleetplan plan"``: bash execs the last command in its own
    process, whose start is the shell's; the README's one-liner so put pip's seconds on the
    demo's clock. A process that ran 6 s before fleetplan's first import counts from it."""
    code = ("import time; from solver.solve.clock import Origin, process_origin; "
            "f = Origin.now(); o = process_origin(f); print(o == f)")
    done = subprocess.run(["sh", "-c", f"sleep 6 && exec {sys.executable} -c '{code}'"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120, check=True)
    assert done.stdout.strip() == "True"


def test_writers_libraries_are_imported_beside_the_main_thread() -> None:
    code = ("import sys; from solver.outputs.plan_dir import WRITER_LIBRARIES, "
            "import_writers_beside; before = [m in sys.modules for m in WRITER_LIBRARIES]; "
            "import_writers_beside().join(); "
            "print(before, [m in sys.modules for m in WRITER_LIBRARIES])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, check=True)
    assert done.stdout.split("] [") == ["[False, False, False", "True, True, True]\n"]


def _plan_after_sleep(tmp_path: Path, sleep_s: float, *args: str
                      ) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``fleetplan plan`` of tiny.yaml (``--no-replay --quiet`` and ``args``) as a process's
    own command line after ``sleep_s`` of start-up: the process (exit 0 asserted) and the
    plan.json it wrote."""
    out = tmp_path / "out"
    extra = "".join(f", {a!r}" for a in args)
    code = (f"import sys, time; time.sleep({sleep_s}); from solver.cli import main; "
            f"sys.argv = ['fleetplan', 'plan', {str(TINY)!r}, '--out', {str(out)!r}"
            f"{extra}, '--no-replay', '--quiet']; main()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done, json.loads((out / "plan.json").read_text())


def test_a_plan_run_as_its_process_counts_from_the_process_start(tmp_path: Path) -> None:
    """``fleetplan plan`` as the process's own command line: the 1.5 s the process spent
    before the command are on the plan's clock (``solver.seconds``), and the process ends
    without the interpreter's teardown with its output whole (the JSON on stdout) and its
    exit status. A command invoked with arguments (CliRunner, a program) counts from itself."""
    done, written = _plan_after_sleep(tmp_path, 1.5, "--json")
    printed = json.loads(done.stdout)
    assert printed["solver"]["seconds"] == written["solver"]["seconds"] >= 1.5
    assert printed["status"] == "optimal"
    # its stages cover that clock: the 1.5 s and the imports, the capacity table, the solve
    # (they began at the program's build: 15.6 s of a 29.8-s plan were in a stage)
    stages = written["solver"]["stages"]
    assert [s["name"] for s in stages[:3]] == ["read", "capacity", "build"]
    assert stages[0]["seconds"] >= 1.5
    assert sum(s["seconds"] for s in stages) == pytest.approx(written["solver"]["seconds"],
                                                              abs=0.5)


def test_a_limit_the_start_up_alone_used_up_still_ends_with_a_plan(tmp_path: Path) -> None:
    """A process whose start-up took 2.5 s of a 2-s limit (at load 13–18 a 2-s plan's start-up
    took 4–10 s, and it ended in the build's error, no plan, its fix naming a build of 0 s):
    the limit counts from the start-up's end, the plan is written, and a note names the
    start-up's seconds and the limit that would have held from the start."""
    done, written = _plan_after_sleep(tmp_path, 2.5, "--time-limit", "2")
    assert written["allocations"] and written["solver"]["bound"] is not None
    assert written["solver"]["stages"][0]["seconds"] >= 2.5  # the start-up, on the plan's clock
    note = done.stderr.strip().splitlines()[-1]
    took_s = float(note.split("this plan took ")[1].split(" s")[0])
    assert note.startswith("note: the start-up (the interpreter, fleetplan's imports, reading "
                           "the scenario) took ") and "more than the 2-s --time-limit" in note
    assert took_s >= 2.5 and note.endswith(
        f"give a --time-limit of at least {math.ceil(took_s)} s for one that holds from the "
        "start")
