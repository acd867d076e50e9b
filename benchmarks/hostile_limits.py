"""Inputs at and past their limits (issue 18): hostile files of up to 50 MB, and legitimate
files at the documented maxima, each run as ``fleetplan`` in a fresh process.

Hostile inputs run under a 3 GiB address-space limit (``RLIMIT_AS``) and 60 s, and must exit 0,
1 or 2 with no traceback. Legitimate inputs at the documented maximum (a 10-million-request
trace for ``profile``, a million requests for ``simulate``, 10,000 workloads for ``validate``)
run under the same address-space limit and must exit 0; their wall time and peak resident
memory are printed. One run, one table; the verdict column says whether each case met its bound.

Run: ``.venv/bin/python benchmarks/hostile_limits.py [--workdir DIR] [--only NAME]`` from the
repository root (about 5 minutes on 2 cores; needs about 1 GB of disk in the work directory).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from inputs import scenarios_dir  # noqa: E402
from solver.outputs.scenario_template import template_workbook  # noqa: E402

GIB = 1024**3
MB = 1_000_000
ADDRESS_SPACE_BYTES = 3 * GIB
HOSTILE_TIMEOUT_S = 60.0
LEGIT_TIMEOUT_S = 600.0
HOSTILE_BYTES = 50 * MB
ENTRY = "import sys; from solver.cli import main; sys.exit(main())"
TINY = scenarios_dir() / "tiny.yaml"


@dataclass(frozen=True)
class Case:
    name: str
    kind: str
    """``hostile`` (any clean exit within 60 s) or ``legit`` (exit 0)."""
    make: Callable[[Path], list[str]]
    """Writes its files into the work directory and returns the command's arguments."""


@dataclass(frozen=True)
class Outcome:
    exit_code: int | None
    wall_s: float
    peak_rss_mib: float
    traceback: bool
    last_line: str


