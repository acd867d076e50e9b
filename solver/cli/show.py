"""Terminal output for people: tables and progress through rich, plain text when not a terminal.

Every table a command prints goes through :func:`table_lines`, so columns are measured by rich
(a ``1,000,000`` ms figure widens its column instead of running into the next) and numbers align
right. On a terminal a table has a ruled header and wraps to the terminal's width; piped or
redirected, it is plain text: no box characters, no line wrapping, no trailing spaces. Neither
form holds a colour or any other escape sequence: every line a command prints passes through
``models.text.InertStream``, which shows escapes rather than running them. Cells are rich
``Text`` objects, so user text (``[bold]``, ``:emoji:``) is never read as markup. ``--json``
output does not come through here.

rich is imported when a table or a progress line is shown, not at start-up; a plain table of
printable ASCII (the common case, and all of ``validate``'s) is laid out here as rich lays it
out, without importing rich (~0.1 s of CPU at start-up; tests/test_terminal.py checks that the
two agree).
"""

from __future__ import annotations

import io
import shutil
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import click

from models.text import terminal_text

__all__ = ["Col", "is_terminal", "progress", "rich_table_lines", "table_lines"]

#: Width a table may take when the output is not a terminal (no wrapping in files and pipes).
PLAIN_WIDTH = 1000


@dataclass(frozen=True)
class Col:
    """A table column: its title and whether it holds numbers (aligned right)."""

    title: str
    right: bool = False


def is_terminal(err: bool = False) -> bool:
    """Whether stdout (``err``: stderr) is an interactive terminal."""
    stream = sys.stderr if err else sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())


def _text(value: object) -> str:
    """A cell as text: ``None`` shows as an em dash; control characters escaped here, so the
    column is measured as the escape is shown (``models.text.terminal_text``)."""
    return "—" if value is None else terminal_text(str(value))


def _plain_lines(cols: Sequence[Col], rows: Sequence[Sequence[str]],
                 indent: int) -> list[str] | None:
    """The plain form of a table, as rich lays it out, where that is simple: every cell printable
    ASCII (one character, one column) without spaces at either end, every column holding some
    text, and the table within :data:`PLAIN_WIDTH`. ``None`` otherwise: rich lays it out."""
    table = [[_text(c.title) for c in cols], *rows]
    if any(len(row) != len(cols) for row in table) or not all(
            cell.isascii() and cell.isprintable() and cell == cell.strip()
            for row in table for cell in row):
        return None
    widths = [max(len(row[i]) for row in table) for i in range(len(cols))]
    if 0 in widths or sum(widths) + 2 * (len(widths) - 1) > PLAIN_WIDTH:
        return None
    pad = " " * indent
    lines = ("  ".join(cell.rjust(w) if c.right else cell.ljust(w)
                       for c, w, cell in zip(cols, widths, row, strict=True)) for row in table)
    return [pad + line.rstrip() for line in lines if line.strip()]


def table_lines(columns: Sequence[Col | str], rows: Sequence[Sequence[object]],
                indent: int = 2, terminal: bool | None = None) -> list[str]:
    """A table as lines of text, columns sized as rich sizes them.

    ``columns`` are titles (left-aligned text) or :class:`Col` (``right`` for numbers); each row
    has one cell per column. ``terminal`` (default: whether stdout is one) chooses the ruled,
    bold form; otherwise the table is plain text.
    """
    tty = is_terminal() if terminal is None else terminal
    cols = [c if isinstance(c, Col) else Col(c) for c in columns]
    if not tty:
        plain = _plain_lines(cols, [[_text(v) for v in row] for row in rows], indent)
        if plain is not None:
            return plain
    return rich_table_lines(cols, rows, indent, tty)


def rich_table_lines(columns: Sequence[Col], rows: Sequence[Sequence[object]], indent: int,
                     terminal: bool) -> list[str]:
    """:func:`table_lines` laid out by rich, whatever the cells hold."""
    # rich here, not at the top: ~0.1 s of CPU that a command printing plain tables never needs
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    grid = Table(box=box.SIMPLE_HEAD if terminal else None, show_edge=False, pad_edge=False,
                 padding=(0, 1), header_style="")
    for c in columns:
        grid.add_column(Text(_text(c.title)), justify="right" if c.right else "left",
                        no_wrap=not terminal)
    for row in rows:
        grid.add_row(*(Text(_text(v)) for v in row))
    width = shutil.get_terminal_size().columns - indent if terminal else PLAIN_WIDTH
    buffer = io.StringIO()
    console = Console(file=buffer, width=max(width, 40), force_terminal=terminal, no_color=True,
                      color_system=None, highlight=False, emoji=False, soft_wrap=False)
    console.print(grid)
    pad = " " * indent
    return [pad + line.rstrip() for line in buffer.getvalue().splitlines() if line.strip()]


@contextmanager
def progress(message: str, enabled: bool = True) -> Iterator[None]:
    """Say on stderr what is running: a live spinner with the elapsed time on a terminal, one
    plain line otherwise (``enabled=False``: nothing, as for ``--json``)."""
    if not enabled:
        yield
        return
    if not is_terminal(err=True):
        click.echo(message, err=True)
        yield
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    # the spinner redraws its line with the terminal's controls, so it writes past the inert
    # stream to the terminal itself; the one piece of text it shows is made inert here
    stream = getattr(sys.stderr, "wrapped", sys.stderr)
    console = Console(file=stream, force_terminal=True, highlight=False, emoji=False)
    columns = (SpinnerColumn(), TextColumn("{task.description}", markup=False),
               TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        bar.add_task(terminal_text(message), total=None)
        yield
    click.echo(message.rstrip("…") + " done", err=True)
