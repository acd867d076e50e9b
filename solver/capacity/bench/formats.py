"""Which load-test tool wrote a file, detected from its content, and its points.

- vLLM ``--save-result`` JSON (one run): an object with ``request_throughput`` (a number) and
  ``model_id``; ``--append-result`` (a sweep): one such object per line; ``vllm bench sweep
  serve``'s ``summary.json``: a list of them — :mod:`~solver.capacity.bench.vllm`;
- GuideLLM ``benchmarks.json``: an object whose ``benchmarks`` have ``metrics`` —
  :mod:`~solver.capacity.bench.guidellm`;
- AIPerf and GenAI-Perf profile exports: metrics as ``{"unit", "avg", …}`` objects —
  :mod:`~solver.capacity.bench.aiperf`.

Anything else is refused with what was found and which file to give instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from models.errors import InputError, Problem
from models.input_files import parse_json, read_text
from solver.capacity.bench.aiperf import is_perf_export, perf_export_point
from solver.capacity.bench.guidellm import guidellm_points, is_guidellm_report
from solver.capacity.bench.points import BenchPoint
from solver.capacity.bench.vllm import is_vllm_run, vllm_points

READ = ("vLLM bench serve --save-result JSON (or a --append-result / bench sweep summary.json "
        "sweep), GuideLLM benchmarks.json, AIPerf profile_export_aiperf.json or GenAI-Perf "
        "profile_export_genai_perf.json")


#: Keys that give a JSON file away (found in its first few kilobytes): what it is, what to do.
GIVEAWAYS = (
    ('"request_throughput"', "a load-test result (vLLM, AIPerf or GenAI-Perf)",
     "import it with `fleetplan import-bench FILE --gpu G --tp T`"),
    ('"benchmarks"', "a GuideLLM benchmark report",
     "import it with `fleetplan import-bench FILE --gpu G --tp T`"),
    ('"resultType"', "a Prometheus query result", "profile it with `fleetplan profile "
     "--prometheus FILE`"),
)


def foreign_json(path: Path, head: str, expected: str) -> InputError | None:
    """The refusal for a load-test result or Prometheus export given where ``expected`` (a
    trace, a measurements CSV) belongs, from the file's first kilobytes; ``None`` otherwise."""
    if head.lstrip()[:1] not in ("{", "["):
        return None
    for key, what, fix in GIVEAWAYS:
        if key in head:
            return InputError([Problem(str(path), "", f"this is {what}, not {expected}", fix)])
    return None


def _refuse(file: str, what: str, fix: str = f"give {READ}") -> InputError:
    return InputError([Problem(file, "", what, fix)])


def _what_else(doc: Any) -> str:
    """A guess at what a JSON document that is no benchmark result is, for the message."""
    if isinstance(doc, dict):
        if {"timestamp", "input_length"} <= set(doc):
            return "a Mooncake request trace, not a load-test result (profile it with " \
                   "`fleetplan profile`)"
        if doc.get("status") == "success" and isinstance(doc.get("data"), dict):
            return "a Prometheus query result, not a load-test result (use `fleetplan " \
                   "profile --prometheus`)"
        keys = ", ".join(list(map(str, doc))[:8])
        return f"not a load-test result fleetplan reads (keys: {keys})"
    return f"not a load-test result fleetplan reads (a JSON {type(doc).__name__})"


def read_bench_file(path: Path) -> list[BenchPoint]:
    """Every tested load of one load-test file, in file order (format in the module docstring)."""
    file = str(path)
    text = read_text(path, "benchmark result")
    head = text.lstrip()[:1]
    if not head:
        raise _refuse(file, "empty file")
    if head not in "[{":
        first = text.lstrip().splitlines()[0][:80]
        kind = "a CSV export" if "," in first else "not JSON"
        raise _refuse(file, f"{kind} (first line `{first}`)",
                      f"give the JSON the tool writes: {READ}")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            parse_json(text, file)  # raises the located syntax error
        docs = [parse_json(line, file, f"line {n}, ")
                for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
        return vllm_points(docs, file, "line")
    except RecursionError:
        raise _refuse(file, "JSON nested too deeply to read") from None
    if isinstance(doc, list):
        if not doc:
            raise _refuse(file, "an empty list: no runs")
        return vllm_points(doc, file, "runs")
    if is_guidellm_report(doc):
        return guidellm_points(doc, file)
    if is_perf_export(doc):
        return [perf_export_point(doc, file)]
    if is_vllm_run(doc):
        return vllm_points([doc], file, "")
    raise _refuse(file, _what_else(doc))
