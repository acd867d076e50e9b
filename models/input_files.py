"""Bounded reading of every file fleetplan reads: scenarios, tables, traces, workbooks, and the
files people bring (load-test results, metrics exports, price catalogs).

Every reader goes through :func:`check_file` and :func:`read_bytes` (or :func:`read_text`,
:func:`read_json`), so the size it will read is decided in one place
(:data:`~models.limits.MAX_INPUT_BYTES`, per kind of file) and a missing, unreadable, oversized,
special or malformed file is refused the same way: an :class:`~models.errors.InputError` naming
the file, the place and the fix, exit 2 at the CLI. JSON's nesting is measured on the text
before it is parsed and its values counted after (docs/limits.md).
"""

from __future__ import annotations

import csv
import json
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from models.errors import InputError, Problem
from models.limits import MAX_DEPTH, MAX_INPUT_BYTES, MAX_NODES, MIB

__all__ = ["MAX_INPUT_BYTES", "check_file", "duplicate_columns", "first_long_row", "long_row",
           "parse_json", "read_bytes", "read_json",
           "read_json_lines", "read_text"]


def check_file(path: Path, kind: str, file: str | None = None, where: str = "",
               missing_fix: str = "check the path") -> int:
    """Size of an input file of ``kind`` [bytes]; refused when missing (with ``missing_fix``),
    not a regular file (a device or a pipe would be read forever) or larger than
    :data:`MAX_INPUT_BYTES` allows. ``file`` and ``where`` locate a reference to ``path`` (by
    default, the file itself)."""
    limit = MAX_INPUT_BYTES[kind]

    def refuse(message: str, fix: str) -> InputError:
        shown = str(path).replace("\0", "\\0")
        return InputError([Problem(file or shown, where,
                                   message if file is None else f"{shown}: {message}", fix)])

    try:
        st = path.stat()
    except ValueError:  # a NUL byte in the path
        raise refuse("the path holds a NUL byte", "check the path") from None
    except FileNotFoundError:
        raise refuse("file not found", missing_fix) from None
    except OSError as exc:
        raise refuse(f"{kind} file unreadable: {exc.strerror or exc}", "check the path") from None
    if stat.S_ISDIR(st.st_mode):
        raise refuse(f"is a directory, not a {kind} file", _file_in_directory(path, kind))
    if not stat.S_ISREG(st.st_mode):
        raise refuse(f"is not a regular file (a device, pipe or socket), not a {kind} file",
                     "name a regular file")
    if st.st_size > limit:
        raise refuse(f"{st.st_size / MIB:,.1f} MiB is over the {limit / MIB:,.0f} MiB limit for "
                     f"a {kind} file", "split it, or export a shorter range or fewer columns "
                     "(docs/limits.md)")
    return st.st_size


_PLAN_DIRECTORY_FILES = ("plan.json", "scenario.resolved.yaml")
"""What ``plan --out DIR`` writes that other commands read: the fleet (``--fleet``) and the
scenario as planned."""


def _file_in_directory(path: Path, kind: str) -> str:
    """The fix for a directory given where a file of ``kind`` belongs: a plan's directory
    (``plan --out``) named the way out of it — `check SCENARIO --fleet out/q1` told a new user
    only "name the file"."""
    if kind == "YAML or JSON document" and all((path / f).is_file()
                                               for f in _PLAN_DIRECTORY_FILES):
        fleet, scenario = (path / f for f in _PLAN_DIRECTORY_FILES)
        return (f"name a file in this plan's directory: {fleet} (the fleet, for --fleet) or "
                f"{scenario} (the scenario as planned)")
    return "name the file"


def read_bytes(path: Path, kind: str) -> bytes:
    """The file's bytes within the size limit of ``kind``, checked on what the file system
    reports and again on what is read: files of pseudo-filesystems (``/proc``, ``/sys``)
    report 0 or 4 KiB whatever they hold, and a file may grow after the check."""
    check_file(path, kind)
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_INPUT_BYTES[kind] + 1)
    except OSError as exc:
        raise InputError([Problem(str(path), "", f"cannot read: {exc.strerror or exc}",
                                  "check the path")]) from None
    if len(raw) > MAX_INPUT_BYTES[kind]:
        raise InputError([Problem(str(path), "", f"over the size limit for a {kind} file",
                                  "split it (docs/limits.md)")])
    return raw


