"""Atomic writes: whole files or nothing, no temporary file left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from solver.outputs.atomic import write_atomic


def test_text_is_utf8_and_parents_are_created(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "out.md"
    write_atomic(path, "µs ≤ 1\n")
    assert path.read_bytes() == "µs ≤ 1\n".encode()
    assert sorted(p.name for p in path.parent.iterdir()) == ["out.md"]


def test_bytes_replace_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "out.bin"
    path.write_bytes(b"old and longer")
    write_atomic(path, b"\x00new")
    assert path.read_bytes() == b"\x00new"


def test_a_failed_rename_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    (target / "child").mkdir(parents=True)  # a non-empty directory cannot be replaced by a file
    with pytest.raises(OSError):
        write_atomic(target, "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
