"""Where outputs go: every output path checked before any work, and written whole or not at all.

:func:`check_output` refuses, before a command reads its inputs' contents or solves anything,
an output path that cannot work: too long for the file system, a symbolic link (dangling, in a
loop, or to elsewhere), the wrong kind of thing, under a file, or one that would replace an input
(scenario, overlays, tables, measurements, fleets, traces). The checks are complete for what can
be known without writing; :class:`OutputFile` and :class:`PlanDirectory` then make the
temporary file or staging directory at once, so a path that cannot be written (read-only, a
pseudo-filesystem, no space for a directory entry) is refused before the work too.

A plan's directory is replaced whole (:class:`PlanDirectory`): every file is written into a
staging directory beside it, which is exchanged with it in one step under a lock
(:func:`solver.outputs.atomic.exchange`). A crash or kill leaves the previous complete set or
the new one, never a mix; two runs into one directory each put their whole set in place, the
later last. So that nothing is lost by the exchange, a directory that holds anything but a plan's
files is refused.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Collection, Iterable
from pathlib import Path
from types import TracebackType

from models.errors import InputError, Problem
from solver.outputs.atomic import (
    STAGING_PREFIX,
    exchange,
    file_mode,
    locked,
    make_staging,
    remove_stale_staging,
)

__all__ = ["OutputFile", "PlanDirectory", "check_output"]

#: Bytes a staging directory's or temporary file's name adds to a path (prefix, pid, random).
STAGING_NAME_BYTES = len(STAGING_PREFIX) + 24


def _limit(path: Path, name: str, default: int) -> int:
    try:
        return int(os.pathconf(path, name))
    except (OSError, ValueError):
        return default


def _existing_ancestor(path: Path) -> Path:
    ancestor = path.absolute()
    while not os.path.lexists(ancestor) and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    return ancestor


def _length_problems(path: Path, option: str, longest_inside: int) -> list[Problem]:
    """Components past the file system's name limit, or a path past its path limit (counting
    the longest name written inside a directory, and a staging name)."""
    ancestor = _existing_ancestor(path)
    base = ancestor if ancestor.is_dir() else ancestor.parent
    name_max = _limit(base, "PC_NAME_MAX", 255)
    path_max = _limit(base, "PC_PATH_MAX", 4096)
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > name_max:
            shown = part if len(part) <= 40 else part[:37] + "…"
            return [Problem(str(path)[:200], option, f"the name `{shown}` is {size} bytes long; "
                            f"the file system allows {name_max}",
                            f"give {option} a shorter name")]
    total = len(os.fsencode(path.absolute())) + 1 + max(longest_inside, STAGING_NAME_BYTES)
    if total > path_max:
        return [Problem(str(path)[:200], option, f"the path would be {total} bytes long; the "
                        f"file system allows {path_max}", f"give {option} a shorter path")]
    return []


def _link_problems(path: Path, option: str) -> list[Problem]:
    """The output path itself a symbolic link, or a loop anywhere in it."""
    if os.path.islink(path):
        target = os.readlink(path)
        try:
            os.stat(path)
        except OSError as exc:
            what = ("a symbolic link loop" if exc.errno == 40 else
                    f"a symbolic link to {target}, which does not exist")
            return [Problem(str(path), option, f"is {what}",
                            f"remove the link, or give {option} another path")]
        return [Problem(str(path), option, f"is a symbolic link to {target}: writing would "
                        "replace the link, not what it points to",
                        f"give {option} the path it points to ({path.resolve()})")]
    try:
        path.resolve(strict=False)
    except (RuntimeError, OSError):
        return [Problem(str(path), option, "a symbolic link in the path loops",
                        f"give {option} another path")]
    return []


def _kind_problems(path: Path, option: str, directory: bool) -> list[Problem]:
    """The output (or the directory it goes into) is the wrong kind of thing."""
    if directory and path.exists() and not path.is_dir():
        return [Problem(str(path), option, "is a file, not a directory",
                        f"give {option} a directory (it is created if missing)")]
    if not directory and path.is_dir():
        return [Problem(str(path), option, "is a directory, not a file",
                        f"give {option} a file name inside it")]
    if not directory and path.exists() and not stat.S_ISREG(path.stat().st_mode):
        return [Problem(str(path), option, "is not a regular file (a device, pipe or socket)",
                        f"give {option} a file name")]
    ancestor = _existing_ancestor(path if directory else path.parent)
    if not ancestor.is_dir():
        return [Problem(str(path), option,
                        f"{ancestor} is a file, so no directory can be made under it",
                        f"give {option} a path under a directory")]
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return [Problem(str(path), option, f"directory {ancestor} is not writable",
                        f"give {option} a path you may write to")]
    return []


def _resolved(path: Path) -> Path | None:
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return None


def _input_problems(path: Path, option: str, directory: bool, files: Collection[str],
                    inputs: Iterable[Path | str | None], whole: bool) -> list[Problem]:
    """An input the output would replace: the file itself, one of a directory's ``files``, or,
    for a directory replaced ``whole``, anything inside it."""
    out = _resolved(path)
    written = {out / f for f in files} if directory and out is not None else {out}
    problems = []
    seen: set[Path] = set()
    for source in inputs:
        if source is None or str(source).startswith("builtin:"):
            continue
        src = _resolved(Path(source))
        if out is None or src is None or not src.exists() or src in seen:
            continue  # a file given twice (the scenario, and its own sources) is one problem
        seen.add(src)
        inside = whole and (src == out or out in src.parents)
        if src in written or inside:
            where = path / src.relative_to(out) if directory and src != out else path
            verb = "overwrite" if src in written else "remove"
            problems.append(Problem(str(where), option, f"would {verb} the input {source}",
                                    f"give {option} another path; inputs are never "
                                    "overwritten"))
    return problems


def _foreign_entries(path: Path, files: Collection[str]) -> list[str]:
    """Entries of an existing directory that are not among a plan's ``files``."""
    if not path.is_dir():
        return []
    return sorted(e.name for e in path.iterdir() if e.name not in files)


