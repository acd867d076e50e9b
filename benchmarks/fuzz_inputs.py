"""Mutated copies of every kind of input file, run through every command that reads it.

From the shipped inputs (the example scenarios, a catalog overlay, a quote CSV, a measured
capacity CSV, an inventory, a ``plan.json`` for ``check``/``simulate`` and one over periods for
``plan --existing``, a ``contract.yaml``, a forecast history and two traces) this script makes
mutated copies — a field removed, renamed (a typo), given a wrong type (text, list, mapping,
null, bool, huge, negative, NaN, inf), a list where a mapping goes, an unknown enum value, a
date in another format, an empty, truncated or binary file, a BOM, CRLF line ends, a YAML
anchor bomb, duplicate keys — and runs each command that reads the mutated file in a fresh
``nice -n 19`` process under a 3 GiB address-space limit and a timeout, in a directory of its
own. A run is *flagged* when:

- ``traceback``: a Python traceback on stdout or stderr;
- ``exit``: an exit code other than 0, 1 or 2 (a signal included);
- ``hang``: the timeout passed;
- ``unnamed``: exit 2 (bad input) with a message that does not name the mutated file;
- ``changed``: an input file's bytes changed;
- ``partial``: an output file that does not parse (JSON, YAML, a workbook's zip) or a
  temporary file left in the output directory;
- ``accepted``: exit 0 or 1 on a mutation every reader must refuse — a CSV row with more
  cells than its header (a number written with a decimal comma, ``1,5``, or a cell added), a
  CSV column named twice, a number in a JSON document written as text that reads as
  non-finite (``"1e999"``, ``"inf"``, ``"nan"``). These are drawn from a generator of their
  own (``--seed`` and the file's name), after the others: the other mutations of a seed are
  those of earlier versions of this script.

Run from the repository root (the same seed gives the same cases)::

    nice -n 19 .venv/bin/python benchmarks/fuzz_inputs.py --workdir /tmp/fuzz --seed 1

``--per-file N`` structural mutations per input file (plus the whole-file ones), ``--plans N``
runs ``plan``/``compare`` on every N-th scenario mutation only (they take seconds each),
``--jobs`` processes at once. Another checkout's code runs with ``PYTHONPATH=DIR``. Results go
to ``WORKDIR/results.jsonl``, a summary with one line per distinct cause to stdout.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import time
import zipfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "inputs" / "scenarios"
TEST_DATA = ROOT / "tests" / "data"
ENTRY = "import sys; from solver.cli import main; sys.exit(main())"
ADDRESS_SPACE_BYTES = 3 * 1024**3
#: Timeout of one command [s]: validate takes about 0.5 s, a 5 s plan about 3 s on 2 cores.
TIMEOUT_S = 90.0
TRACEBACK = "Traceback (most recent call last)"

#: Wrong values put in place of a field's value.
WRONG_VALUES: list[Any] = ["text", "", [], {}, None, True, False, 10**30, -1, -1e308,
                           float("nan"), float("inf"), float("-inf"), 0, "1e999", [1, 2],
                           {"a": 1}, "bogus-enum-value"]
#: Wrong cell text in CSV files.
WRONG_CELLS = ["abc", "", "nan", "inf", "-inf", "-1", "1e400", "0", "True", "2027/13/45",
               "31/12/2026", "=1+1", "1,5", "\x00", "null"]
ANCHOR_BOMB = ("a: &a [x, x, x, x, x, x, x, x, x, x]\n"
               + "".join(f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
                         for p, c in zip("abcdefgh", "bcdefghi", strict=True))
               + "name: *i\nworkloads: *i\n")


@dataclass(frozen=True)
class Target:
    """An input file and the commands that read it (``{f}`` is the file's name)."""

    file: str
    commands: tuple[tuple[str, ...], ...]
    slow: tuple[tuple[str, ...], ...] = ()
    """Commands of seconds (plan, compare): run on every ``--plans``-th mutation only."""


OUT = "out"
TARGETS: list[Target] = [
    Target("tiny.yaml",
           (("validate", "{f}"), ("check", "{f}", "--fleet", "plan.json"),
            ("simulate", "{f}", "--fleet", "plan.json", "--trace", "azure.csv")),
           (("plan", "{f}", "--time-limit", "5", "--no-replay", "--quiet", "--out", OUT),
            ("compare", "{f}", "--time-limit", "5", "--out", f"{OUT}/compare.xlsx"))),
    Target("demo.yaml", (("validate", "{f}"),)),
    Target("doc_qa.yaml", (("validate", "{f}"),)),
    Target("twenty_rps.yaml", (("validate", "{f}"), ("capacity", "{f}"))),
    Target("quarterly.yaml", (("validate", "{f}"),)),
    Target("tinyq2.yaml", (("validate", "{f}"),),
           (("plan", "{f}", "--existing", "planq.json", "--time-limit", "5", "--no-replay",
             "--quiet", "--out", OUT),)),
    Target("twenty_rps_measured.csv", (("validate", "twenty_rps.yaml"),)),
    Target("overlay.yaml", (("validate", "tiny_overlay.yaml"),)),
    Target("quotes.csv", (("validate", "tiny_quotes.yaml"),)),
    Target("inventory.yaml",
           (("check", "tiny.yaml", "--fleet", "{f}"),
            ("simulate", "tiny.yaml", "--fleet", "{f}", "--trace", "azure.csv"))),
    Target("plan.json",
           (("check", "tiny.yaml", "--fleet", "{f}"),
            ("simulate", "tiny.yaml", "--fleet", "{f}", "--trace", "azure.csv"))),
    Target("contract.yaml", (("check", "tiny.yaml", "--contract", "{f}"),)),
    Target("planq.json", (("check", "tinyq.yaml", "--fleet", "{f}"),),
           (("plan", "tinyq2.yaml", "--existing", "{f}", "--time-limit", "5", "--no-replay",
             "--quiet", "--out", OUT),)),
    Target("history.csv", (("forecast", "{f}", "--start", "2027-01-01", "--periods", "4"),
                           ("forecast", "{f}", "--scenario", "quarterly.yaml"))),
    Target("azure.csv",
           (("profile", "{f}"),
            ("simulate", "tiny.yaml", "--fleet", "plan.json", "--trace", "{f}"))),
    Target("mooncake.jsonl",
           (("profile", "{f}"),
            ("simulate", "tiny.yaml", "--fleet", "plan.json", "--trace", "{f}"))),
]


# --- fixtures ------------------------------------------------------------------------------


def limit_child() -> None:
    """A child's address-space limit and niceness."""
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, ADDRESS_SPACE_BYTES))
    os.nice(19)


