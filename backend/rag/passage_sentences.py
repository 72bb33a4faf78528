"""The sentences of a document's passage as the answerability decision reads them.

Prose ends its sentences with a full stop; text that is not prose ends them with a line break. A table row, a
list item after a dash or "(1)" / "a.", a line of a form's layout end at the end of their line, so read as
prose a block of rows or items is one long "sentence" that holds every row's words and numbers and is close in
meaning to nothing (issue 11, test2: the WARN report's rows, the Redpaper's dashed list, the IRS manual's
numbered paragraphs). PDF text is also hard-wrapped mid-sentence, so a line break alone ends nothing; it ends
a sentence only where the next line opens a list item, or opens with a number (a row's date, a line's
position) after a line that does not read as wrapped prose (its last word is not lower case and it does not
end in a comma or hyphen).
"""

from __future__ import annotations

import re

from backend.rag.grounding import split_sentences

# A line opening a list item: a bullet or dash, "(1)", "(a)", "1.", "1)", "a.", "a)".
_LIST_ITEM = re.compile(r"^\s*(?:[-–—•*▪◦●○■□]+\s|\(\d{1,2}\)\s|\([a-z]\)\s|\d{1,2}[.)]\s|[a-z][.)]\s)")
_OPENS_WITH_NUMBER = re.compile(r"^\s*\(?\d")
# Wrapped prose: the line stops mid-sentence, on a lower-case word, a comma or a hyphen.
_WRAPPED = re.compile(r"(?:\b[a-z][\w'’]*|[,;-])\s*$")


def passage_sentences(text: str) -> list[str]:
    """The sentences of a passage: its prose's, and each row, item or layout line of its line-structured
    text."""
    blocks: list[list[str]] = []
    for line in text.split("\n"):
        if blocks and not _ends_at_line(blocks[-1][-1], line):
            blocks[-1].append(line)
        else:
            blocks.append([line])
    return [sentence for block in blocks for sentence in split_sentences("\n".join(block))]


def _ends_at_line(line: str, next_line: str) -> bool:
    """Whether the text ends a sentence between ``line`` and ``next_line``."""
    if _LIST_ITEM.match(next_line):
        return True
    return bool(_OPENS_WITH_NUMBER.match(next_line)) and bool(line.strip()) and not _WRAPPED.search(line)
