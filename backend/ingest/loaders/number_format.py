"""A spreadsheet cell's value as the spreadsheet shows it, rendered by the cell's number format (ECMA-376 Part 1,
§18.8.31): "$1,234.50" not 1234.5, "15-Mar-23" not 2023-03-15 00:00:00, "12.5%" not 0.125. A question quotes what
its asker saw. No library on PyPI renders these codes reliably (the ports tried got currencies, 12-hour times and
quoted text wrong), so the common parts are covered here: sections for positive, negative and zero numbers, digit
placeholders, thousands separators and scaling, percentages, scientific notation, quoted and escaped text,
currency symbols ([$€-407]), dates, times and elapsed times. A format using what is not covered (fractions,
conditions, calendars) gives None, and the stored value is read instead.

The built-in short date formats (ids 14 and 22) show the date as the reader's system settings say (3/15/2023 in
the US, 15/03/2023 in the UK): they are read as ISO dates, which no reader misreads. Scripts (openpyxl, pandas)
give every date and time they write one format showing the time: a date there reads without its "0:00:00"."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import functools
import math
import re
from collections.abc import Sequence

from openpyxl.styles.numbers import BUILTIN_FORMATS
from openpyxl.utils.datetime import from_excel

_SYSTEM_SHORT_DATE, _SYSTEM_SHORT_DATE_TIME = BUILTIN_FORMATS[14], BUILTIN_FORMATS[22]
_SCRIPTS_DATE_TIME = ("yyyy-mm-dd h:mm:ss", "yyyy-mm-dd hh:mm:ss")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# One token of a format section: quoted text, an escaped character, padding (_x) and fill (*x) characters,
# a bracketed code, a run of one date or time letter, AM/PM, scientific notation, or any one character.
_TOKEN = re.compile(
    r'"(?P<quoted>[^"]*)"?|\\(?P<escaped>.)|[_*](?P<spacing>.)|\[(?P<bracket>[^\]]*)\]'
    r"|(?P<date>(?i:y+|m+|d+|h+|s+|e+(?![+-])|am/pm|a/p))|(?P<exponent>[Ee][+-])|(?P<char>.)",
    re.DOTALL,
)
_DIGITS = frozenset("0#?")
_ELAPSED = re.compile(r"(?i)(h+|m+|s+)")
_COLOR = re.compile(r"(?i)(black|blue|cyan|green|magenta|red|white|yellow|color\s*\d+)")


class _Unsupported(Exception):
    """A part of a number format this module does not render."""


def displayed(value: object, number_format: str | None) -> str | None:
    """``value`` (a number, or the date, time or duration openpyxl made of one) as ``number_format`` shows it;
    None for a value that is neither, and for a format that shows it as stored (General) or is not covered."""
    if isinstance(value, bool) or not isinstance(value, (int, float, datetime.date, datetime.time,
                                                         datetime.timedelta)):
        return None
    number_format = number_format or "General"
    if isinstance(value, datetime.date):
        if number_format in (_SYSTEM_SHORT_DATE, _SYSTEM_SHORT_DATE_TIME):
            return _iso(value, with_time=number_format == _SYSTEM_SHORT_DATE_TIME)
        if number_format.lower() in _SCRIPTS_DATE_TIME and _is_midnight(value):
            return _iso(value, with_time=False)
    try:
        return _rendered(value, number_format)
    except (_Unsupported, ValueError, OverflowError, decimal.InvalidOperation):
        return None


def _iso(value: datetime.date, with_time: bool) -> str:
    if isinstance(value, datetime.datetime) and with_time:
        return value.isoformat(sep=" ", timespec="minutes")
    return value.isoformat()[:10]


def _is_midnight(value: datetime.date) -> bool:
    return not isinstance(value, datetime.datetime) or value.time() == datetime.time()


def _rendered(value: object, number_format: str) -> str | None:
    sections = _sections(number_format)
    number = value if isinstance(value, (int, float)) else None
    signed = number is not None and number < 0
    section = sections[0]
    if signed and len(sections) > 1:
        section = sections[1]  # the negative section shows its own sign ("-", parentheses), if any, …
        signed = _marked_by_colour_alone(section)  # … or its colour, which text cannot carry: a "-" stands in
    elif number == 0 and len(sections) > 2:
        section = sections[2]
    layout = _layout(section)
    if layout is None:
        return f"{value:.15g}" if isinstance(value, float) else None  # 15 digits: Excel's, without float noise
    if isinstance(layout, _DateLayout):
        return layout.text(value).strip()
    if number is None:
        return None  # a date shown by a format for numbers: read as stored
    return ("-" if signed else "") + layout.text(abs(number)).strip()


def _marked_by_colour_alone(section: str) -> bool:
    """Whether a negative section marks the number as negative only by a colour ("0.00;[Red]0.00", one of Excel's
    own choices for negative numbers): read as text, a loss would read as a gain."""
    shows_sign = any(kind == "literal" and ("-" in text or "(" in text) for kind, text in _tokens(section))
    colours = (token["bracket"] for token in _TOKEN.finditer(section) if token["bracket"] is not None)
    return not shows_sign and any(_COLOR.fullmatch(colour) for colour in colours)


@functools.lru_cache(maxsize=256)  # a sheet has few formats and many cells
def _sections(number_format: str) -> tuple[str, ...]:
    """The format's sections, split at the semicolons outside quotes, escapes and brackets."""
    sections, start = [], 0
    for token in _TOKEN.finditer(number_format):
        if token["char"] == ";":
            sections.append(number_format[start:token.start()])
            start = token.end()
    sections.append(number_format[start:])
    return tuple(sections)


