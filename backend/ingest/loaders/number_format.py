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

import datetime
import decimal
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
        section, signed = sections[1], False  # the negative section shows its own sign, if any
    elif number == 0 and len(sections) > 2:
        section = sections[2]
    tokens = _tokens(section)
    if not tokens or any(kind == "general" for kind, _ in tokens):
        return f"{value:.15g}" if isinstance(value, float) else None  # 15 digits: Excel's, without float noise
    if any(kind in ("date", "elapsed") for kind, _ in tokens):
        return _date_text(value, tokens).strip()
    if number is None:
        return None  # a date shown by a format for numbers: read as stored
    return ("-" if signed else "") + _number_text(abs(number), tokens).strip()


def _sections(number_format: str) -> list[str]:
    """The format's sections, split at the semicolons outside quotes, escapes and brackets."""
    sections, start = [], 0
    for token in _TOKEN.finditer(number_format):
        if token["char"] == ";":
            sections.append(number_format[start:token.start()])
            start = token.end()
    sections.append(number_format[start:])
    return sections


def _tokens(section: str) -> list[tuple[str, str]]:
    """The section's tokens as (kind, text): "literal", "digit", "point", "comma", "percent", "exponent", "date",
    "elapsed", "general"; padding, fill and colours show nothing that can be read, and are left out."""
    if section.strip().lower() == "general":
        return [("general", section)]
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
    return tokens


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


def _number_text(number: float, tokens: Sequence[tuple[str, str]]) -> str:
    placed = [index for index, (kind, _) in enumerate(tokens) if kind in ("digit", "point", "exponent")]
    if not placed:
        return "".join(text for kind, text in tokens if kind in ("literal", "percent"))
    first, last = placed[0], placed[-1]
    inside = tokens[first:last + 1]
    if any(kind == "literal" for kind, _ in inside) or any(kind == "slash" for kind, _ in tokens):
        raise _Unsupported("a fraction or text between digits")
    prefix = "".join(text for kind, text in tokens[:first] if kind in ("literal", "percent"))
    suffix = "".join(text for kind, text in tokens[last + 1:] if kind in ("literal", "percent"))
    number *= 100 ** sum(kind == "percent" for kind, _ in tokens)
    exponent_at = next((index for index, (kind, _) in enumerate(inside) if kind == "exponent"), len(inside))
    mantissa, exponent = inside[:exponent_at], inside[exponent_at:]
    point_at = next((index for index, (kind, _) in enumerate(mantissa) if kind == "point"), len(mantissa))
    integer, fraction = mantissa[:point_at], mantissa[point_at:]
    integer_digits = [text for kind, text in integer if kind == "digit"]
    fraction_digits = [text for kind, text in fraction if kind == "digit"]
    # A comma between digits groups thousands; any other divides by a thousand ("0.0,," shows millions).
    digits_at = [index for index, (kind, _) in enumerate(integer) if kind == "digit"]
    grouping = sum(kind == "comma" for kind, _ in integer[digits_at[0]:digits_at[-1]]) if digits_at else 0
    number /= 1000 ** (sum(kind == "comma" for kind, _ in tokens) - grouping)
    if exponent:
        text = _scientific(number, integer_digits, fraction_digits, exponent)
    else:
        text = _fixed(number, integer_digits, fraction_digits, grouping > 0, has_point=bool(fraction))
    return prefix + text + suffix


def _fixed(number: float, integer_digits: list[str], fraction_digits: list[str], grouped: bool,
           has_point: bool) -> str:
    rounded = decimal.Decimal(repr(float(number))).quantize(
        decimal.Decimal(1).scaleb(-len(fraction_digits)), rounding=decimal.ROUND_HALF_UP
    )
    whole, _, decimals = f"{rounded:f}".partition(".")
    whole = whole.lstrip("0").rjust(integer_digits.count("0"), "0")
    if grouped:
        whole = f"{int(whole):,}" if whole else ""
    # Decimals past the last "0" placeholder show only when they are not zero.
    required = max((index + 1 for index, digit in enumerate(fraction_digits) if digit == "0"), default=0)
    decimals = decimals[:required] + decimals[required:].rstrip("0")
    return whole + ("." + decimals if has_point else "")


