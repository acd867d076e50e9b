"""A plan's directory is written whole or not at all (solver/outputs/destinations.py): staged
beside the target and exchanged with it in one step under a lock, with the user's umask.

A run killed at any moment, a run that fails part-way, and two runs into one directory at once
each leave one complete plan — every file of it from the same run — never a mix, and no
temporary file outside the staging area. Each case was a mix before (files were written one by
one into the directory), or files were created 0600 whatever the umask.
"""

from __future__ import annotations

import copy
import errno
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from openpyxl import load_workbook

import solver.outputs.plan_dir as plan_dir
from inputs import scenarios_dir
from solver.outputs.atomic import STAGING_PREFIX
from tests.hostile import ENTRY, bounded_env, limit_memory, run

TINY: dict[str, Any] = yaml.safe_load((scenarios_dir() / "tiny.yaml").read_text(encoding="utf-8"))
#: Files every plan of tiny.yaml writes; the cost chart only where there is a fleet to cost.
ALWAYS = {"plan.json", "scenario.resolved.yaml", "plan.xlsx", "contract.yaml", "report.md",
          "capacity_vs_demand.png"}
COST_CHART = "cost_by_zone.png"


def scenario(tmp_path: Path, name: str, stock: int = 8) -> Path:
    """tiny.yaml named ``name``; ``stock`` 0 makes it infeasible (no chart of a fleet)."""
    doc = copy.deepcopy(TINY)
    doc["name"] = name
    for offer in doc["zones"][0]["offers"]:
        offer["on_demand"]["stock_gpus"] = stock
        offer["reserved"]["stock_gpus"] = min(stock, offer["reserved"]["stock_gpus"])
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


#: tiny.yaml is proven optimal in well under a second: the limit only bounds a run. A process's
#: plan counts its limit from the process's start, which with three runs at once at load 13
#: took more than 5 s with the capacity table (exit 2, "the run never began writing").
LIMIT_S = "60"


def plan(path: Path, out: Path) -> Any:
    return run("plan", str(path), "--time-limit", LIMIT_S, "--out", str(out))


def one_plan(out: Path) -> str:
    """The scenario of the one complete plan ``out`` holds: every file present, each written by
    the same run (the same input fingerprint in each)."""
    names = {p.name for p in out.iterdir()}
    assert ALWAYS <= names <= ALWAYS | {COST_CHART}, names
    plan_json = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    fingerprint, name = plan_json["fingerprint"], plan_json["scenario"]
    contract = yaml.safe_load((out / "contract.yaml").read_text(encoding="utf-8"))
    assert contract["plan_fingerprint"] == fingerprint, (out, contract["scenario"], name)
    assert fingerprint in (out / "report.md").read_text(encoding="utf-8")
    assert yaml.safe_load((out / "scenario.resolved.yaml").read_text())["name"] == name
    workbook = load_workbook(out / "plan.xlsx", read_only=True)  # holds the file open
    try:
        summary = {row[0]: row[1] for row in workbook["Summary"].values}
    finally:
        workbook.close()
    assert summary["Input fingerprint"] == fingerprint and summary["Scenario"] == name
    has_fleet = bool(plan_json["allocations"])
    assert (COST_CHART in names) == has_fleet, (names, has_fleet)
    return str(name)


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(STAGING_PREFIX))


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o027)
    yield
    os.umask(old)


def test_files_follow_the_umask(tmp_path: Path, umask: None) -> None:
    # Was: every file 0600 (mkstemp's mode), whatever the umask.
    out = tmp_path / "out"
    assert plan(scenario(tmp_path, "alpha"), out).exit_code == 0
    assert out.stat().st_mode & 0o777 == 0o750
    assert {oct(p.stat().st_mode & 0o777) for p in out.iterdir()} == {oct(0o640)}


def test_a_newer_plan_leaves_no_file_of_the_older(tmp_path: Path) -> None:
    # Was: an infeasible plan written over a feasible one left its cost chart beside it.
    out = tmp_path / "out"
    assert plan(scenario(tmp_path, "alpha"), out).exit_code == 0
    assert COST_CHART in {p.name for p in out.iterdir()}
    assert plan(scenario(tmp_path, "beta", stock=0), out).exit_code == 1
    assert one_plan(out) == "beta"
    assert COST_CHART not in {p.name for p in out.iterdir()}
    assert leftovers(tmp_path) == []