def fleetplan(args: list[str], cwd: Path,
              timeout_s: float = TIMEOUT_S) -> tuple[int | None, str, str, float]:
    """Run ``fleetplan ARGS`` in ``cwd``: exit code (None on timeout), stdout, stderr, seconds."""
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", ENTRY, *args], cwd=cwd, capture_output=True,
                              timeout=timeout_s, preexec_fn=limit_child, check=False)
    except subprocess.TimeoutExpired as exc:
        return (None, (exc.stdout or b"").decode("utf-8", "replace"),
                (exc.stderr or b"").decode("utf-8", "replace"), time.perf_counter() - start)
    return (done.returncode, done.stdout.decode("utf-8", "replace"),
            done.stderr.decode("utf-8", "replace"), time.perf_counter() - start)


def prepare(base: Path) -> None:
    """Write the unmutated inputs into ``base`` (plans made by this checkout's ``plan``)."""
    base.mkdir(parents=True, exist_ok=True)
    for name in ("tiny.yaml", "demo.yaml", "doc_qa.yaml", "twenty_rps.yaml", "quarterly.yaml",
                 "twenty_rps_measured.csv"):
        shutil.copy(SCENARIOS / name, base / name)
    shutil.copy(SCENARIOS / "quarterly_history.csv", base / "history.csv")
    shutil.copy(TEST_DATA / "azure_conv_head300.csv", base / "azure.csv")
    shutil.copy(TEST_DATA / "mooncake_conv_head200.jsonl", base / "mooncake.jsonl")
    tiny = yaml.safe_load((SCENARIOS / "tiny.yaml").read_text(encoding="utf-8"))
    # a tiny horizon: two quarters, then the same a quarter on (for plan --existing)
    tinyq = copy.deepcopy(tiny)
    tinyq["name"] = "tinyq"
    tinyq["horizon"] = {"start": "2027-01-01", "period_months": 3, "count": 2}
    tinyq["workloads"][0]["growth"] = [1, 1.2]
    dump(base / "tinyq.yaml", tinyq)
    tinyq["name"] = "tinyq2"
    tinyq["horizon"]["start"] = "2027-04-01"
    dump(base / "tinyq2.yaml", tinyq)
    # a catalog overlay (a GPU of its own, an L4 variant) and a scenario that reads it
    gpus = yaml.safe_load((ROOT / "inputs" / "catalog" / "gpus.yaml").read_text(encoding="utf-8"))
    l4 = next(g for g in gpus["gpus"] if g["name"] == "L4")
    dump(base / "overlay.yaml", {"gpus": [{**l4, "name": "L4-fuzz", "memory_gib": 40}]})
    over = copy.deepcopy(tiny)
    over["catalog"] = {"overlays": ["overlay.yaml"]}
    over["zones"][0]["offers"][0]["gpu"] = "L4-fuzz"
    over["workloads"][0]["allowed_gpus"] = ["L4-fuzz", "H100-SXM"]
    dump(base / "tiny_overlay.yaml", over)
    # a plain quote CSV (docs/prices.md) and a scenario that imports it
    (base / "quotes.csv").write_text(
        "zone,gpu,kind,term_months,upfront,price_per_gpu_hour,stock_gpus,lead_time_weeks,region,"
        "source\n"
        "dc-1,H100,reserved,36,all,1.95,64,10,eu-central,vendor A 2026-Q3\n"
        "dc-1,H100,on_demand,,,3.10,16,,eu-central,\n"
        "dc-1,L4,on_demand,,,0.80,16,,eu-central,\n", encoding="utf-8")
    quotes = copy.deepcopy(tiny)
    del quotes["zones"]
    quotes["price_tables"] = [{"path": "quotes.csv"}]
    quotes["workloads"][0]["allowed_gpus"] = ["L4", "H100"]
    dump(base / "tiny_quotes.yaml", quotes)
    dump(base / "inventory.yaml", {
        "name": "fleet-fuzz",
        "nodes": [{"zone": "zone-a", "gpu": "H100-SXM", "nodes": 2, "gpus_per_node": 1},
                  {"zone": "zone-a", "gpu": "L4", "purchase": "on_demand", "nodes": 3,
                   "gpus_per_node": 1}],
        "layout": [{"workload": "chat", "zone": "zone-a", "gpu": "H100-SXM", "tp": 1,
                    "replicas": 2}]})
    for scenario, out in (("tiny.yaml", "o_tiny"), ("tinyq.yaml", "o_tinyq")):
        code, _, err, _ = fleetplan(["plan", scenario, "--time-limit", "5", "--no-replay",
                                     "--quiet", "--out", out], base)
        if code != 0:
            raise SystemExit(f"fixture plan of {scenario} failed ({code}):\n{err}")
    shutil.copy(base / "o_tiny" / "plan.json", base / "plan.json")
    shutil.copy(base / "o_tiny" / "contract.yaml", base / "contract.yaml")
    shutil.copy(base / "o_tinyq" / "plan.json", base / "planq.json")
    shutil.rmtree(base / "o_tiny")
    shutil.rmtree(base / "o_tinyq")