@functools.lru_cache(maxsize=256)
def _tokens(section: str) -> tuple[tuple[str, str], ...]:
    """The section's tokens as (kind, text): "literal", "digit", "point", "comma", "percent", "exponent", "date",
    "elapsed", "general"; padding, fill and colours show nothing that can be read, and are left out."""
    if section.strip().lower() == "general":
        return (("general", section),)
    tokens = []
    for token in _TOKEN.finditer(section):
        if token["quoted"] is not None:
            tokens.append(("literal", token["quoted"]))
        elif token["escaped"] is not None:
            tokens.append(("literal", token["escaped"]))
        elif token["bracket"] is not None:
            tokens.extend(_bracket_tokens(token["bracket"]))
        elif token["date"] is not None:
            tokens.append(("date", token["date"].lower()))
        elif token["exponent"] is not None:
            tokens.append(("exponent", token["exponent"][1]))
        elif (char := token["char"]) is not None:
            tokens.append(_character_token(char))
    return tuple(tokens)


def _bracket_tokens(code: str) -> list[tuple[str, str]]:
    if code.startswith("$"):  # a currency and locale: [$€-407]; [$-409] is a locale alone
        symbol = code[1:].partition("-")[0]
        return [("literal", symbol)] if symbol else []
    if _ELAPSED.fullmatch(code):
        return [("elapsed", code.lower())]
    if _COLOR.fullmatch(code):
        return []
    raise _Unsupported(code)  # a condition ([>=100]) or a calendar


def _character_token(char: str) -> tuple[str, str]:
    if char in _DIGITS:
        return "digit", char
    if char in ".,%":
        return {".": "point", ",": "comma", "%": "percent"}[char], char
    if char == "/":
        return "slash", char  # a date's separator, or a fraction's
    if char == "@" or char.isalpha():
        raise _Unsupported(char)  # a text placeholder, a letter Excel would refuse unquoted
    return "literal", char


@functools.lru_cache(maxsize=256)  # a sheet has few formats and many cells
def _layout(section: str) -> _NumberLayout | _DateLayout | None:
    """How the section lays a value out; None for General (and an empty section)."""
    tokens = _tokens(section)
    if not tokens or any(kind == "general" for kind, _ in tokens):
        return None
    if any(kind in ("date", "elapsed") for kind, _ in tokens):
        return _DateLayout.of(tokens)
    return _NumberLayout.of(tokens)


