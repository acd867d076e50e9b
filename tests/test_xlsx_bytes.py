"""Workbook bytes without clocks: the stamp comes from the inputs, never from the time of day."""

from __future__ import annotations

import datetime as dt
import io
import zipfile

from openpyxl import Workbook, load_workbook

from solver.outputs.xlsx_bytes import DEFAULT_STAMP, fixed_zip_times, stamp_of, workbook_bytes


def test_stamp_is_the_latest_as_of_else_the_default() -> None:
    assert stamp_of("2026-03-01") == dt.datetime(2026, 3, 1)
    assert stamp_of("2026-03-01", None, "2026-08-01") == dt.datetime(2026, 8, 1)
    assert stamp_of() == stamp_of(None) == DEFAULT_STAMP == dt.datetime(2000, 1, 1)
    assert stamp_of("next tuesday") == DEFAULT_STAMP  # the loader reports a bad date, not us


def test_fixed_zip_times_keeps_the_content_and_dates_every_entry() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("a.xml", "<a/>" * 100)  # dated now by zipfile
        z.writestr(zipfile.ZipInfo("b.bin", date_time=(2024, 5, 6, 7, 8, 10)), b"\x00\x01")
    fixed = fixed_zip_times(buffer.getvalue(), dt.datetime(2026, 3, 1, 12, 30))
    with zipfile.ZipFile(io.BytesIO(fixed)) as z:
        assert z.namelist() == ["a.xml", "b.bin"]
        assert z.read("a.xml") == b"<a/>" * 100 and z.read("b.bin") == b"\x00\x01"
        assert [i.date_time for i in z.infolist()] == [(2026, 3, 1, 12, 30, 0)] * 2
        assert z.getinfo("a.xml").compress_type == zipfile.ZIP_DEFLATED


def test_a_stamp_before_1980_is_clamped_for_the_zip() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("a", "x")
    fixed = fixed_zip_times(buffer.getvalue(), dt.datetime(1970, 1, 1))
    with zipfile.ZipFile(io.BytesIO(fixed)) as z:
        assert z.getinfo("a").date_time == (1980, 1, 1, 0, 0, 0)


def test_workbooks_made_at_different_times_give_the_same_bytes() -> None:
    def make(created: dt.datetime) -> bytes:
        wb = Workbook()
        wb.properties.created = created  # what Workbook() does with the time of day
        ws = wb.active
        assert ws is not None
        ws["A1"] = "same content"
        return workbook_bytes(wb, dt.datetime(2026, 3, 1))

    first = make(dt.datetime(2026, 11, 29, 11, 0, 0))
    assert first == make(dt.datetime(2031, 1, 2, 3, 4, 5))
    props = load_workbook(io.BytesIO(first)).properties
    assert props.created == props.modified == dt.datetime(2026, 3, 1)