def dump(path: Path, data: Any) -> None:
    if path.suffix == ".json":
        path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True),
                        encoding="utf-8")


# --- mutations -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutation:
    name: str
    """What was done, e.g. ``wrong-type workloads[0].arrival.peak_rps = nan``."""
    data: bytes
    refuse: bool = False
    """Every command that reads the file must refuse it (exit 2): flagged ``accepted`` if not."""


def paths_of(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a parsed YAML/JSON document."""
    out: list[tuple[Any, ...]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            out.append((*prefix, key))
            out.extend(paths_of(value, (*prefix, key)))
    elif isinstance(node, list):
        for i, value in enumerate(node[:3]):  # the first items stand for the rest
            out.append((*prefix, i))
            out.extend(paths_of(value, (*prefix, i)))
    return out


def show(path: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def typo(key: str, rng: random.Random) -> str:
    if len(key) < 2:
        return key + "x"
    i = rng.randrange(len(key) - 1)
    if key[i] == key[i + 1]:
        return key[:i] + key[i + 1:]
    return key[:i] + key[i + 1] + key[i] + key[i + 2:]


def structural(doc: Any, suffix: str, rng: random.Random) -> Mutation:
    """One mutation of one value of a parsed document, dumped back in the file's format."""
    doc = copy.deepcopy(doc)
    path = rng.choice(paths_of(doc))
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    last = path[-1]
    value = parent[last]
    kinds = ["remove", "wrong-type", "wrong-type", "wrong-type"]
    if isinstance(last, str):
        kinds.append("rename")
    if isinstance(value, dict):
        kinds.append("list-for-mapping")
    if isinstance(value, list):
        kinds.append("mapping-for-list")
    if isinstance(value, str):
        kinds.append("unknown-enum")
        if re.fullmatch(r"\d{4}-\d\d-\d\d", value):
            kinds += ["date-format", "date-format"]
    kind = rng.choice(kinds)
    if kind == "remove":
        del parent[last]
        what = f"remove {show(path)}"
    elif kind == "rename":
        new = typo(last, rng)
        parent_items = list(parent.items())
        parent.clear()
        parent.update({(new if k == last else k): v for k, v in parent_items})
        what = f"rename {show(path)} -> {new}"
    elif kind == "list-for-mapping":
        parent[last] = [value]
        what = f"list-for-mapping {show(path)}"
    elif kind == "mapping-for-list":
        parent[last] = {"items": value}
        what = f"mapping-for-list {show(path)}"
    elif kind == "unknown-enum":
        parent[last] = value + "-bogus"
        what = f"unknown-enum {show(path)} = {parent[last]!r}"
    elif kind == "date-format":
        y, m, d = value.split("-")
        parent[last] = rng.choice([f"{d}/{m}/{y}", f"{m}/{d}/{y}", f"{y}{m}{d}", f"{d}.{m}.{y}"])
        what = f"date-format {show(path)} = {parent[last]!r}"
    else:
        parent[last] = rng.choice(WRONG_VALUES)
        what = f"wrong-type {show(path)} = {parent[last]!r}"
    if suffix == ".json":
        return Mutation(what, json.dumps(doc, indent=1).encode())
    if suffix == ".jsonl":
        return Mutation(what, "".join(json.dumps(line) + "\n" for line in doc).encode())
    return Mutation(what, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True).encode())


