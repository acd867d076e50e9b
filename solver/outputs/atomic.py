"""Atomic file writes: the one place outputs reach the disk.

A file is written to a temporary file beside it and renamed over it (:func:`write_atomic`); a
directory of files is written into a staging directory beside it and exchanged with it in one
step (:func:`exchange`). Both honour the user's umask (``mkstemp`` and ``mkdtemp`` would create
them 0600 and 0700 whatever it is). A module with no project imports, so every writer can
import it without an import cycle.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["exchange", "file_mode", "locked", "make_staging", "write_atomic"]

#: Name of every staging directory and temporary file fleetplan makes, before its pid.
STAGING_PREFIX = ".fleetplan-staging-"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """Permissions of a new file under the user's umask (0644 under the usual 022)."""
    return 0o666 & ~_umask()


def dir_mode() -> int:
    """Permissions of a new directory under the user's umask (0755 under 022)."""
    return 0o777 & ~_umask()


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write a file atomically (temp file + rename): a crash never leaves a half-written output.

    Text is encoded as UTF-8; parent directories are created. The temporary file sits beside
    ``path`` (same filesystem, so the rename is atomic), gets the permissions the umask gives a
    new file, and is removed on any failure.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{STAGING_PREFIX}{os.getpid()}-",
                               suffix=".tmp")
    try:
        os.fchmod(fd, file_mode())
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def make_staging(parent: Path) -> Path:
    """A new, empty staging directory in ``parent`` (which must exist), with the permissions
    the umask gives a new directory. Its name carries this process's id, so a staging
    directory left by a killed run is recognised (:func:`remove_stale_staging`)."""
    path = Path(tempfile.mkdtemp(dir=parent, prefix=f"{STAGING_PREFIX}{os.getpid()}-"))
    os.chmod(path, dir_mode())
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale_staging(parent: Path) -> None:
    """Remove staging directories and temporary files in ``parent`` whose process is gone (a
    run killed before it could clean up)."""
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            pid_text = entry.name.removeprefix(STAGING_PREFIX).split("-", 1)[0]
            if not entry.name.startswith(STAGING_PREFIX) or not pid_text.isdigit():
                continue
            if int(pid_text) != os.getpid() and not _alive(int(pid_text)):
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``directory`` (``flock`` on its descriptor; no lock file):
    runs that replace directories in it take turns."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _rename_exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux ``renameat2(RENAME_EXCHANGE)``); ``False`` where the
    system or the file system cannot."""
    libc_name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(libc_name, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(a))


def exchange(staging: Path, target: Path) -> None:
    """Put the directory ``staging`` in place of ``target``, whole: after it, ``target`` holds
    the new set of files and nothing of the old one. Call with the parent :func:`locked`.

    Where ``target`` exists the two are swapped in one step and the old set, now at
    ``staging``, is removed; a crash leaves the old set or the new one at ``target``. Where the
    system cannot swap in one step, the old directory is first renamed aside (a crash in
    between leaves it there, whole, and ``target`` absent).
    """
    if not target.exists():
        os.rename(staging, target)
        return
    if not _rename_exchange(staging, target):
        aside = staging.with_name(staging.name + "-old")
        os.rename(target, aside)
        os.rename(staging, target)
        staging = aside
    shutil.rmtree(staging, ignore_errors=True)