def _scientific(number: float, integer_digits: list[str], fraction_digits: list[str],
                exponent: Sequence[tuple[str, str]]) -> str:
    # "##0.0E+0" is engineering notation: the exponent a multiple of the integer digits' count.
    step = len(integer_digits) if "#" in integer_digits else 1
    power = math.floor(math.log10(number)) if number else 0
    power -= power % step
    mantissa = _fixed(number / 10**power, ["0"], fraction_digits, grouped=False, has_point=bool(fraction_digits))
    if step == 1 and float(mantissa) >= 10:  # 9.996 shown as 10.00E+0 is 1.00E+1
        power += 1
        mantissa = _fixed(number / 10**power, ["0"], fraction_digits, grouped=False, has_point=bool(fraction_digits))
    sign = "-" if power < 0 else ("+" if exponent[0][1] == "+" else "")
    width = sum(kind == "digit" for kind, _ in exponent)
    return f"{mantissa}E{sign}{abs(power):0{width}d}"


def _date_text(value: object, tokens: Sequence[tuple[str, str]]) -> str:
    moment, elapsed = _moment(value)
    twelve_hour = any(kind == "date" and text in ("am/pm", "a/p") for kind, text in tokens)
    show_fraction = _fraction_width(tokens)
    if not show_fraction:  # shown to the second, a time is rounded to it
        elapsed = round(elapsed)
        moment = moment.replace(microsecond=0) + datetime.timedelta(seconds=moment.microsecond >= 500_000)
    parts = []
    for index, (kind, text) in enumerate(tokens):
        if kind == "elapsed":
            unit = {"h": 3600, "m": 60, "s": 1}[text[0]]
            parts.append(f"{int(elapsed // unit):0{len(text)}d}")
        elif kind == "date":
            parts.append(_date_part(moment, text, _is_minute(tokens, index), twelve_hour))
        elif kind in ("literal", "comma", "percent", "slash"):
            parts.append(text)
        elif kind == "point" and show_fraction:
            fraction = f"{moment.microsecond / 1_000_000:.{show_fraction}f}"
            parts.append(fraction[1:])
        elif kind != "digit":
            parts.append(text)
    return "".join(parts)


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


def _fraction_width(tokens: Sequence[tuple[str, str]]) -> int:
    """How many digits of a second the format shows (ss.00): the zeros after a point after the seconds."""
    for index, (kind, text) in enumerate(tokens[:-1]):
        if kind in ("date", "elapsed") and text.lstrip("[")[0] == "s" and tokens[index + 1][0] == "point":
            rest = tokens[index + 2:]
            return next((count for count, (k, _) in enumerate(rest) if k != "digit"), len(rest))
    return 0


def _is_minute(tokens: Sequence[tuple[str, str]], index: int) -> bool:
    """An "m" right after hours or right before seconds is minutes, any other a month."""
    date_parts = [(position, text) for position, (kind, text) in enumerate(tokens) if kind in ("date", "elapsed")]
    at = next(order for order, (position, _) in enumerate(date_parts) if position == index)
    before = date_parts[at - 1][1] if at > 0 else ""
    after = date_parts[at + 1][1] if at + 1 < len(date_parts) else ""
    return before.startswith("h") or after.startswith("s")


def _date_part(moment: datetime.datetime, code: str, is_minute: bool, twelve_hour: bool) -> str:
    letter, width = code[0], len(code)
    if code in ("am/pm", "a/p"):
        marker = "AM" if moment.hour < 12 else "PM"
        return marker if code == "am/pm" else marker[0]
    if letter in "ye":
        return str(moment.year) if width > 2 or letter == "e" else f"{moment.year % 100:02d}"
    if letter == "m" and is_minute:
        return f"{moment.minute:0{min(width, 2)}d}"
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
