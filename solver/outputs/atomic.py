"""Atomic file writes: the one place outputs reach the disk.

A module of its own with no project imports, so every writer (outputs, report, contract, the
CLI) can import it without an import cycle.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write a file atomically (temp file + rename): a crash never leaves a half-written output.

    Text is encoded as UTF-8; parent directories are created. The temporary file sits beside
    ``path`` (same filesystem, so the rename is atomic) and is removed on any failure.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
