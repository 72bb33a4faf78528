"""A Word document's list numbers ("1.", "a)", "iv.", "2.3.", "•"), which Word draws from its numbering
definitions (numbering.xml) rather than from the text: without them "step 3" or "item b)" would be nowhere in the
text read. Each numbered paragraph gets its number written before its text, in the document tree python-docx
built, so that the text is read with it.

A paragraph is numbered by its own numbering properties or by its style's (List Number). Numbers count per list
(an abstract numbering definition, which every numbering instance pointing to it continues) and per level; an item
restarts the levels below its own, and an instance overriding a level's start restarts that level where it is
first used (as Word's "Restart at 1" and the lists pandoc writes do). Bullets read as "•". Numbering that cannot be
read costs the numbers, not the document."""

from __future__ import annotations

import dataclasses
import logging

from docx.document import Document as WordDocument
from docx.opc.constants import RELATIONSHIP_TYPE
from docx.opc.part import XmlPart
from docx.oxml import OxmlElement, parse_xml
from docx.oxml.ns import qn
from docx.oxml.xmlchemy import BaseOxmlElement

# The highest number a list may start at in Word.
_MAX_START = 32767

log = logging.getLogger(__name__)

_W_P, _W_T, _W_VAL = qn("w:p"), qn("w:t"), qn("w:val")
_W_NUM_PR = f"{qn('w:pPr')}/{qn('w:numPr')}"
_W_STYLE = f"{qn('w:pPr')}/{qn('w:pStyle')}"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_LEVEL_PLACEHOLDERS = tuple(f"%{level}" for level in range(1, 10))
_ROMAN_NUMERALS = ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"),
                   (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"))


@dataclasses.dataclass(frozen=True)
class _Level:
    start: int
    number_format: str
    text: str  # "%1.", "%1.%2)", or a bullet's character
    legal: bool  # every number of the label in decimal ("1.1" under a list of "I.")


@dataclasses.dataclass(frozen=True)
class _Instance:
    abstract: str
    levels: dict[int, _Level]
    starts: dict[int, int]  # levels restarted where the instance is first used


def number_lists(document: WordDocument) -> None:
    """Write each numbered paragraph's number before its text, in the document's body (tables and text boxes too)."""
    part = next(
        (rel.target_part for rel in document.part.rels.values() if rel.reltype == RELATIONSHIP_TYPE.NUMBERING), None
    )
    if part is None:
        return
    try:
        labels = _labels(document, part.element if isinstance(part, XmlPart) else parse_xml(part.blob))
    except Exception:  # lxml and int() raise many types for damaged numbering definitions
        log.warning("list numbering could not be read; the document is read without its numbers", exc_info=True)
        return
    for paragraph, label in labels:
        _write_label(paragraph, label)


def roman(number: int) -> str:
    """Lowercase Roman numerals (Word's lowerRoman, and its default numbering of endnotes)."""
    numerals = []
    for value, numeral in _ROMAN_NUMERALS:
        count, number = divmod(number, value)
        numerals.append(numeral * count)
    return "".join(numerals)


def _labels(document: WordDocument, numbering: BaseOxmlElement) -> list[tuple[BaseOxmlElement, str]]:
    styles = _style_numbering(document)
    instances = _instances(numbering, styles)
    body = document.element.body
    # Word writes a text box twice, as a drawing and as a fallback picture; the text read is the drawing's.
    fallbacks = {paragraph for fallback in body.iter(_MC_FALLBACK) for paragraph in fallback.iter(_W_P)}
    counters: dict[str, dict[int, int]] = {}
    used: set[str] = set()
    labels = []
    for paragraph in body.iter(_W_P):
        if paragraph in fallbacks or (numbered := _numbering(paragraph, styles)) is None:
            continue
        instance_id, level = numbered
        instance = instances.get(instance_id)
        if instance is None or level not in instance.levels:
            continue
        counts = counters.setdefault(instance.abstract, {})
        if instance_id not in used:
            used.add(instance_id)
            for restarted, start in instance.starts.items():
                counts[restarted] = start - 1
                _restart_below(counts, restarted)
        counts[level] = counts.get(level, instance.levels[level].start - 1) + 1
        _restart_below(counts, level)
        if label := _label(instance, level, counts):
            labels.append((paragraph, label))
    return labels


def _restart_below(counts: dict[int, int], level: int) -> None:
    for deeper in [deeper for deeper in counts if deeper > level]:
        del counts[deeper]


def _style_numbering(document: WordDocument) -> dict[str, tuple[str | None, str | None]]:
    """Each paragraph style's numbering instance and level, its own or those of the style it is based on."""
    own: dict[str, tuple[str | None, str | None, str | None]] = {}
    for style in document.styles.element.iterchildren(qn("w:style")):
        number = style.find(_W_NUM_PR)
        based_on = style.find(qn("w:basedOn"))
        own[style.get(qn("w:styleId"))] = (
            _value(number, "w:numId"), _value(number, "w:ilvl"), None if based_on is None else based_on.get(_W_VAL)
        )
    resolved = {}
    for style_id in own:
        instance = level = None
        seen = set()
        current: str | None = style_id
        while current in own and current not in seen and (instance is None or level is None):
            seen.add(current)
            own_instance, own_level, current = own[current]
            instance, level = instance or own_instance, level or own_level
        resolved[style_id] = (instance, level)
    return resolved


def _instances(numbering: BaseOxmlElement, styles: dict[str, tuple[str | None, str | None]]) -> dict[str, _Instance]:
    abstracts = {
        abstract.get(qn("w:abstractNumId")): abstract for abstract in numbering.iterchildren(qn("w:abstractNum"))
    }
    instance_abstracts = {
        num.get(qn("w:numId")): _value(num, "w:abstractNumId") for num in numbering.iterchildren(qn("w:num"))
    }

    def definition(abstract_id: str | None) -> tuple[str | None, BaseOxmlElement | None]:
        """The abstract definition, or the one its numbering style links to (a list style's)."""
        abstract = abstracts.get(abstract_id)
        link = None if abstract is None else _value(abstract, "w:numStyleLink")
        if link is not None:
            abstract_id = instance_abstracts.get(styles.get(link, (None, None))[0])
            abstract = abstracts.get(abstract_id)
        return abstract_id, abstract

    instances = {}
    for num in numbering.iterchildren(qn("w:num")):
        abstract_id, abstract = definition(_value(num, "w:abstractNumId"))
        if abstract is None:
            continue
        levels = {int(lvl.get(qn("w:ilvl"), "0")): _level(lvl) for lvl in abstract.iterchildren(qn("w:lvl"))}
        starts = {}
        for override in num.iterchildren(qn("w:lvlOverride")):
            level = int(override.get(qn("w:ilvl"), "0"))
            if (lvl := override.find(qn("w:lvl"))) is not None:
                levels[level] = _level(lvl)
            if (start := _value(override, "w:startOverride")) is not None:
                starts[level] = _bounded_start(start)
        instances[num.get(qn("w:numId"))] = _Instance(abstract_id, levels, starts)
    return instances


def _level(lvl: BaseOxmlElement) -> _Level:
    legal = lvl.find(qn("w:isLgl"))
    return _Level(
        start=_bounded_start(_value(lvl, "w:start") or "0"),
        number_format=_value(lvl, "w:numFmt") or "decimal",
        text=_value(lvl, "w:lvlText") or "",
        legal=legal is not None and legal.get(_W_VAL, "true") not in ("0", "false", "off"),
    )


def _bounded_start(value: str) -> int:
    # Word's own bounds: a damaged or hostile start ("2000000") would otherwise write each letter numeral
    # ("bbbb…") as many times as it counts.
    return min(max(int(value), 0), _MAX_START)


def _numbering(paragraph: BaseOxmlElement, styles: dict[str, tuple[str | None, str | None]]) -> tuple[str, int] | None:
    """The paragraph's numbering instance and level, from its own properties or its style's; None when it has
    none (or numbering instance 0, which takes its style's away)."""
    own = paragraph.find(_W_NUM_PR)
    style = paragraph.find(_W_STYLE)
    style_instance, style_level = styles.get(style.get(_W_VAL), (None, None)) if style is not None else (None, None)
    instance = _value(own, "w:numId") or style_instance
    if instance is None or instance == "0":
        return None
    return instance, int(_value(own, "w:ilvl") or style_level or 0)


def _label(instance: _Instance, level: int, counts: dict[int, int]) -> str:
    definition = instance.levels[level]
    if definition.number_format == "bullet":
        return "•"
    if definition.number_format == "none":
        return ""
    label = definition.text
    for index, placeholder in enumerate(_LEVEL_PLACEHOLDERS):
        if placeholder in label:
            shown = instance.levels.get(index)
            count = counts.get(index, shown.start if shown else 1)
            number_format = "decimal" if definition.legal or shown is None else shown.number_format
            label = label.replace(placeholder, _formatted(count, number_format))
    return label.strip()


def _formatted(count: int, number_format: str) -> str:
    if number_format in ("lowerLetter", "upperLetter"):
        letters = chr(ord("a") + (count - 1) % 26) * ((count - 1) // 26 + 1) if count > 0 else ""
        return letters.upper() if number_format == "upperLetter" else letters
    if number_format in ("lowerRoman", "upperRoman"):
        numerals = roman(count)
        return numerals.upper() if number_format == "upperRoman" else numerals
    if number_format == "decimalZero":
        return f"{count:02d}"
    return str(count)  # decimal, and the formats of other scripts, which a reader still understands so


def _write_label(paragraph: BaseOxmlElement, label: str) -> None:
    """Put the label before the paragraph's first text (after a page break Word laid out before it, so the label
    stays on the item's page). A paragraph without text keeps its number to itself."""
    first_text = next(iter(paragraph.xpath("(./w:r | ./*/w:r | ./*/*/w:r)/w:t")), None)
    if first_text is None:
        return
    text = OxmlElement("w:t")
    text.text = f"{label} "
    text.set("{http://www.w3.org/XML/1998/namespace}space", "preserve")
    first_text.addprevious(text)


def _value(element: BaseOxmlElement | None, child: str) -> str | None:
    """The w:val of ``element``'s ``child``, if both are there."""
    found = None if element is None else element.find(qn(child))
    return None if found is None else found.get(_W_VAL)
