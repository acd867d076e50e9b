"""Text made inert for where it goes: the terminal, Markdown, workbook and CSV cells, charts.

User text (names, descriptions, file paths, values read from a file) travels into every output.
Each destination gives some characters a meaning — an escape sequence to a terminal, a link or
an image or HTML to Markdown, a formula to a spreadsheet, mathematics to a chart title — and
some characters break its format outright (control characters in XML). One function per
destination here turns any text into text that is shown as written and means nothing more
(docs/outputs.md, "Text that travels"). Pure functions of strings, in ``models`` so that every
writer can use them (``models.measured`` writes a CSV too).
"""

from __future__ import annotations

import io
import math
import re
import unicodedata
from typing import TextIO

__all__ = ["CSV_DIGITS", "FORMULA_STARTS", "InertStream", "cell_text", "chart_text", "csv_cell",
           "csv_text", "csv_uncell", "decimal_float", "markdown_code", "markdown_text",
           "terminal_text"]

#: Unicode categories shown escaped on a terminal: controls, format characters (bidirectional
#: overrides, zero-width), line and paragraph separators, unassigned and private use.
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
#: What a terminal keeps as it is: line ends and tabs.
_TERMINAL_KEEPS = frozenset("\n\t")


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(text: str) -> str:
    """``text`` with every control or invisible character written as an escape (``\\x1b``,
    ``\\u202e``): an escape sequence read from a file is shown, never run by the terminal."""
    if text.isprintable():  # the common case, in C
        return text
    return "".join(c if c in _TERMINAL_KEEPS or unicodedata.category(c) not in _INVISIBLE
                   else _escaped(c) for c in text)


class InertStream(io.TextIOBase):
    """A text stream that writes through :func:`terminal_text` to the stream it wraps: every
    line the command line prints, of every command, passes here."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self._stream = stream

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._stream.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self._stream.errors

    @property
    def wrapped(self) -> TextIO:
        """The stream written to, for output that makes its own text inert and needs the
        terminal's controls (the live progress line of ``solver.cli.show``)."""
        return self._stream

    def write(self, text: str) -> int:
        self._stream.write(terminal_text(text))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    def writable(self) -> bool:
        return True


#: Characters XML 1.0 cannot hold at all (openpyxl refuses them, or writes a file Excel and
#: openpyxl cannot open): C0 controls but tab and line ends, lone surrogates, U+FFFE/U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
#: First characters with which a spreadsheet starts a formula (or, tab and carriage return,
#: that some strip before looking for one).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def cell_text(text: str) -> str:
    """Text a workbook cell can hold: the characters XML cannot hold removed. (The workbook
    writer marks text cells that start like a formula as text: ``quotePrefix``.)"""
    return _NOT_XML.sub("", text)


def csv_uncell(text: str) -> str:
    """A CSV cell as :func:`csv_text` wrote it, read back: the ``'`` it added removed."""
    return text[1:] if text.startswith("'") and text[1:].startswith(FORMULA_STARTS) else text


def csv_text(text: str) -> str:
    """A CSV cell's text that no spreadsheet runs as a formula: a cell starting with ``=``,
    ``+``, ``-``, ``@``, a tab or a carriage return gets a leading ``'`` (the usual defence;
    a number such as ``-1.5`` is left as it is)."""
    text = cell_text(text)
    if text.startswith(FORMULA_STARTS) and not _is_number(text):
        return "'" + text
    return text


#: Significant digits a CSV writes a float with: as many as a double holds to the last one
#: a decimal round trip keeps, so ``15.8 + 0.5 × 7.8`` is written ``19.7`` and not the
#: ``19.700000000000003`` of its binary value (a new user's measured.csv).
CSV_DIGITS = 15


def csv_cell(value: object) -> object:
    """A value for a CSV writer: text made inert (:func:`csv_text`), a finite float to
    :data:`CSV_DIGITS` significant digits (no binary noise in the last place), anything else
    as it is."""
    if isinstance(value, str):
        return csv_text(value)
    if isinstance(value, float):
        return decimal_float(value)
    return value


def decimal_float(value: float) -> float:
    """A finite float rounded to :data:`CSV_DIGITS` significant digits: the decimal it stands
    for (``19.7`` for ``19.700000000000003``), for the CSV and workbook writers; NaN and
    infinities as they are."""
    return float(f"{value:.{CSV_DIGITS}g}") if math.isfinite(value) else value


def _is_number(text: str) -> bool:
    """A finite number as a spreadsheet reads one (``-inf`` and ``-nan`` are formulas to it)."""
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def chart_text(text: str) -> str:
    """Text for a chart's title or label: invisible characters removed, and ``$`` escaped so
    matplotlib does not read ``$…$`` as mathematics (a malformed formula would stop the run)."""
    visible = "".join(c for c in text if unicodedata.category(c) not in _INVISIBLE)
    return visible.replace("$", r"\$")


#: ASCII punctuation that starts something in (GitHub-flavoured) Markdown inside a line: code,
#: emphasis, HTML and entities, table cells, strikethrough, and the ``](`` of a link or an image
#: (a bracket alone links nothing: reference definitions start a line). An underscore between
#: two letters or digits (``on_demand``) opens nothing and is left as it is.
_MARKDOWN_ACTIVE = re.compile(r"([\\`*<>|&~]|\](?=[(\[])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")
#: Markers that mean something only at the start of a line: headings, lists, quotes, rules.
_LINE_START = re.compile(r"^(\s*)([#+\-=\[]|\d+[.)])")
#: What GitHub's Markdown links by itself: ``scheme://``, ``www.``, an e-mail's ``@``; a
#: zero-width space breaks each (renderers link the text after escapes are removed).
_AUTOLINK = re.compile(r"(://|www\.|@)", re.IGNORECASE)
_ZWSP = "\u200b"


def _visible_line(text: object) -> str:
    """``text`` on one line: line ends and tabs as spaces, invisible characters removed."""
    return "".join(" " if c in "\r\n\t" else c for c in str(text)
                   if c in "\r\n\t" or unicodedata.category(c) not in _INVISIBLE)


def markdown_text(text: object, line_start: bool = False) -> str:
    """User text inside a Markdown line or table cell, shown as written: never a link, an
    image, HTML, emphasis or a new table cell. Line ends become spaces; invisible characters
    are removed. ``line_start``: the text begins a line, where ``#``, ``-``, ``1.`` … would
    make a heading or a list."""
    escaped = _MARKDOWN_ACTIVE.sub(r"\\\1", _visible_line(text))
    if line_start:
        escaped = _LINE_START.sub(lambda m: f"{m.group(1)}\\{m.group(2)}", escaped)
    return _AUTOLINK.sub(lambda m: m.group(1)[0] + _ZWSP + m.group(1)[1:], escaped)


def markdown_code(text: object) -> str:
    """User text as inline code (a path, a digest): a code span whose fence is longer than any
    run of backticks inside; pipes escaped for table cells."""
    visible = _visible_line(text)
    longest = max((len(run) for run in re.findall(r"`+", visible)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if visible.startswith("`") or visible.endswith("`") else ""
    return f"{fence}{pad}{visible.replace('|', chr(92) + '|')}{pad}{fence}"
