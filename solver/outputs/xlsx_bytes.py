"""Workbook bytes that depend on the workbook's content only: same inputs, same file.

openpyxl stamps two clocks into an ``.xlsx``: the document properties ``created`` (when the
``Workbook`` object was made) and ``modified`` (when it was saved), and every zip entry's
modification time. Both are set here to one stamp derived from the inputs
(:func:`stamp_of`: the scenario's ``policy.as_of``, else :data:`DEFAULT_STAMP`), so two runs on
the same inputs write byte-identical workbooks (docs/outputs.md, "Deterministic outputs").
"""

from __future__ import annotations

import datetime as dt
import io
import re
import zipfile

from openpyxl import Workbook
from openpyxl.writer.excel import ExcelWriter

__all__ = ["DEFAULT_STAMP", "fixed_zip_times", "stamp_of", "workbook_bytes"]

#: Stamp of an output whose inputs name no date.
DEFAULT_STAMP = dt.datetime(2000, 1, 1)

#: The earliest time a zip entry can carry (the format counts years from 1980).
ZIP_EPOCH = dt.datetime(1980, 1, 1)


def _date(text: str | None) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text) if text else None
    except ValueError:  # the loader reports it; a template may still carry it as typed
        return None


def stamp_of(*as_of: str | None) -> dt.datetime:
    """Midnight of the latest of the given ISO dates (``policy.as_of``); :data:`DEFAULT_STAMP`
    when none is given (or none is a date)."""
    dates = [d for d in map(_date, as_of) if d is not None]
    return dt.datetime.combine(max(dates), dt.time()) if dates else DEFAULT_STAMP


def fixed_zip_times(data: bytes, stamp: dt.datetime) -> bytes:
    """The same zip archive with every entry dated ``stamp`` (clamped to 1980 at the earliest).

    Entries keep their order, names, compression and permission bits; the host system recorded
    in each entry is fixed to Unix so the bytes do not depend on the platform either.
    """
    date_time = max(stamp, ZIP_EPOCH).timetuple()[:6]
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for entry in src.infolist():
            fixed = zipfile.ZipInfo(entry.filename, date_time=date_time)
            fixed.compress_type = entry.compress_type
            fixed.external_attr = entry.external_attr
            fixed.create_system = 3  # Unix
            dst.writestr(fixed, src.read(entry))
    return out.getvalue()


#: Children of a ``<font>`` in the order Excel's own schema (the Open XML SDK's) expects them;
#: openpyxl writes ``name`` before ``sz`` and ``color``, which a strict validator reports.
FONT_ORDER = ("b", "i", "strike", "condense", "extend", "outline", "shadow", "u", "vertAlign",
              "sz", "color", "name", "family", "charset", "scheme")
_FONT = re.compile(rb"<font>(.*?)</font>", re.S)
_CHILD = re.compile(rb"<(\w+)\b[^<>]*/>")


def _ordered_font(match: re.Match[bytes]) -> bytes:
    children = [(m.group(1).decode(), m.group(0)) for m in _CHILD.finditer(match.group(1))]
    if b"".join(c for _, c in children) != re.sub(rb">\s+<", b"><", match.group(1)).strip():
        return match.group(0)  # not the plain list of empty elements openpyxl writes
    rank = {name: i for i, name in enumerate(FONT_ORDER)}
    children.sort(key=lambda c: rank.get(c[0], len(rank)))
    return b"<font>" + b"".join(c for _, c in children) + b"</font>"


def schema_order(data: bytes) -> bytes:
    """The same package with ``xl/styles.xml``'s font children in schema order (Excel reads
    either order; the SDK's schema, which validators use, fixes one)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for entry in src.infolist():
            body = src.read(entry)
            if entry.filename == "xl/styles.xml":
                body = _FONT.sub(_ordered_font, body)
            dst.writestr(entry, body)
    return out.getvalue()


def workbook_bytes(wb: Workbook, stamp: dt.datetime = DEFAULT_STAMP) -> bytes:
    """Serialise ``wb`` with ``stamp`` as its created and modified time and every zip entry's
    time (``wb.properties`` is updated to match), its styles in schema order."""
    wb.properties.created = stamp
    wb.properties.modified = stamp
    buffer = io.BytesIO()
    # ExcelWriter is what openpyxl's save_workbook runs, without its "modified = now" line
    ExcelWriter(wb, zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, allowZip64=True)).save()
    return fixed_zip_times(schema_order(buffer.getvalue()), stamp)