def read_text(path: Path, kind: str) -> str:
    """The file as text (UTF-8, a leading BOM dropped), within the size limit of ``kind``."""
    raw = read_bytes(path, kind)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError([Problem(str(path), f"byte {exc.start}", "not UTF-8 text",
                                  f"save the {kind} as UTF-8 (it is a text format)")]) from None


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(r"[\[\]{}]")


def json_depth(text: str) -> int:
    """Deepest nesting of lists and objects in JSON text (strings skipped), before parsing."""
    depth = deepest = 0
    for match in _BRACKETS.finditer(_JSON_STRING.sub("", text)):
        depth += 1 if match.group() in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def count_values(doc: Any, limit: int = MAX_NODES) -> int:
    """Values in a parsed document (containers and scalars), counting up to ``limit`` + 1."""
    stack, count = [doc], 0
    while stack and count <= limit:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


def parse_json(text: str, file: str, where: str = "") -> Any:
    """Parse one JSON document (``where``: the line it is, in a JSON-lines file, as
    ``"line 3, "``) within the structure limits; bad syntax, nesting deeper than
    :data:`~models.limits.MAX_DEPTH`, more than :data:`~models.limits.MAX_NODES` values or an
    integer of more than 4,300 digits → located InputError."""
    place = where.rstrip(", ")
    if json_depth(text) > MAX_DEPTH:
        raise InputError([Problem(file, place, f"JSON nested too deeply: more than {MAX_DEPTH} "
                                  "levels", "give the file as the tool wrote it "
                                  "(docs/limits.md)")])
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        at = f"line {exc.lineno}, column {exc.colno}" if not where else f"column {exc.colno}"
        raise InputError([Problem(file, f"{where}{at}", f"invalid JSON: {exc.msg}",
                                  "fix the syntax there")]) from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer of more than 4,300 digits
        raise InputError([Problem(file, place, f"cannot read as JSON: {exc}",
                                  "fix the value")]) from None
    if count_values(doc) > MAX_NODES:
        raise InputError([Problem(file, place, f"more than {MAX_NODES:,} values",
                                  "split the file (docs/limits.md)")])
    return doc


def read_json(path: Path, kind: str) -> Any:
    """One JSON document from a file of ``kind`` (size-limited, see :func:`read_text`)."""
    return parse_json(read_text(path, kind), str(path))


def read_json_lines(path: Path, kind: str) -> list[Any]:
    """Every non-blank line of a JSON-lines file, each parsed as one document."""
    text = read_text(path, kind)
    return [parse_json(line, str(path), f"line {n}, ")
            for n, line in enumerate(text.splitlines(), start=1) if line.strip()]


#: The public traces the README's walk-through, docs/replay.md and the tests read, by the name
#: they are saved under: where each is published (README, "Walk-through", the paragraph "The
#: traces are public…"). None is shipped with fleetplan.
PUBLIC_TRACES = {
    "AzureLLMInferenceTrace_conv.csv": "the GitHub repository Azure/AzurePublicDataset (data/)",
    "AzureLLMInferenceTrace_code.csv": "the GitHub repository Azure/AzurePublicDataset (data/)",
    "mooncake_conversation_trace.jsonl": "the GitHub repository kvcache-ai/Mooncake "
                                         "(FAST25-release/traces/conversation_trace.jsonl)",
    "mooncake_synthetic_trace.jsonl": "the GitHub repository kvcache-ai/Mooncake "
                                      "(FAST25-release/traces/synthetic_trace.jsonl)",
}

#: Where the README says where to get the public traces.
TRACES_PARAGRAPH = 'README, "Walk-through", the paragraph "The traces are public…"'


#: The fix of a CSV row with more cells than its header (a decimal comma splits a number in two).
LONG_ROW_FIX = ("write decimals with a point (9.38, not 9,38), quote a cell holding a comma, or "
                "remove the trailing comma")