def run(args: list[str], cwd: Path, timeout_s: float) -> Outcome:
    """``fleetplan ARGS`` in a fresh process under the address-space limit; peak RSS from
    the child's own rusage (``wait4``)."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, ADDRESS_SPACE_BYTES))

    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    out_path, err_path = cwd / "stdout.txt", cwd / "stderr.txt"
    start = time.perf_counter()
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", ENTRY, *args], cwd=cwd, stdout=out,
                                stderr=err, preexec_fn=limit, env=env)
        code: int | None = None
        rss_kib = 0
        deadline = start + timeout_s
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                code = os.waitstatus_to_exitcode(status)
                rss_kib = usage.ru_maxrss
                break
            if time.perf_counter() > deadline:
                proc.kill()
                _, _, usage = os.wait4(proc.pid, 0)
                rss_kib = usage.ru_maxrss
                break
            time.sleep(0.05)
    wall_s = time.perf_counter() - start
    text = (out_path.read_bytes() + err_path.read_bytes()).decode("utf-8", "replace")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return Outcome(code, wall_s, rss_kib / 1024, "Traceback (most recent call last)" in text,
                   lines[-1][:140] if lines else "")


# --- the files ---------------------------------------------------------------------------------


def _fill(path: Path, header: str, row: str, size: int = HOSTILE_BYTES) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        fh.write(header)
        fh.write(row * ((size - len(header)) // len(row)))
    return path


def zeros_trace(work: Path) -> list[str]:
    return ["profile", str(_fill(work / "zeros.csv", "time_s,input_tokens,output_tokens\n",
                                 "0,1,1\n"))]


def datetimes_trace_one_bad_cell(work: Path) -> list[str]:
    path = _fill(work / "dates.csv", "time,input_tokens,output_tokens\n",
                 "2024-01-01 00:00:00,1,1\n")
    with path.open("a", encoding="utf-8") as fh:
        fh.write("never,1,1\n")
    return ["profile", str(path)]


def centuries_trace(work: Path) -> list[str]:
    path = _fill(work / "centuries.csv", "time_s,input_tokens,output_tokens\n", "1,1,1\n")
    with path.open("a", encoding="utf-8") as fh:
        fh.write("1e300,1,1\n")
    return ["profile", str(path)]


def simulate_zeros(work: Path) -> list[str]:
    path = work / "zeros.csv"
    if not path.exists():
        zeros_trace(work)
    return ["simulate", str(TINY), "--fleet", str(tiny_plan(work)), "--trace", str(path)]


def mooncake_long_lines(work: Path) -> list[str]:
    ids = json.dumps(list(range(5_000)))
    row = f'{{"timestamp": 0, "input_length": 100, "output_length": 10, "hash_ids": {ids}}}\n'
    return ["profile", str(_fill(work / "long.jsonl", "", row))]


def mooncake_deep(work: Path) -> list[str]:
    path = work / "deep.jsonl"
    half = HOSTILE_BYTES // 2
    path.write_text("[" * half + "]" * half + "\n", encoding="utf-8")
    return ["profile", str(path), "--format", "mooncake"]


def big_yaml(work: Path) -> list[str]:
    return ["validate", str(_fill(work / "big.yaml", "name: big\nworkloads:\n", "  - {}\n"))]


def billion_laughs(work: Path) -> list[str]:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    path = work / "laughs.yaml"
    path.write_text("\n".join(lines) + "\nname: laughs\n", encoding="utf-8")
    return ["validate", str(path)]


def wide_yaml_list(work: Path) -> list[str]:
    path = _fill(work / "wide.yaml", "name: wide\nworkloads:\n", "  - {}\n", 15 * MB)
    return ["validate", str(path)]


def measurements_csv(work: Path) -> list[str]:
    path = _fill(work / "measurements.csv", "kind,model,gpu,tp,batch,input_tokens,value\n",
                 "prefill_ms,Llama-2-70B,H100-SXM,2,1,512,60\n")
    return ["calibrate", str(path), "--out", str(work / "overlay.yaml")]


def history_csv(work: Path) -> list[str]:
    path = _fill(work / "history.csv", "date,workload,peak_rps\n", "2026-01-01,chat,1\n")
    return ["forecast", str(path), "--start", "2027-01-01", "--periods", "4"]


def bench_json(work: Path) -> list[str]:
    path = work / "bench.json"
    n = HOSTILE_BYTES // 20
    path.write_text(json.dumps({"backend": "vllm", "completed": n, "request_rate": 1.0,
                                "itls": [0.01] * n}), encoding="utf-8")
    return ["import-bench", str(path), "--gpu", "L4", "--tp", "1", "--model", "Llama-3.1-8B",
            "--workload", "chat", "--slo-ttft-ms", "500", "--slo-tpot-ms", "50", "--out",
            str(work / "measured.csv")]


def zip_bomb(work: Path) -> list[str]:
    src = work / "template.xlsx"
    template_workbook().save(src)
    path = work / "bomb.xlsx"
    sheet = "xl/worksheets/sheet2.xml"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename != sheet:
                zout.writestr(info.filename, data)
                continue
            with zout.open(info.filename, "w", force_zip64=True) as fh:
                cut = data.index(b"<sheetData>") + len(b"<sheetData>")
                fh.write(data[:cut])
                for _ in range(800):  # 4.7 GiB of empty rows
                    fh.write(b"<row/>" * (1 << 20))
                fh.write(data[cut:])
    return ["validate", str(path)]


def full_sheet(work: Path) -> list[str]:
    """A workbook at the sheet limits: 9,990 rows of 25 text cells (249,750) in `workloads`,
    every one of them wrong."""
    src = work / "template.xlsx"
    template_workbook().save(src)
    path = work / "full.xlsx"
    sheet = "xl/worksheets/sheet3.xml"
    row_cells = "".join(f"<c t=\"inlineStr\"><is><t>x{c}</t></is></c>" for c in range(25))
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename == sheet:
                cut = data.index(b"</sheetData>")
                rows = "".join(f"<row r=\"{r}\">{row_cells}</row>" for r in range(3, 9_993))
                data = data[:cut] + rows.encode() + data[cut:]
            zout.writestr(info.filename, data)
    return ["validate", str(path)]


def huge_fleet(work: Path) -> list[str]:
    plan = json.loads(tiny_plan(work).read_text(encoding="utf-8"))
    row = plan["allocations"][0]
    plan["allocations"] = [copy.deepcopy(row) for _ in range(HOSTILE_BYTES // 400)]
    path = work / "huge_plan.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    return ["check", str(TINY), "--fleet", str(path)]


def tiny_plan(work: Path) -> Path:
    path = work / "tiny_plan" / "plan.json"
    if not path.exists():
        done = run(["plan", str(TINY), "--time-limit", "5", "--out", str(path.parent)], work,
                   LEGIT_TIMEOUT_S)
        assert done.exit_code == 0, done.last_line
    return path


def legit_trace_10m(work: Path) -> list[str]:
    """Ten million requests, Poisson at 4 req/s (a month), lognormal lengths: 198 MB."""
    path = work / "trace10m.csv"
    if not path.exists():
        rng = np.random.default_rng(0)
        n = 10_000_000
        gaps = rng.exponential(0.25, size=n)
        times = np.cumsum(gaps) - gaps[0]
        inputs = np.clip(np.rint(rng.lognormal(np.log(1000), 0.8, size=n)), 1, 32_000)
        outputs = np.clip(np.rint(rng.lognormal(np.log(200), 0.8, size=n)), 1, 8_000)
        with path.open("w", encoding="utf-8") as fh:
            fh.write("timestamp_s,input_tokens,output_tokens\n")
            for lo in range(0, n, 1_000_000):
                hi = lo + 1_000_000
                fh.writelines(f"{t:.3f},{int(i)},{int(o)}\n" for t, i, o in
                              zip(times[lo:hi], inputs[lo:hi], outputs[lo:hi], strict=True))
    return ["profile", str(path)]


def legit_replay_1m(work: Path) -> list[str]:
    """The first million requests of the 10 M trace (4 req/s, 69 hours) on tiny's fleet."""
    path = work / "trace1m.csv"
    if not path.exists():
        legit_trace_10m(work)
        with (work / "trace10m.csv").open(encoding="utf-8") as src, path.open(
                "w", encoding="utf-8") as dst:
            for _ in range(1_000_001):
                dst.write(src.readline())
    return ["simulate", str(TINY), "--fleet", str(tiny_plan(work)), "--trace", str(path)]