@dataclasses.dataclass(frozen=True)
class _NumberLayout:
    prefix: str
    suffix: str
    scale: float  # 100 for each percent sign, 1/1000 for each comma that is no thousands separator
    integer_zeros: int  # the integer digits always shown ("000" shows 7 as 007)
    integer_digits: int
    engineering: bool  # "##0.0E+0": the exponent a multiple of the integer digits' count
    fraction_digits: int
    fraction_zeros: int  # the decimals always shown; those past them only when they are not zero
    grouped: bool
    has_point: bool
    exponent: tuple[str, int] | None  # its sign shown for positive exponents ("+" or ""), and its digits

    @classmethod
    def of(cls, tokens: Sequence[tuple[str, str]]) -> _NumberLayout:
        if any(kind == "slash" for kind, _ in tokens):
            raise _Unsupported("a fraction")
        placed = [index for index, (kind, _) in enumerate(tokens) if kind in ("digit", "point", "exponent")]
        first, last = (placed[0], placed[-1]) if placed else (len(tokens), len(tokens) - 1)
        inside = tokens[first:last + 1]
        if any(kind == "literal" for kind, _ in inside):
            raise _Unsupported("text between digits")
        exponent_at = next((index for index, (kind, _) in enumerate(inside) if kind == "exponent"), len(inside))
        mantissa, exponent = inside[:exponent_at], inside[exponent_at:]
        point_at = next((index for index, (kind, _) in enumerate(mantissa) if kind == "point"), len(mantissa))
        integer, fraction = mantissa[:point_at], mantissa[point_at:]
        integer_digits = [text for kind, text in integer if kind == "digit"]
        fraction_digits = [text for kind, text in fraction if kind == "digit"]
        # A comma between digits groups thousands; any other divides by a thousand ("0.0,," shows millions).
        digits_at = [index for index, (kind, _) in enumerate(integer) if kind == "digit"]
        grouping = sum(kind == "comma" for kind, _ in integer[digits_at[0]:digits_at[-1]]) if digits_at else 0
        commas = sum(kind == "comma" for kind, _ in tokens)
        return cls(
            prefix="".join(text for kind, text in tokens[:first] if kind in ("literal", "percent")),
            suffix="".join(text for kind, text in tokens[last + 1:] if kind in ("literal", "percent")),
            scale=100 ** sum(kind == "percent" for kind, _ in tokens) / 1000 ** (commas - grouping),
            integer_zeros=integer_digits.count("0"),
            integer_digits=len(integer_digits),
            engineering="#" in integer_digits and len(integer_digits) > 1,
            fraction_digits=len(fraction_digits),
            fraction_zeros=max((index + 1 for index, digit in enumerate(fraction_digits) if digit == "0"), default=0),
            grouped=grouping > 0,
            has_point=bool(fraction),
            exponent=(exponent[0][1], sum(kind == "digit" for kind, _ in exponent)) if exponent else None,
        )

    def text(self, number: float) -> str:
        number *= self.scale
        shown = self._scientific(number) if self.exponent else self._fixed(number, self.integer_zeros, self.grouped)
        return self.prefix + shown + self.suffix

    def _fixed(self, number: float, integer_zeros: int, grouped: bool) -> str:
        rounded = decimal.Decimal(repr(float(number))).quantize(
            decimal.Decimal(1).scaleb(-self.fraction_digits), rounding=decimal.ROUND_HALF_UP
        )
        whole, _, decimals = f"{rounded:f}".partition(".")
        whole = whole.lstrip("0").rjust(integer_zeros, "0")
        if grouped and whole:
            whole = f"{int(whole):,}"
        decimals = decimals[:self.fraction_zeros] + decimals[self.fraction_zeros:].rstrip("0")
        return whole + ("." + decimals if self.has_point else "")

    def _scientific(self, number: float) -> str:
        assert self.exponent is not None
        step = self.integer_digits if self.engineering else 1
        power = math.floor(math.log10(number)) if number else 0
        power -= power % step
        mantissa = self._fixed(number / 10**power, 1, grouped=False)
        if step == 1 and float(mantissa) >= 10:  # 9.996 shown as 10.00E+0 is 1.00E+1
            power += 1
            mantissa = self._fixed(number / 10**power, 1, grouped=False)
        positive_sign, width = self.exponent
        return f"{mantissa}E{'-' if power < 0 else positive_sign}{abs(power):0{width}d}"