def csv_mutation(text: str, rng: random.Random) -> Mutation:
    """One mutation of a CSV: a column dropped or renamed, a wrong cell, a short or long row."""
    lines = text.splitlines()
    header = lines[0].split(",")
    col = rng.randrange(len(header))
    row = rng.randrange(1, min(len(lines), 6)) if len(lines) > 1 else 0
    kind = rng.choice(["drop-column", "rename-column", "cell", "cell", "cell", "short-row",
                       "long-row", "duplicate-column"])
    out = [line.split(",") for line in lines]
    if kind == "drop-column":
        out = [cells[:col] + cells[col + 1:] for cells in out]
        what = f"drop column {header[col]}"
    elif kind == "rename-column":
        out[0][col] = typo(header[col], rng)
        what = f"rename column {header[col]} -> {out[0][col]}"
    refuse = False
    if kind == "duplicate-column":
        out[0].append(header[col])
        for cells in out[1:]:
            cells.append(cells[col] if col < len(cells) else "")
        what = f"duplicate column {header[col]}"
        refuse = True
    elif kind == "short-row":
        out[row] = out[row][: max(1, len(out[row]) - 1)]
        what = f"short row {row}"
    elif kind == "long-row":
        out[row] = [*out[row], "extra"]
        what = f"long row {row}"
        refuse = row > 0  # row 0, the header, gains a column
    else:
        cell = rng.choice(WRONG_CELLS)
        if row and col < len(out[row]):
            out[row][col] = cell
        what = f"cell row {row} column {header[col]} = {cell!r}"
    return Mutation(what, csv_text(out), refuse)


