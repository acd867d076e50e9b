"""``fleetplan plan --time-limit T`` on the user's stopwatch: the wall time of the whole command
(a fresh process, start-up and writing included) against T, for two trees run in turns.

Each case is run as ``python -c "…from solver.cli import main; main()"`` (the console script's
call) with ``PYTHONPATH`` at a tree, the trees alternating (A, B, A, B…) so that a change of
the machine's load falls on both. ``--busy`` starts a niced busy loop (``nice -n 19 python3 -c
'while 1: pass'``) beside the runs, and stops it after; ``--plan-beside TREE`` a second niced
plan instead, quarterly.yaml's at 60 s from TREE, over and over. Printed per run, as a Markdown
row: the tree, the case, the one-minute load when it started, the wall and CPU seconds of the
process, wall ÷ limit, the exit status, and the plan's status, cost, gap, bound,
``solver.seconds``, objective (over periods: over the horizon) and stages with their seconds.

    .venv/bin/python benchmarks/stopwatch.py --tree main=/tmp/main --tree branch=. \\
        --x25 DIR [--rounds 2] [--busy] [--cases demo20,x25-20,x25-60,demo2]

Cases ``q30``, ``q60``, ``q120``: ``inputs/scenarios/quarterly.yaml`` (a plan over periods) at
30, 60 and 120 s.

``--x25 DIR``: where ``benchmarks/generate.py DIR --scale 25`` wrote the scaled scenarios.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The plan over periods of the examples (relative to a tree's root).
QUARTERLY = "inputs/scenarios/quarterly.yaml"
CALL = "import sys; sys.argv = ['fleetplan', *sys.argv[1:]]; from solver.cli import main; main()"


def cases(x25: Path | None) -> dict[str, tuple[list[str], float]]:
    """The command's arguments after ``plan`` and the limit, by case name."""
    large = [] if x25 is None else [str(x25 / "bench-large-x25-seed0.yaml")]
    return {
        "demo20": (["--time-limit", "20", "--gap", "0.0001", "--quiet"], 20.0),
        "demo2": (["--time-limit", "2", "--quiet"], 2.0),
        "x25-20": ([*large, "--time-limit", "20", "--quiet"], 20.0),
        "x25-60": ([*large, "--time-limit", "60", "--quiet"], 60.0),
        "x25-2": ([*large, "--time-limit", "2", "--quiet"], 2.0),
        # a plan over periods (four quarters, three demand scenarios): its stages, its
        # sign-off and the first period's trace replay inside the same limit
        **{f"q{t}": ([QUARTERLY, "--time-limit", str(t), "--quiet"], float(t))
           for t in (30, 60, 120)},
    }


def run(tree: Path, args: list[str], limit_s: float) -> dict[str, object]:
    """One ``fleetplan plan`` in a fresh process from ``tree``, into a temporary directory."""
    out = Path(tempfile.mkdtemp(prefix="stopwatch-"))
    env = {**os.environ, "PYTHONPATH": str(tree)}
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CALL, "plan", *args, "--out", str(out / "o")],
                          env=env, capture_output=True, text=True, cwd=tree)
    wall_s = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    row: dict[str, object] = {
        "load": load, "wall_s": wall_s, "ratio": wall_s / limit_s, "exit": done.returncode,
        "cpu_s": after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime}
    plan_file = out / "o" / "plan.json"
    if plan_file.exists():
        plan = json.loads(plan_file.read_text())
        s = plan["solver"]
        row.update(status=plan["status"], cost=plan["cost"]["per_month"] if plan["allocations"]
                   else None, gap=s["gap"], bound=s["bound"], seconds=s["seconds"],
                   objective=s.get("objective"),
                   stages=" ".join(f"{st['name']} {st['seconds']:.1f}"
                                   for st in s.get("stages", ())))
    else:
        row.update(status=done.stderr.strip().splitlines()[-1][:80] if done.stderr else "-")
    shutil.rmtree(out, ignore_errors=True)
    return row


def money(x: object) -> str:
    return "-" if x is None else f"{float(x):,.0f}"  # type: ignore[arg-type]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--tree", action="append", required=True, help="NAME=PATH, twice or more")
    p.add_argument("--x25", type=Path, default=None)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--busy", action="store_true")
    p.add_argument("--plan-beside", type=Path, default=None, metavar="TREE",
                   help="run quarterly.yaml's 60-s plan from TREE over and over beside the runs")
    p.add_argument("--cases", default="demo20,x25-20,x25-60,demo2")
    a = p.parse_args()
    trees = [(t.split("=", 1)[0], Path(t.split("=", 1)[1]).resolve()) for t in a.tree]
    table = cases(a.x25)
    busy = (subprocess.Popen(["nice", "-n", "19", "python3", "-c", "while 1: pass"])
            if a.busy else None)
    beside = None if a.plan_beside is None else subprocess.Popen(
        ["nice", "-n", "19", "bash", "-c", f"while true; do d=$(mktemp -d); "
         f"PYTHONPATH={a.plan_beside} {sys.executable} -c \"{CALL}\" plan {QUARTERLY} "
         "--time-limit 60 --quiet --out $d/o >/dev/null 2>&1; rm -rf $d; done"],
        cwd=a.plan_beside, start_new_session=True)
    print("| case | tree | UTC | load | wall s | CPU s | wall ÷ limit | exit | status | "
          "cost $/month | gap | bound $/month | solver.seconds | objective | stages [s] |")
    print("|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|")
    try:
        for name in a.cases.split(","):
            args, limit_s = table[name]
            for _ in range(a.rounds):
                for tree_name, tree in trees:
                    utc = time.strftime("%H:%M:%S", time.gmtime())
                    r = run(tree, args, limit_s)
                    gap = r.get("gap")
                    seconds = r.get("seconds")
                    print(f"| {name} | {tree_name} | {utc} | {r['load']:.1f} | "
                          f"{r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['ratio']:.3f} | "
                          f"{r['exit']} | {r['status']} | {money(r.get('cost'))} | "
                          f"{'-' if gap is None else f'{float(gap):.2%}'} | "  # type: ignore[arg-type]
                          f"{money(r.get('bound'))} | "
                          f"{'-' if seconds is None else f'{float(seconds):.2f}'} | "  # type: ignore[arg-type]
                          f"{money(r.get('objective'))} | {r.get('stages', '-')} |",
                          flush=True)
    finally:
        if busy is not None:
            busy.terminate()
            busy.wait()
        if beside is not None:  # the loop and the plan it runs now
            os.killpg(beside.pid, signal.SIGTERM)
            beside.wait()


if __name__ == "__main__":
    main()
