"""Bounded reading of the files people bring: load-test results, metrics exports, price catalogs.

Every reader of a file it did not write goes through :func:`read_text` (or :func:`read_json`),
so the size it will read is decided in one place (:data:`MAX_INPUT_BYTES`, per kind of file)
and a missing, unreadable, oversized or malformed file is refused the same way: an
:class:`~models.errors.InputError` naming the file, the place and the fix, exit 2 at the CLI.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from models.errors import InputError, Problem

MIB = 1024 * 1024

#: Largest file read of each kind [bytes]. A vLLM ``--save-detailed`` result of 10,000 requests,
#: a month of one-minute Prometheus samples of vLLM's series, and SkyPilot's whole AWS catalog
#: (2.4 MB) each fit with room to spare; beyond these a file is refused before it is parsed.
MAX_INPUT_BYTES: dict[str, int] = {
    "benchmark result": 64 * MIB,
    "metrics export": 64 * MIB,
    "price catalog": 32 * MIB,
    "zone mapping": 4 * MIB,
}


def check_file(path: Path, kind: str) -> int:
    """Size of an input file of ``kind`` [bytes]; refused when missing, not a file, or larger
    than :data:`MAX_INPUT_BYTES` allows."""
    limit = MAX_INPUT_BYTES[kind]
    if path.is_dir():
        raise InputError([Problem(str(path), "", f"is a directory, not a {kind} file",
                                  "name the file")])
    try:
        size = path.stat().st_size
    except (OSError, ValueError) as exc:
        raise InputError([Problem(str(path), "", f"{kind} file not found or unreadable: {exc}",
                                  "check the path")]) from None
    if not path.is_file():
        raise InputError([Problem(str(path), "", f"is not a regular file ({kind})",
                                  "name a file")])
    if size > limit:
        raise InputError([Problem(
            str(path), "", f"{size / MIB:,.1f} MiB is over the {limit / MIB:,.0f} MiB limit for "
            f"a {kind} file", "split it, or export a shorter range or fewer columns")])
    return size


def read_text(path: Path, kind: str) -> str:
    """The file as text (UTF-8, a leading BOM dropped), within the size limit of ``kind``."""
    check_file(path, kind)
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_INPUT_BYTES[kind] + 1)  # the file may have grown since the check
    except OSError as exc:
        raise InputError([Problem(str(path), "", f"cannot read: {exc}", "check the path")]
                         ) from None
    if len(raw) > MAX_INPUT_BYTES[kind]:
        raise InputError([Problem(str(path), "", f"over the size limit for a {kind} file",
                                  "split it")])
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError([Problem(str(path), f"byte {exc.start}", "not UTF-8 text",
                                  f"save the {kind} as UTF-8 (it is a text format)")]) from None


def parse_json(text: str, file: str, where: str = "") -> Any:
    """Parse one JSON document; bad syntax or nesting too deep to parse → located InputError."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        place = f"{where}line {exc.lineno}, column {exc.colno}"
        raise InputError([Problem(file, place, f"invalid JSON: {exc.msg}",
                                  "fix the syntax there")]) from None
    except RecursionError:
        raise InputError([Problem(file, where.rstrip(", "), "JSON nested too deeply to read",
                                  "give the file as the tool wrote it")]) from None


def read_json(path: Path, kind: str) -> Any:
    """One JSON document from a file of ``kind`` (size-limited, see :func:`read_text`)."""
    return parse_json(read_text(path, kind), str(path))


def read_json_lines(path: Path, kind: str) -> list[Any]:
    """Every non-blank line of a JSON-lines file, each parsed as one document."""
    text = read_text(path, kind)
    return [_line(line, str(path), n)
            for n, line in enumerate(text.splitlines(), start=1) if line.strip()]


def _line(line: str, file: str, lineno: int) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError([Problem(file, f"line {lineno}, column {exc.colno}",
                                  f"invalid JSON: {exc.msg}", "each line must be one JSON "
                                  "document")]) from None
    except RecursionError:
        raise InputError([Problem(file, f"line {lineno}", "JSON nested too deeply to read",
                                  "give the file as the tool wrote it")]) from None