def csv_text(rows: list[list[str]]) -> bytes:
    return ("\n".join(",".join(cells) for cells in rows) + "\n").encode()


#: Texts that pydantic and pandas read as non-finite numbers.
NON_FINITE_TEXTS = ["1e999", "-1e999", "inf", "-inf", "Infinity", "nan", "NaN"]


def refusals(data: bytes, suffix: str, rng: random.Random, count: int = 4) -> list[Mutation]:
    """Mutations every reader must refuse (:attr:`Mutation.refuse`): for a CSV, a number of a
    data row written with a decimal comma (``1,5``: one cell more than the header) and a column
    named twice; for JSON, a number written as a non-finite text. Empty for other files."""
    text = data.decode("utf-8")
    if suffix == ".csv":
        rows = [line.split(",") for line in text.splitlines()]
        numbers = [(r, c) for r in range(1, min(len(rows), 6)) for c, cell in enumerate(rows[r])
                   if re.fullmatch(r"-?\d+(\.\d+)?", cell)]
        out = []
        for r, c in rng.sample(numbers, min(count, len(numbers))):
            mutated = copy.deepcopy(rows)
            whole, _, decimals = rows[r][c].partition(".")
            mutated[r][c] = f"{whole},{decimals or '5'}"
            out.append(Mutation(f"decimal comma row {r} column {rows[0][c]} = "
                                f"{mutated[r][c]!r}", csv_text(mutated), refuse=True))
        c = rng.randrange(len(rows[0]))
        twice = [[*cells, rows[0][c] if i == 0 else "9"] for i, cells in enumerate(rows)]
        out.append(Mutation(f"column {rows[0][c]} named twice", csv_text(twice), refuse=True))
        return out
    if suffix != ".json":
        return []
    doc = json.loads(text)
    numeric = []
    for path in paths_of(doc):
        parent = doc
        for p in path[:-1]:
            parent = parent[p]
        value = parent[path[-1]]
        if isinstance(value, int | float) and not isinstance(value, bool):
            numeric.append(path)
    out = []
    for path in rng.sample(numeric, min(count, len(numeric))):
        mutated = copy.deepcopy(doc)
        parent = mutated
        for p in path[:-1]:
            parent = parent[p]
        parent[path[-1]] = rng.choice(NON_FINITE_TEXTS)
        out.append(Mutation(f"non-finite text {show(path)} = {parent[path[-1]]!r}",
                            json.dumps(mutated, indent=1).encode(), refuse=True))
    return out