def long_row(cells: int, width: int, file: str, where: str,
             past: Sequence[str] = (), last_column: str = "") -> Problem:
    """A CSV row of more cells than its header's ``width``: csv's readers drop the extra cells
    (``DictReader`` under the key ``None``) or shift every cell one column (pandas), so
    ``9,38`` was read as 9 and the 38 lost. ``past``, the cells past the header, and the
    header's ``last_column`` are named when given."""
    message = f"{cells} cells under a header of {width} columns"
    if past and last_column:
        shown = ", ".join(f"`{c}`" for c in past[:3]) + (", …" if len(past) > 3 else "")
        message += f" ({shown} past its last column, `{last_column}`)"
    return Problem(file, where, message, LONG_ROW_FIX)


def first_long_row(path: Path, file: str, word: str = "row") -> Problem | None:
    """The first row of the CSV file ``path`` with more cells than its header, located at
    ``{word} N`` (N: the line the row ends on, the header being line 1), or ``None``; also
    ``None`` when Python's csv cannot read the file (the caller's reader says why). pandas'
    ``usecols`` drops such cells without a word: a trace's ``1,5`` tokens were read as 1
    input and 5 output tokens."""
    try:
        if _no_long_line(path):  # csv's reader takes 1-4 s a 2-million-row trace; this 0.1
            return None
        with path.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            header = next(reader, [])
            width = len(header)
            for cells in reader:
                if len(cells) > width:
                    return long_row(len(cells), width, file, f"{word} {reader.line_num}",
                                    cells[width:], header[-1].strip() if header else "")
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    return None


#: Bytes :func:`_no_long_line` reads at a time.
SCAN_BYTES = 4 * MIB


def _no_long_line(path: Path) -> bool:
    """Whether the file holds no quote and no line with more commas than its first line: then
    no row has more cells than the header (without a quote, a cell holds no comma and no line
    break). Counted on bytes, a block at a time, with numpy; ``False`` (read it with csv) at
    the first quote or long line."""
    import numpy as np

    with path.open("rb") as fh:
        header = fh.readline()
        if b'"' in header:
            return False
        width = header.count(b",")
        carry = b""
        while block := fh.read(SCAN_BYTES):
            block = carry + block
            if b'"' in block:
                return False
            end = block.rfind(b"\n") + 1  # the lines ended in this block
            block, carry = block[:end], block[end:]
            if not block:
                continue
            data = np.frombuffer(block, dtype=np.uint8)
            ends = np.flatnonzero(data == ord("\n"))
            line_of_comma = np.searchsorted(ends, np.flatnonzero(data == ord(",")))
            if np.bincount(line_of_comma, minlength=1).max() > width:
                return False
        return carry.count(b",") <= width


def duplicate_columns(header: Sequence[str], file: str) -> Problem | None:
    """A CSV header naming a column twice (names compared without surrounding spaces; blank
    names are not compared), or ``None``: csv's ``DictReader`` keeps the last of the two
    cells and pandas renames the second ``x.1``, so one of the two was read and the other
    dropped without a word."""
    names = [h.strip() for h in header]
    twice = sorted({n for n in names if n and names.count(n) > 1})  # blanks name nothing
    if not twice:
        return None
    places = {n: ", ".join(str(i + 1) for i, m in enumerate(names) if m == n) for n in twice}
    shown = ", ".join(f"`{n}` (columns {at})" for n, at in places.items())
    return Problem(file, "header", f"a column named twice: {shown}",
                   "keep one column of each name (which of the two holds the value meant?)")


def missing_trace_fix(path: Path) -> str:
    """The fix for a request trace not found: a public trace (the README's names) is not
    shipped, so where to download it; any other path, check it — and where the public ones
    are found, for a planner following the walk-through from a clone without them."""
    source = PUBLIC_TRACES.get(path.name)
    if source is not None:
        return (f"the public trace {path.name} is not shipped with fleetplan: download it from "
                f"{source} into {path.parent}/ ({TRACES_PARAGRAPH}), or give the path you "
                "saved it at")
    return ("check the path (the public Azure and Mooncake traces are not shipped with "
            f"fleetplan: {TRACES_PARAGRAPH} says where to get them)")
