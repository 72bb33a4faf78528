"""The bullets Tesseract misreads ("¢", "©", "e" at a line's start) restored as "•", only where they are a list."""

from __future__ import annotations

import pytest

from backend.ingest.loaders.ocr import restore_bullets

# As Tesseract read the shared brochure scan (scanned_linn_two-column_brochure.pdf).
BROCHURE = (
    "32 Track MIDI Sequence Recorder\n"
    "¢ Operation is similar to multi-track tape recorder with PLAY, STOP, RECORD.\n"
    "e Exclusive real-time ERASE function makes editing FAST.\n"
    "© Optional remote control.\n"
    "¢ TEMPO may be entered numerically, adjustable in tenths of a Beat-Per-Minute increments, or by tapping\n"
    "on the TAP TEMPO button.\n"
)


def test_the_misread_bullets_of_a_list_become_bullets():
    assert restore_bullets(BROCHURE) == (
        "32 Track MIDI Sequence Recorder\n"
        "• Operation is similar to multi-track tape recorder with PLAY, STOP, RECORD.\n"
        "• Exclusive real-time ERASE function makes editing FAST.\n"
        "• Optional remote control.\n"
        "• TEMPO may be entered numerically, adjustable in tenths of a Beat-Per-Minute increments, or by tapping\n"
        "on the TAP TEMPO button.\n"
    )


def test_one_misread_bullet_beside_a_real_one_is_a_list_too():
    assert restore_bullets("• Ultra-fast disk drive\n  © Émile's remote control") == (
        "• Ultra-fast disk drive\n• Émile's remote control"
    )


@pytest.mark.parametrize(
    "text",
    [
        "The brochure, printed in 1985.\n© Linn Electronics Inc. All rights reserved.",  # a copyright line
        "Andremo a Milano\ne Roma, poi a Napoli.",  # Italian "and"
        "¢ 50 each\n¢ 75 a pair",  # prices, not items
        "e the lowercase letter\n© but no capital after it",
        "Sales rose e Tempo fell ¢ Optional",  # not at a line's start
        "¢Operation\n©Optional",  # no space after the glyph
    ],
    ids=["copyright", "italian", "digits", "lowercase", "mid-line", "no-space"],
)
def test_text_that_is_not_a_list_is_left_as_it_is(text):
    assert restore_bullets(text) == text
