"""Spreadsheet number formats rendered as the spreadsheet shows them (loaders/number_format.py)."""

from __future__ import annotations

import datetime

import pytest

from backend.ingest.loaders.number_format import displayed

ACCOUNTING_EUROS = '_-* #,##0.00\\ "€"_-;\\-* #,##0.00\\ "€"_-;_-* "-"??\\ "€"_-;_-@_-'


@pytest.mark.parametrize(
    ("value", "number_format", "shown"),
    [
        (1234.5, "#,##0.00", "1,234.50"),
        (-1234.5, "#,##0.00", "-1,234.50"),
        (-3, "0;(0)", "(3)"),
        (-3, "0;[Red](0)", "(3)"),
        (-350.25, "#,##0.00;[Red]#,##0.00", "-350.25"),  # red alone marks it negative: the minus stands in
        (-350.25, '"$"#,##0.00;[Red]"$"#,##0.00', "-$350.25"),
        (-350.25, "#,##0.00;[Red]-#,##0.00", "-350.25"),
        (-3, "0;0", "3"),  # a negative section without a sign or a colour shows none, as the sheet does
        (0, '0;(0);"none"', "none"),
        (1234.5, ACCOUNTING_EUROS, "1,234.50 €"),
        (-5, ACCOUNTING_EUROS, "-5.00 €"),
        (1234.5, "[$€-407] #,##0.00", "€ 1,234.50"),
        (2.675, "0.00", "2.68"),  # half away from zero, on the decimal the cell shows
        (0.5, "#.00", ".50"),
        (7, "000", "007"),
        (5.25, "0.0#", "5.25"),
        (5.2, "0.0#", "5.2"),
        (0.125, "0%", "13%"),
        (1_234_567, '#,##0,"K"', "1,235K"),
        (1e12, "0.00E+00", "1.00E+12"),
        (0.000123, "0.00E+00", "1.23E-04"),
        (123456, "##0.0E+0", "123.5E+3"),
        (45000, "yyyy-mm-dd", "2023-03-15"),  # a serial number under a date format
        (45000.75, "dddd, d mmm yyyy hh:mm", "Wednesday, 15 Mar 2023 18:00"),
        (datetime.date(2023, 1, 5), "mmm-yy", "Jan-23"),
        (datetime.datetime(2023, 1, 5, 9, 30), "m/d/yy h:mm", "2023-01-05 09:30"),  # the system's short date
        (datetime.time(14, 5, 7, 600_000), "h:mm:ss", "14:05:08"),
        (datetime.time(14, 5, 7, 600_000), "mm:ss.0", "05:07.6"),
        (datetime.time(0, 30), "h:mm AM/PM", "12:30 AM"),
        (datetime.timedelta(hours=30, minutes=5), "[h]:mm", "30:05"),
    ],
)
def test_values_read_as_their_format_shows_them(value: object, number_format: str, shown: str) -> None:
    assert displayed(value, number_format) == shown


@pytest.mark.parametrize(
    ("value", "number_format"),
    [(12, "General"), (0.75, "# ?/?"), (150, "[>=100]0;0"), ("text", "0.00"), (True, "0"), (None, "0.00"),
     (datetime.date(2023, 1, 1), "0.00")],
)
def test_values_a_format_shows_as_stored_or_does_not_cover_are_left_to_the_caller(
    value: object, number_format: str
) -> None:
    assert displayed(value, number_format) is None