def test_a_run_that_fails_part_way_leaves_the_previous_plan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Was: plan.json and scenario.resolved.yaml of the new run beside the old workbook, contract
    # and report, and a traceback.
    out = tmp_path / "out"
    assert plan(scenario(tmp_path, "alpha"), out).exit_code == 0

    def disk_full(*args: object, **kwargs: object) -> list[Path]:
        raise OSError(errno.ENOSPC, "No space left on device", str(out / "plan.xlsx"))

    monkeypatch.setattr(plan_dir, "write_procurement_outputs", disk_full)
    result = plan(scenario(tmp_path, "beta"), out)
    assert result.exit_code == 2, result.output
    assert "No space left on device" in result.output and "Traceback" not in result.output
    assert one_plan(out) == "alpha"
    assert leftovers(tmp_path) == []


def start(path: Path, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", ENTRY, "plan", str(path), "--time-limit",
                             LIMIT_S, "--out", str(out)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, preexec_fn=limit_memory,
                            env=bounded_env())


def wait_for_writing(parent: Path, out: Path, since: float, timeout_s: float = 60) -> None:
    """Until the run has begun writing: a staging directory holds a file, or a file of the
    target is newer than ``since``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for entry in parent.iterdir():
            if entry.name.startswith(STAGING_PREFIX) and entry.is_dir() and any(entry.iterdir()):
                return
        if out.is_dir() and any(p.stat().st_mtime > since for p in out.iterdir()):
            return
        time.sleep(0.002)
    raise AssertionError("the run never began writing")


@pytest.mark.parametrize("delay_s", [0.0, 0.05, 0.2])
def test_a_run_killed_while_writing_leaves_one_complete_plan(tmp_path: Path,
                                                             delay_s: float) -> None:
    # Was: killed after its first files, a run left them beside the previous run's others.
    out = tmp_path / "out"
    assert plan(scenario(tmp_path, "alpha"), out).exit_code == 0
    beta = scenario(tmp_path, "beta")
    since = time.time()
    proc = start(beta, out)
    try:
        wait_for_writing(tmp_path, out, since)
        time.sleep(delay_s)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert one_plan(out) in ("alpha", "beta")
    assert plan(scenario(tmp_path, "gamma"), out).exit_code == 0
    assert one_plan(out) == "gamma"
    assert leftovers(tmp_path) == []  # the killed run's staging is removed by the next run


def test_concurrent_runs_into_one_directory_leave_one_complete_plan(tmp_path: Path) -> None:
    # Was: two runs at once interleaved their files.
    out = tmp_path / "out"
    paths = [scenario(tmp_path, name) for name in ("alpha", "beta", "gamma")]
    for _ in range(2):
        procs = [start(p, out) for p in paths]
        codes = [p.wait(timeout=120) for p in procs]
        assert codes == [0, 0, 0]
        assert one_plan(out) in ("alpha", "beta", "gamma")
        assert leftovers(tmp_path) == []


def test_concurrent_runs_with_one_killed_leave_one_complete_plan(tmp_path: Path) -> None:
    # Both at once: three runs into one directory, one of them killed once it writes.
    out = tmp_path / "out"
    assert plan(scenario(tmp_path, "alpha"), out).exit_code == 0
    paths = [scenario(tmp_path, name) for name in ("beta", "gamma", "delta")]
    since = time.time()
    procs = [start(p, out) for p in paths]
    try:
        wait_for_writing(tmp_path, out, since)
    finally:
        procs[0].send_signal(signal.SIGKILL)
    codes = [p.wait(timeout=120) for p in procs]
    assert codes[1:] == [0, 0] and codes[0] in (0, -signal.SIGKILL), codes
    assert one_plan(out) in ("beta", "gamma", "delta")
    assert plan(scenario(tmp_path, "epsilon"), out).exit_code == 0
    assert one_plan(out) == "epsilon"
    assert leftovers(tmp_path) == []