@dataclasses.dataclass(frozen=True)
class _DateLayout:
    parts: tuple[tuple[str, str], ...]  # ("text", …), ("date", code), ("minute", code), ("elapsed", code)
    twelve_hour: bool
    fraction_digits: int  # of a second (ss.00)

    @classmethod
    def of(cls, tokens: Sequence[tuple[str, str]]) -> _DateLayout:
        codes = [index for index, (kind, _) in enumerate(tokens) if kind in ("date", "elapsed")]
        parts: list[tuple[str, str]] = []
        fraction_digits = 0
        for order, index in enumerate(codes):
            kind, code = tokens[index]
            # An "m" right after hours or right before seconds is minutes, any other a month.
            before = tokens[codes[order - 1]][1] if order else ""
            after = tokens[codes[order + 1]][1] if order + 1 < len(codes) else ""
            if kind == "date" and code[0] == "m" and (before.startswith("h") or after.startswith("s")):
                kind = "minute"
            parts.append((kind, code))
            following = tokens[index + 1:codes[order + 1] if order + 1 < len(codes) else len(tokens)]
            if code[0] == "s" and following and following[0][0] == "point":  # ss.00: hundredths of a second
                fraction_digits = next(
                    (count for count, (k, _) in enumerate(following[1:]) if k != "digit"), len(following) - 1
                )
                parts.append(("fraction", ""))
                following = following[1 + fraction_digits:]
            parts.extend(("text", text) for kind, text in following if kind != "digit")
        leading = [("text", text) for kind, text in tokens[:codes[0]] if kind != "digit"]
        twelve_hour = any(code in ("am/pm", "a/p") for kind, code in parts if kind == "date")
        return cls(tuple(leading + parts), twelve_hour, fraction_digits)

    def text(self, value: object) -> str:
        moment, elapsed = _moment(value)
        if not self.fraction_digits:  # shown to the second, a time is rounded to it
            elapsed = round(elapsed)
            moment = moment.replace(microsecond=0) + datetime.timedelta(seconds=moment.microsecond >= 500_000)
        shown = []
        for kind, code in self.parts:
            if kind == "text":
                shown.append(code)
            elif kind == "elapsed":
                shown.append(f"{int(elapsed // {'h': 3600, 'm': 60, 's': 1}[code[0]]):0{len(code)}d}")
            elif kind == "minute":
                shown.append(f"{moment.minute:0{min(len(code), 2)}d}")
            elif kind == "fraction":
                shown.append(f"{moment.microsecond / 1_000_000:.{self.fraction_digits}f}"[1:])
            else:
                shown.append(_date_part(moment, code, self.twelve_hour))
        return "".join(shown)


def _moment(value: object) -> tuple[datetime.datetime, float]:
    """The value as a date and time, and as seconds elapsed (for [h]:mm)."""
    if isinstance(value, datetime.timedelta):
        return datetime.datetime(1899, 12, 30) + value, value.total_seconds()
    if isinstance(value, datetime.datetime):
        moment = value
    elif isinstance(value, datetime.date):
        moment = datetime.datetime.combine(value, datetime.time())
    elif isinstance(value, datetime.time):
        moment = datetime.datetime.combine(datetime.date(1899, 12, 30), value)
    else:
        if not 0 <= value < 2958466:  # 9999-12-31: the last day Excel shows
            raise _Unsupported("a number that is no date")
        moment = from_excel(value)
        if isinstance(moment, datetime.time):
            moment = datetime.datetime.combine(datetime.date(1899, 12, 30), moment)
        return moment, value * 86400
    return moment, (moment - datetime.datetime(1899, 12, 30)).total_seconds()


def _date_part(moment: datetime.datetime, code: str, twelve_hour: bool) -> str:
    letter, width = code[0], len(code)
    if code in ("am/pm", "a/p"):
        marker = "AM" if moment.hour < 12 else "PM"
        return marker if code == "am/pm" else marker[0]
    if letter in "ye":
        return str(moment.year) if width > 2 or letter == "e" else f"{moment.year % 100:02d}"
    if letter == "m":
        name = _MONTHS[moment.month - 1]
        return {1: str(moment.month), 2: f"{moment.month:02d}", 3: name[:3], 5: name[0]}.get(width, name)
    if letter == "d":
        name = _WEEKDAYS[moment.weekday()]
        return {1: str(moment.day), 2: f"{moment.day:02d}", 3: name[:3]}.get(width, name)
    if letter == "h":
        hour = (moment.hour % 12 or 12) if twelve_hour else moment.hour
        return f"{hour:0{min(width, 2)}d}"
    return f"{moment.second:0{min(width, 2)}d}"