def check_output(path: Path, option: str, *, directory: bool = False,
                 files: Collection[str] = (), inputs: Iterable[Path | str | None] = (),
                 whole: bool = False) -> None:
    """Refuse, before any work is done, an output that cannot be written or would replace an
    input: ``path`` is a file (or, with ``directory``, a directory receiving ``files``; with
    ``whole``, replaced whole, so it may hold nothing else)."""
    longest = max((len(os.fsencode(f)) for f in files), default=0)
    problems = _length_problems(path, option, longest)
    problems = problems or _link_problems(path, option)
    problems = problems or _kind_problems(path, option, directory)
    if problems:  # a wrong path itself needs no second message
        raise InputError(problems)
    problems = _input_problems(path, option, directory, files, inputs, whole)
    foreign = _foreign_entries(path, files) if whole else []
    if foreign and not problems:
        shown = ", ".join(f"`{n}`" for n in foreign[:5]) + (", …" if len(foreign) > 5 else "")
        problems.append(Problem(str(path), option, f"holds {shown}, which a plan does not "
                                "write: a plan replaces its directory whole",
                                f"give {option} a new or empty directory, or a plan's "
                                "directory"))
    if problems:
        raise InputError(problems)


def _cannot_write(path: Path, option: str, exc: OSError) -> InputError:
    return InputError([Problem(str(path), option, f"cannot write there: "
                               f"{exc.strerror or exc}", f"give {option} a path you may "
                               "write to")])


class OutputFile:
    """One output file, reserved before the work: checked (:func:`check_output`), and a
    temporary file made beside it at once, so writing is known to work; :meth:`commit` writes
    the bytes and renames them into place. Used as a context manager, the temporary file is
    removed if the work fails."""

    def __init__(self, path: Path, option: str, inputs: Iterable[Path | str | None] = ()) -> None:
        check_output(path, option, inputs=inputs)
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent,
                                       prefix=f"{STAGING_PREFIX}{os.getpid()}-", suffix=".tmp")
        except OSError as exc:
            raise _cannot_write(path, option, exc) from None
        os.close(fd)
        self._tmp: Path | None = Path(tmp)

    def commit(self, data: bytes | str) -> Path:
        """Write ``data`` (text as UTF-8) and put the file in place."""
        assert self._tmp is not None, "committed twice"
        self._tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(self._tmp, file_mode())
        os.replace(self._tmp, self.path)
        self._tmp = None
        return self.path

    def discard(self) -> None:
        """Remove the temporary file (nothing is written)."""
        if self._tmp is not None:
            self._tmp.unlink(missing_ok=True)
            self._tmp = None

    def __enter__(self) -> OutputFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.discard()


class PlanDirectory:
    """A plan's directory, reserved before the work and written whole or not at all.

    Checked (:func:`check_output`, ``whole``), then a staging directory is made beside it at
    once; writers write into :attr:`staging`; :meth:`commit` exchanges it with the target
    under a lock on the parent. Used as a context manager, the staging directory is removed if
    the work fails, and staging left by killed runs is removed on the next run.
    """

    def __init__(self, path: Path, option: str, files: Collection[str],
                 inputs: Iterable[Path | str | None] = ()) -> None:
        check_output(path, option, directory=True, files=files, inputs=inputs, whole=True)
        self.path, self.option, self.files = path, option, files
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            remove_stale_staging(path.parent)
            self._staging: Path | None = make_staging(path.parent)
        except OSError as exc:
            raise _cannot_write(path, option, exc) from None

    @property
    def staging(self) -> Path:
        """The directory the files are written into until :meth:`commit`."""
        assert self._staging is not None, "already committed"
        return self._staging

    def commit(self) -> list[Path]:
        """Put the staged files in place of the directory's, whole; their paths there."""
        staging = self.staging
        order = list(self.files)
        names = sorted((p.name for p in staging.iterdir()),
                       key=lambda n: order.index(n) if n in order else len(order))
        with locked(self.path.parent):
            foreign = _foreign_entries(self.path, self.files)
            if foreign:  # written there since the check: the exchange would lose it
                raise InputError([Problem(str(self.path), self.option, f"`{foreign[0]}` "
                                          "appeared there during the run; the plan was not "
                                          "put in place", "move it away and run again")])
            exchange(staging, self.path)
        self._staging = None
        return [self.path / n for n in names]

    def discard(self) -> None:
        """Remove the staging directory (the target is left as it was)."""
        if self._staging is not None:
            shutil.rmtree(self._staging, ignore_errors=True)
            self._staging = None

    def __enter__(self) -> PlanDirectory:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.discard()