def legit_10k_workloads(work: Path) -> list[str]:
    doc = yaml.safe_load(TINY.read_text(encoding="utf-8"))
    base = doc["workloads"][0]
    doc["workloads"] = [{**copy.deepcopy(base), "name": f"w{i}"} for i in range(10_000)]
    path = work / "workloads10k.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return ["validate", str(path)]


def legit_10k_workbook(work: Path) -> list[str]:
    """The 10,000-workload scenario as a workbook (the sheet-row maximum), made by `template`."""
    path = work / "workloads10k.xlsx"
    if not path.exists():
        source = work / "workloads10k.yaml"
        if not source.exists():
            legit_10k_workloads(work)
        done = run(["template", "--from", str(source), "--out", str(path)], work,
                   LEGIT_TIMEOUT_S)
        assert done.exit_code == 0, done.last_line
    return ["validate", str(path)]


CASES = [
    Case("trace: 50 MB of one-token requests at t=0 (8.3 M rows)", "hostile", zeros_trace),
    Case("trace: 50 MB of datetimes, one bad cell at the end", "hostile",
         datetimes_trace_one_bad_cell),
    Case("trace: 50 MB spanning 1e300 s", "hostile", centuries_trace),
    Case("simulate: the 50 MB one-token trace", "hostile", simulate_zeros),
    Case("trace: 50 MB of Mooncake lines of 5,000 block ids", "hostile", mooncake_long_lines),
    Case("trace: one Mooncake line nested 25 M deep", "hostile", mooncake_deep),
    Case("scenario: 50 MB YAML", "hostile", big_yaml),
    Case("scenario: billion laughs (10^10 values)", "hostile", billion_laughs),
    Case("scenario: 15 MB YAML list of 2.1 M workloads", "hostile", wide_yaml_list),
    Case("calibrate: 50 MB measurements CSV (1.1 M rows)", "hostile", measurements_csv),
    Case("forecast: 50 MB history CSV (2.6 M rows)", "hostile", history_csv),
    Case("import-bench: 50 MB vLLM result", "hostile", bench_json),
    Case("workbook: 5 MB zip expanding to 4.7 GiB", "hostile", zip_bomb),
    Case("workbook: 249,750 bad cells, at the sheet limits", "hostile", full_sheet),
    Case("check: 28 MB plan.json of 125,000 allocations", "hostile", huge_fleet),
    Case("legit: profile a 10 M-request trace (198 MB)", "legit", legit_trace_10m),
    Case("legit: simulate 1 M requests on tiny's fleet", "legit", legit_replay_1m),
    Case("legit: validate 10,000 workloads", "legit", legit_10k_workloads),
    Case("legit: validate a workbook of 10,000 workloads", "legit", legit_10k_workbook),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--only", default=None, help="run the cases whose name holds this")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="fleetplan-limits-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work directory {work}; address space {ADDRESS_SPACE_BYTES / GIB:g} GiB\n")
    print("| case | exit | wall [s] | peak RSS [MiB] | bound | verdict | last line |")
    print("|---|---:|---:|---:|---|---|---|")
    failed = 0
    for case in CASES:
        if args.only and args.only not in case.name:
            continue
        argv = case.make(work)
        legit = case.kind == "legit"
        done = run(argv, work, LEGIT_TIMEOUT_S if legit else HOSTILE_TIMEOUT_S)
        ok = (done.exit_code == 0 if legit else done.exit_code in (0, 1, 2)) and not done.traceback
        failed += not ok
        bound = "exit 0, 3 GiB" if legit else "exit 0/1/2, 3 GiB, 60 s"
        line = done.last_line.replace("|", "\\|").replace(str(work), "…")
        print(f"| {case.name} | {done.exit_code} | {done.wall_s:.1f} | {done.peak_rss_mib:,.0f} "
              f"| {bound} | {'ok' if ok else 'FAILED'} | {line} |", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