def whole_file(data: bytes, suffix: str, rng: random.Random) -> list[Mutation]:
    """The mutations of the file as bytes: every one, for every file."""
    text = data.decode("utf-8")
    lines = text.splitlines(keepends=True)
    out = [Mutation("empty", b""),
           Mutation("truncated at 1/3", data[: len(data) // 3]),
           Mutation("truncated at 2/3", data[: 2 * len(data) // 3]),
           Mutation("binary", bytes(rng.randrange(256) for _ in range(512))),
           Mutation("BOM", b"\xef\xbb\xbf" + data),
           Mutation("CRLF", data.replace(b"\n", b"\r\n")),
           Mutation("latin-1", text.encode("latin-1", "replace") + "\n# caf\u00e9\n".encode(
               "latin-1") if suffix in (".yaml", ".json") else data + "caf\u00e9".encode(
               "latin-1")),
           Mutation("NUL in the middle", data[: len(data) // 2] + b"\x00" + data[len(data) // 2:]),
           Mutation("header only", lines[0].encode() if lines else b"")]
    if suffix == ".yaml":
        out.append(Mutation("anchor bomb", ANCHOR_BOMB.encode()))
        top = [i for i, line in enumerate(lines) if re.match(r"[A-Za-z_]+:", line)]
        if top:
            i = top[0]
            out.append(Mutation("duplicate key " + lines[i].split(":")[0],
                                "".join([*lines, lines[i] if lines[i].endswith("\n")
                                         else lines[i] + "\n"]).encode()))
        out.append(Mutation("a list at the top", b"- " + data.replace(b"\n", b"\n  ")))
        out.append(Mutation("a scalar at the top", b"42\n"))
        out.append(Mutation("tab indentation", data.replace(b"  ", b"\t")))
    if suffix == ".json":
        out.append(Mutation("a list at the top", b"[" + data + b"]"))
        out.append(Mutation("NaN literal", data.replace(b": 1", b": NaN", 1)))
        out.append(Mutation("trailing comma", data.rstrip().rstrip(b"}") + b",}"))
    return out


def mutations(base: Path, target: Target, per_file: int, rng: random.Random,
              seed: int = 1) -> list[Mutation]:
    """Every mutation of one target file; :func:`refusals` last, from a generator of their own
    (``rng``'s draws, and so the other mutations, are those of earlier versions)."""
    path = base / target.file
    data = path.read_bytes()
    out = whole_file(data, path.suffix, rng)
    text = data.decode("utf-8")
    if path.suffix == ".csv":
        out += [csv_mutation(text, rng) for _ in range(per_file)]
    else:
        if path.suffix == ".jsonl":
            doc: Any = [json.loads(line) for line in text.splitlines()[:20]]
        elif path.suffix == ".json":
            doc = json.loads(text)
        else:
            doc = yaml.safe_load(text)
        out += [structural(doc, path.suffix, rng) for _ in range(per_file)]
    out += refusals(data, path.suffix, random.Random(f"{seed}:{target.file}"))
    seen: set[bytes] = set()
    unique = []
    for m in out:
        if m.data not in seen and m.data != data:
            seen.add(m.data)
            unique.append(m)
    return unique


# --- one case ------------------------------------------------------------------------------


@dataclass
class Result:
    target: str
    mutation: str
    command: list[str]
    exit_code: int | None
    seconds: float
    flags: list[str] = field(default_factory=list)
    message: str = ""
    """The last line of a traceback, else the first line of the error."""


def digests(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.iterdir()) if p.is_file()}


def partial_outputs(out: Path) -> list[str]:
    """Output files that do not parse, and temporary files left behind."""
    bad = []
    if not out.exists():
        return bad
    for p in out.rglob("*"):
        if not p.is_file():
            continue
        name = p.name
        try:
            if name.startswith(".") or name.endswith((".tmp", ".part", "~")):
                bad.append(f"{name}: temporary file left")
            elif p.suffix == ".json":
                json.loads(p.read_text(encoding="utf-8"))
            elif p.suffix == ".yaml":
                yaml.safe_load(p.read_text(encoding="utf-8"))
            elif p.suffix == ".xlsx":
                with zipfile.ZipFile(p) as z:
                    if z.testzip() is not None:
                        bad.append(f"{name}: corrupt zip member")
            elif p.stat().st_size == 0:
                bad.append(f"{name}: empty")
        except Exception as exc:  # any failure to read back is the finding
            bad.append(f"{name}: {type(exc).__name__}")
    return bad


def run_case(base: Path, work: Path, number: int, target: Target, mutation: Mutation,
             command: tuple[str, ...]) -> Result:
    case = work / f"case{number:05d}"
    shutil.copytree(base, case)
    (case / target.file).write_bytes(mutation.data)
    before = digests(case)
    args = [a.replace("{f}", target.file) for a in command]
    code, out, err, seconds = fleetplan(args, case)
    result = Result(target.file, mutation.name, args, code, round(seconds, 2))
    text = out + err
    if TRACEBACK in text:
        result.flags.append("traceback")
        tail = [line for line in text.strip().splitlines() if line.strip()]
        result.message = tail[-1][:300] if tail else ""
    if code is None:
        result.flags.append("hang")
    elif code not in (0, 1, 2):
        result.flags.append("exit")
    elif code == 2 and target.file not in text and "traceback" not in result.flags:
        result.flags.append("unnamed")
    elif code in (0, 1) and mutation.refuse:
        result.flags.append("accepted")
    after = digests(case)
    changed = [k for k in before if after.get(k) != before[k]]
    if changed:
        result.flags.append("changed")
        result.message = f"changed: {changed}"
    partial = partial_outputs(case / OUT)
    if partial:
        result.flags.append("partial")
        result.message = "; ".join(partial)[:300]
    if not result.message:
        first = [line for line in (err or out).splitlines() if line.strip()]
        result.message = " | ".join(first[:3])[:300]
    if not result.flags:
        shutil.rmtree(case)
    return result


def cause(r: Result) -> str:
    """A key shared by the runs of one cause: the flags, the command and the message's shape."""
    shape = re.sub(r"\d+(\.\d+)?", "N", r.message)
    shape = re.sub(r"'[^']*'|`[^`]*`", "'…'", shape)
    return f"{'+'.join(r.flags)} | {r.command[0]} | {shape[:160]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--per-file", type=int, default=20)
    parser.add_argument("--plans", type=int, default=8,
                        help="run plan/compare on every N-th mutation of their file (0: never)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", default="", help="comma-separated target files")
    parser.add_argument("--list", action="store_true", help="list the cases without running")
    opts = parser.parse_args(argv)
    work = opts.workdir.resolve()
    if work.exists():
        shutil.rmtree(work)
    base = work / "base"
    prepare(base)
    rng = random.Random(opts.seed)
    jobs: list[tuple[Target, Mutation, tuple[str, ...]]] = []
    only = set(filter(None, opts.only.split(",")))
    for target in TARGETS:
        found = mutations(base, target, opts.per_file, rng, opts.seed)  # every target: stable
        if only and target.file not in only:
            continue
        for i, mutation in enumerate(found):
            commands = list(target.commands)
            if opts.plans and i % opts.plans == 0:
                commands += target.slow
            jobs += [(target, mutation, c) for c in commands]
    baseline = [(t, c) for t in TARGETS for c in (*t.commands, *t.slow)
                if not only or t.file in only]
    broken = []
    for target, command in baseline:  # each must run on the unmutated inputs (exit 0 or 1)
        args = [a.replace("{f}", target.file) for a in command]
        code, _, err, _ = fleetplan(args, base)
        if code not in (0, 1):
            broken.append(f"{' '.join(args)}: exit {code}: {err.strip()[-300:]}")
        shutil.rmtree(base / OUT, ignore_errors=True)
    if broken:
        raise SystemExit("commands that fail on the unmutated inputs:\n" + "\n".join(broken))
    if opts.list:
        for target, mutation, command in jobs:
            print(target.file, "|", mutation.name, "|", " ".join(command))
        return 0
    start = time.time()
    with ThreadPoolExecutor(opts.jobs) as pool:
        results = list(pool.map(lambda item: run_case(base, work, item[0], *item[1]),
                                enumerate(jobs)))
    with (work / "results.jsonl").open("w", encoding="utf-8") as fh:
        for r in results:
            fh.write(json.dumps(asdict(r)) + "\n")
    flagged = [r for r in results if r.flags]
    mutated = {(r.target, r.mutation) for r in results}
    print(f"{len(mutated)} mutated inputs x their commands = {len(results)} runs in "
          f"{time.time() - start:.0f} s; flagged {len(flagged)}; exits "
          f"{dict(sorted(Counter(str(r.exit_code) for r in results).items()))}")
    print("flags:", dict(Counter(f for r in flagged for f in r.flags)))
    causes: dict[str, list[Result]] = {}
    for r in flagged:
        causes.setdefault(cause(r), []).append(r)
    print(f"distinct causes: {len(causes)}")
    for key, rs in sorted(causes.items(), key=lambda kv: -len(kv[1])):
        first = rs[0]
        print(f"- {len(rs)} x {key}\n    e.g. {first.target}: {first.mutation} :: "
              f"{' '.join(first.command)}")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
